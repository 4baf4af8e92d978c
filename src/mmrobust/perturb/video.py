"""Video effects of ``mmrobust perturb``: the tamper engine's effects and the image effects
(:mod:`mmrobust.perturb.image`, applied to each frame) over a centred window or the whole clip
(``span``), ``reverse`` (reversed playback) and ``frame_rate`` (a lower frame rate, same
duration).

With span ``window`` a severity sets how much of the clip is touched (:data:`WINDOW_SHARE`:
the share of the frames in the centred window, for a tamper effect or an image effect;
:data:`REVERSE_SHARE` for ``reverse``); an image effect then takes its own severity's
parameter too. With span ``whole`` every frame is touched and the severity sets only the
effect's parameter (a tamper effect keeps its default parameters). ``frame_rate`` always
touches the whole clip; its severity is the divisor (:data:`FRAME_RATE_DIVISOR`).

An image effect on a clip is seeded per clip: its placement (``box_mask``'s box, ``tilt``'s
angle, ``crop_resize``'s crop, the ``typographic`` text's box) is drawn once from the clip's
seed and is the same on every frame touched; ``gaussian_noise`` draws fresh noise per frame
from one generator seeded by the clip. Frames are decoded as ``eval`` decodes them
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
SPANS = ("window", "whole")
"""Where a video effect applies: a centred window sized by the severity, or every frame."""
FRESH_PER_FRAME = frozenset({"gaussian_noise"})
"""Image effects that draw anew on each frame (from one generator per clip); the others draw
their placement once per clip."""
EMPTY_WHEN_WHOLE = frozenset({"dropping"})
"""Tamper effects that leave no frame when applied to the whole clip."""

EXTRA_VIDEO_EFFECTS = ("reverse", "frame_rate")


def _image_effects() -> tuple[str, ...]:
    from mmrobust.perturb.image import IMAGE_EFFECTS

    return tuple(IMAGE_EFFECTS)


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
        return (*_tamper_effects(), *EXTRA_VIDEO_EFFECTS, *_image_effects())

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Any:
        return iter(self.names())


VIDEO_EFFECTS = _VideoEffects()
"""Names of the video effects (the tamper effects that need no donor, reverse, frame_rate and
the image effects, applied frame by frame)."""


def centred_window(n: int, share: float) -> tuple[int, int]:
    """Frames ``[start, end)`` of a centred window holding ``share`` of ``n`` frames (>= 1)."""
    length = min(n, max(1, round(n * share)))
    start = (n - length) // 2
    return start, start + length


def image_frames(
    window: list[np.ndarray],
    effect: str,
    severity: int,
    seed: int,
    text: str = "",
    avoid: tuple[int, int, int, int] | None = None,
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Apply image effect ``effect`` at ``severity`` to each frame of ``window``.

    Args:
        window: ``(H, W, 3) uint8`` RGB frames (not changed). seed: the clip's seed.
        text, avoid: as :class:`mmrobust.perturb.image.EffectContext`.

    Returns:
        the new frames and the details of the first (``parameter``, ``value`` and the
        placement, the same on every frame; ``jpeg_bytes`` left out: it differs per frame).

    Raises:
        KeyError: not an image effect. ValueError: bad severity.
    """
    from mmrobust.perturb.image import EffectContext, apply_image_effect

    shared = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    details: dict[str, Any] = {}
    for frame in window:
        rng = shared if effect in FRESH_PER_FRAME else np.random.default_rng(seed)
        ctx = EffectContext(rng=rng, text=text, avoid=avoid)
        pixels, info = apply_image_effect(effect, frame, severity, ctx)
        out.append(np.ascontiguousarray(pixels))
        if not details:
            details = {k: v for k, v in info.items() if k != "jpeg_bytes"}
    return out, details


def perturb_frames(
    frames: list[np.ndarray],
    effect: str,
    severity: int,
    fps: Fraction,
    seed: int,
    *,
    span: str = "window",
    text: str = "",
    avoid: tuple[int, int, int, int] | None = None,
) -> tuple[list[np.ndarray], Fraction, dict[str, Any]]:
    """Apply a video effect to decoded frames.

    Args:
        frames: ``(H, W, 3) uint8`` RGB frames of the clip. effect: a video effect name.
        severity: 1-5. fps: the clip's frame rate. seed: the generator seed.
        span: ``"window"`` (centred, sized by the severity) or ``"whole"`` (every frame).
        text, avoid: the overlay text and the region to leave uncovered (image effects).

    Returns:
        ``(frames, fps, details)``: the output frames and rate, and JSON-ready details
        (``span``, ``frames_touched``, ``window_source`` / ``window_output`` in frames and
        seconds, ``fps_out``; an image effect's own ``parameter`` / ``value`` / placement
        under ``effect_params``).

    Raises:
        ValueError: unknown effect or span, bad severity, or an empty result.
    """
    if severity not in (1, 2, 3, 4, 5):
        raise ValueError(f"severity must be 1-5, not {severity}")
    if span not in SPANS:
        raise ValueError(f"span must be one of {', '.join(SPANS)}, not {span!r}")
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
                "span": "whole",
                "frames_touched": n,
            },
        )
    if span == "whole":
        share, parameter = 1.0, "share of the frames touched (the whole clip)"
        start, end = 0, n
    else:
        share = REVERSE_SHARE[i] if effect == "reverse" else WINDOW_SHARE[i]
        parameter = "share of the frames in the centred window"
        start, end = centred_window(n, share)
    window = frames[start:end]
    params: dict[str, Any] = {}
    if effect == "reverse":
        replaced = window[::-1]
    elif effect in _image_effects():
        replaced, params = image_frames(window, effect, severity, seed, text, avoid)
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

    def frames_at(a: int, b: int) -> dict[str, Any]:
        return {"start_frame": a, "end_frame": b, "start_s": a / rate, "end_s": b / rate}

    return (
        out,
        fps,
        {
            "parameter": parameter,
            "value": share,
            "span": span,
            "frames_touched": end - start,
            "effect_params": params,
            "window_source": frames_at(start, end),
            "window_output": frames_at(start, start + len(replaced)),
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
        frames, fps, details = perturb_frames(
            frames,
            job.effect,
            job.severity,
            fps,
            job.seed,
            span=str(job.options.get("span", "window")),
            text=job.text,
            avoid=job.avoid,
        )
    h, w = frames[0].shape[:2]
    with VideoWriter(target, fps, w, h) as writer:
        for frame in frames:
            writer.write(frame)
    details.update(frames_in=n_in, frames_out=len(frames), width=w, height=h)
    details.setdefault("fps_out", str(fps))
    return details


__all__ = [
    "EMPTY_WHEN_WHOLE",
    "EXTRA_VIDEO_EFFECTS",
    "FRAME_RATE_DIVISOR",
    "FRESH_PER_FRAME",
    "REVERSE_SHARE",
    "SPANS",
    "VIDEO_EFFECTS",
    "WINDOW_SHARE",
    "build_video",
    "centred_window",
    "decode_clip",
    "image_frames",
    "perturb_frames",
]
