"""Video effects of ``mmrobust perturb``: the tamper engine's effects over a centred window,
``reverse`` (reversed playback) and ``frame_rate`` (a lower frame rate, same duration).

A severity sets how much of the clip is touched (:data:`WINDOW_SHARE`: the share of the
frames in the centred window, for a tamper effect and ``reverse``) or the frame-rate divisor
(:data:`FRAME_RATE_DIVISOR`). Frames are decoded as ``eval`` decodes them
(:func:`mmrobust.media.decode.iter_frames`) and encoded with the tamper builder's writer
(:class:`mmrobust.media.writer.VideoWriter`: pinned encoder threads, so two builds are
byte-identical; temporary file + rename). The manifest records the window in frames and
seconds, in the source's and the output's timeline.

Effects that need a donor clip (``substitution``) are not offered: a clean question has no
second clip to take frames from.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

WINDOW_SHARE: tuple[float, ...] = (0.1, 0.2, 0.3, 0.45, 0.6)
"""Severity 1-5 -> share of the clip's frames in the centred window (tamper effects)."""
REVERSE_SHARE: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)
"""Severity 1-5 -> share of the clip played backwards (centred; 5: the whole clip)."""
FRAME_RATE_DIVISOR: tuple[int, ...] = (2, 3, 4, 6, 8)
"""Severity 1-5 -> the frame rate is divided by this (every n-th frame kept)."""

EXTRA_VIDEO_EFFECTS = ("reverse", "frame_rate")


def _tamper_effects() -> tuple[str, ...]:
    from mmrobust.tamper.effects import EFFECTS

    out = []
    for name in EFFECTS.names():
        if not EFFECTS.get(name).needs_donor:
            out.append(name)
    return tuple(out)


class _VideoEffects:
    """The names ``perturb`` takes for clips, read from the tamper registry on first use."""

    def names(self) -> tuple[str, ...]:
        return (*_tamper_effects(), *EXTRA_VIDEO_EFFECTS)

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Any:
        return iter(self.names())


VIDEO_EFFECTS = _VideoEffects()
"""Names of the video effects (the tamper effects that need no donor, reverse, frame_rate)."""


def centred_window(n: int, share: float) -> tuple[int, int]:
    """Frames ``[start, end)`` of a centred window holding ``share`` of ``n`` frames (>= 1)."""
    length = min(n, max(1, round(n * share)))
    start = (n - length) // 2
    return start, start + length


def perturb_frames(
    frames: list[np.ndarray], effect: str, severity: int, fps: Fraction, seed: int
) -> tuple[list[np.ndarray], Fraction, dict[str, Any]]:
    """Apply a video effect to decoded frames.

    Args:
        frames: ``(H, W, 3) uint8`` RGB frames of the clip. effect: a video effect name.
        severity: 1-5. fps: the clip's frame rate. seed: the generator seed.

    Returns:
        ``(frames, fps, details)``: the output frames and rate, and JSON-ready details
        (``window_source`` / ``window_output`` in frames and seconds, ``fps_out``).

    Raises:
        ValueError: unknown effect, bad severity, or an empty result.
    """
    if severity not in (1, 2, 3, 4, 5):
        raise ValueError(f"severity must be 1-5, not {severity}")
    n = len(frames)
    i = severity - 1
    if effect == "frame_rate":
        step = FRAME_RATE_DIVISOR[i]
        kept = frames[::step]
        out_fps = fps / step
        return (
            kept,
            out_fps,
            {
                "parameter": "frame-rate divisor",
                "value": step,
                "fps_in": str(fps),
                "fps_out": str(out_fps),
                "frames_kept": list(range(0, n, step)),
            },
        )
    share = REVERSE_SHARE[i] if effect == "reverse" else WINDOW_SHARE[i]
    start, end = centred_window(n, share)
    window = frames[start:end]
    params: dict[str, Any] = {}
    if effect == "reverse":
        replaced = window[::-1]
    else:
        from mmrobust.tamper.effects import EffectContext, make_effect

        tool = make_effect(effect)
        if tool.needs_donor:
            raise ValueError(f"{effect} needs a donor clip; perturb does not offer it")
        replaced = tool.apply(window, EffectContext(rng=np.random.default_rng(seed)))
        params = tool.params
    out = [*frames[:start], *replaced, *frames[end:]]
    if not out:
        raise ValueError(f"{effect} at severity {severity} leaves no frame")
    rate = float(fps)

    def span(a: int, b: int) -> dict[str, Any]:
        return {"start_frame": a, "end_frame": b, "start_s": a / rate, "end_s": b / rate}

    return (
        out,
        fps,
        {
            "parameter": "share of the frames in the centred window",
            "value": share,
            "effect_params": params,
            "window_source": span(start, end),
            "window_output": span(start, start + len(replaced)),
        },
    )


@lru_cache(maxsize=2)
def decode_clip(source: Path) -> tuple[tuple[np.ndarray, ...], Fraction]:
    """Every frame of ``source`` (``(H, W, 3) uint8`` RGB, as ``eval`` decodes) and its rate.

    The last two clips stay decoded, so the variants of one source (built one after another)
    decode it once; :func:`mmrobust.perturb.build.perturb` clears it when the build ends.

    Raises:
        MediaError: unreadable source. ValueError: no frame decoded.
    """
    from mmrobust.media.decode import iter_frames
    from mmrobust.media.probe import probe

    info = probe(source, count_frames=False)  # the frames are counted as they decode
    frames = tuple(iter_frames(source))
    if not frames:
        raise ValueError(f"{source}: no frame decoded")
    for f in frames:
        f.flags.writeable = False  # shared between the variants: an effect must copy
    return frames, Fraction(info.fps)


def build_video(job: Any, target: Path) -> dict[str, Any]:
    """Decode ``job.source``, apply ``job.effect`` (or none for clean), encode to ``target``.

    Returns:
        the manifest details (window, rate, ``frames_out``, size).

    Raises:
        MediaError: unreadable source or encoder failure. ValueError: bad effect.
    """
    from mmrobust.media.writer import VideoWriter

    decoded, fps = decode_clip(Path(job.source))
    frames = list(decoded)
    n_in = len(frames)
    details: dict[str, Any] = {}
    if job.effect != "clean":
        frames, fps, details = perturb_frames(frames, job.effect, job.severity, fps, job.seed)
    h, w = frames[0].shape[:2]
    with VideoWriter(target, fps, w, h) as writer:
        for frame in frames:
            writer.write(frame)
    details.update(frames_in=n_in, frames_out=len(frames), width=w, height=h)
    details.setdefault("fps_out", str(fps))
    return details


__all__ = [
    "EXTRA_VIDEO_EFFECTS",
    "FRAME_RATE_DIVISOR",
    "REVERSE_SHARE",
    "VIDEO_EFFECTS",
    "WINDOW_SHARE",
    "build_video",
    "centred_window",
    "decode_clip",
    "perturb_frames",
]
