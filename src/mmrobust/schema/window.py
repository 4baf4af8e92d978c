"""Where the tamper window lies: which frames an effect replaces (MVTamperBench section 3.3).

The paper fixes a 1-second window at the clip's midpoint. A window is
``F = round(duration * fps)`` frames long; the released generator used
``int(fps) * duration`` instead (``official_fps=True`` reproduces it, e.g.
29 frames instead of 30 at 29.97 fps). Start positions follow the released
generator: ``start`` = 0, ``middle`` = ``N // 2 - F // 2``, ``end`` = ``N - F``;
a fraction ``p`` in [0, 1] starts at ``round(p * (N - F))``.

The released clips carry no window; :func:`released_window` derives it by the
released generator's rule (``../shared/data/mvtamperbench/README.md``, "How the
released clips were generated"): with ``N`` the original's frame count and
``F = int(fps) x duration``, the window starts at ``N // 2 - F // 2`` (middle),
``0`` (start) or ``N - F`` (end), and the tampered clip is written at
``int(fps)``. In the tampered clip's own timeline the window is ``[s, s + F)``
for masking, rotation and substitution, the empty seam ``[s, s)`` for dropping
(``F`` frames removed) and ``[s, s + 2F)`` for repetition (the window played
twice). Pure arithmetic (no media is read here: ``mmrobust.datasets.windows``
counts the originals' frames).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from mmrobust.schema.sample import Window

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


RULE = "released: F = int(fps) x duration; start = N//2 - F//2 (middle), 0 (start), N - F (end)"


@dataclass(frozen=True)
class DerivedWindow:
    """A window derived by the released rule.

    Attributes:
        source: the window in the original's timeline (``F`` frames).
        output: the window in the tampered clip's own timeline.
    """

    source: Window
    output: Window

    @property
    def dropped(self) -> int | None:
        """Frames removed at the seam (dropping), else ``None``."""
        return self.source.n_frames if self.output.n_frames == 0 else None

    def as_dict(self) -> dict[str, Any]:
        """The output window's fields plus ``source``, ``rule`` and ``derived: true``."""
        return {
            **self.output.model_dump(),
            "source": self.source.model_dump(),
            "rule": RULE,
            "derived": True,
        }


def released_window(
    effect: str, n_source: int, fps: Fraction | float, position: str, duration: float
) -> DerivedWindow:
    """The released rule for one tampered clip.

    Args:
        effect: ``dropping`` | ``masking`` | ``rotation`` | ``substitution`` | ``repetition``.
        n_source: frames in the original.
        fps: the original's frame rate (truncated to an integer by the rule).
        position: ``start`` | ``middle`` | ``end``.
        duration: window length in seconds.

    Raises:
        WindowError: the original is not longer than the window, or a bad position.
    """
    src = source_window(
        n_source, fps, duration=duration, position=parse_position(position), official_fps=True
    )
    length = {"dropping": 0, "repetition": 2 * src.n_frames}.get(effect, src.n_frames)
    out = make_window(src.start_frame, src.start_frame + length, int(fps))
    return DerivedWindow(source=src, output=out)


__all__ = [
    "RULE",
    "DerivedWindow",
    "NamedPosition",
    "Position",
    "WindowError",
    "make_window",
    "parse_position",
    "released_window",
    "source_window",
    "window_length",
    "window_start",
]
