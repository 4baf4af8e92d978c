"""The tamper window: which frames an effect replaces (MVTamperBench section 3.3).

The paper fixes a 1-second window at the clip's midpoint. A window is
``F = round(duration * fps)`` frames long; the released generator used
``int(fps) * duration`` instead (``official_fps=True`` reproduces it, e.g.
29 frames instead of 30 at 29.97 fps). Start positions follow the released
generator: ``start`` = 0, ``middle`` = ``N // 2 - F // 2``, ``end`` = ``N - F``;
a fraction ``p`` in [0, 1] starts at ``round(p * (N - F))``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from mmrobust.datasets.schema import Window

NamedPosition = Literal["start", "middle", "end"]
Position = NamedPosition | float


class WindowError(ValueError):
    """The window does not fit the clip (too short) or its parameters are invalid."""


def parse_position(value: str | float) -> Position:
    """``"start" | "middle" | "end"`` or a fraction in [0, 1] (also given as a string).

    Raises:
        WindowError: anything else.
    """
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("start", "middle", "end"):
            return v  # type: ignore[return-value]
        try:
            value = float(v)
        except ValueError:
            raise WindowError(
                f"position must be start, middle, end or a fraction in [0, 1], got {value!r}"
            ) from None
    if not 0.0 <= float(value) <= 1.0:
        raise WindowError(f"position fraction must be in [0, 1], got {value}")
    return float(value)


def window_length(fps: Fraction | float, duration: float, *, official_fps: bool = False) -> int:
    """Window length ``F`` in frames for ``duration`` seconds at ``fps``.

    ``round(duration * fps)`` by default; ``int(int(fps) * duration)`` with
    ``official_fps`` (the released generator's truncation).

    Raises:
        WindowError: ``duration`` or ``fps`` not positive, or ``F`` would be 0.
    """
    if duration <= 0:
        raise WindowError(f"duration must be positive, got {duration}")
    if fps <= 0:
        raise WindowError(f"fps must be positive, got {fps}")
    f = int(int(fps) * duration) if official_fps else round(Fraction(fps) * Fraction(duration))
    if f < 1:
        raise WindowError(f"a {duration} s window at {float(fps):g} fps is shorter than one frame")
    return int(f)


def window_start(n_frames: int, length: int, position: Position) -> int:
    """First frame of a ``length``-frame window in an ``n_frames`` clip.

    Raises:
        WindowError: the clip is not longer than the window.
    """
    if n_frames <= length:
        raise WindowError(
            f"clip has {n_frames} frames, not longer than the {length}-frame tamper window"
        )
    if position == "start":
        return 0
    if position == "middle":
        return n_frames // 2 - length // 2
    if position == "end":
        return n_frames - length
    return round(float(position) * (n_frames - length))


def make_window(start: int, end: int, fps: Fraction | float) -> Window:
    """A ``Window`` over frames ``[start, end)`` with seconds ``frame / fps``."""
    f = Fraction(fps)
    return Window(start_frame=start, end_frame=end, start_s=float(start / f), end_s=float(end / f))


def source_window(
    n_frames: int,
    fps: Fraction | float,
    *,
    duration: float = 1.0,
    position: Position = "middle",
    official_fps: bool = False,
) -> Window:
    """The tamper window in the source timeline.

    Args:
        n_frames: frames in the source clip (counted, not from metadata).
        fps: source frame rate.
        duration: window length in seconds (paper: 1 s).
        position: ``start``/``middle``/``end`` or a fraction (paper: middle).
        official_fps: use the released generator's ``int(fps)`` truncation.

    Raises:
        WindowError: the clip is shorter than (or as long as) the window.
    """
    length = window_length(fps, duration, official_fps=official_fps)
    try:
        start = window_start(n_frames, length, position)
    except WindowError as exc:
        raise WindowError(
            f"{exc} ({duration:g} s at {float(fps):.3f} fps; the clip lasts "
            f"{n_frames / float(fps):.2f} s)"
        ) from None
    return make_window(start, start + length, fps)


__all__ = [
    "Position",
    "WindowError",
    "make_window",
    "parse_position",
    "source_window",
    "window_length",
    "window_start",
]
