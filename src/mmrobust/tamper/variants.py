"""Rendering the variants of one source: one streaming decode into every output.

Two paths, both keyframed every ``F`` frames from 0 and again from ``s``:

* ``segment_variants`` (``mmrobust`` style, default): shared prefix/suffix
  encoded once, each window separately, every packet muxed straight into the
  outputs that play it (``tamper/segments.py``);
* ``stream_variants`` (``style="released"`` or ``segments=False``): one writer
  per output, fed every frame (``open_writer``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from mmrobust.media import VideoInfo, iter_frames
from mmrobust.media.encoder import EncoderSettings
from mmrobust.media.writer import FrameWriter, OpenCVWriter, VideoWriter
from mmrobust.schema import TAMPER_ORIGINAL, Window
from mmrobust.tamper.config import BuildConfig
from mmrobust.tamper.effects import Effect, EffectContext
from mmrobust.tamper.manifest import Donor
from mmrobust.tamper.plan import SourcePlan, seeded_rng
from mmrobust.tamper.segments import encode_variants


@dataclass
class Variant:
    """One output of a source being built: its effect (``None``: the original), path, writer, result."""

    name: str
    effect: Effect | None
    relpath: str
    key: str
    writer: FrameWriter | None = None
    donor: Donor | None = None
    donor_frames: list[np.ndarray] | None = None
    out_len: int = 0
    frames: int = 0
    settings: dict[str, object] = field(default_factory=dict)
    padded: bool = False
    error: str | None = None


def source_colour(info: VideoInfo) -> tuple[int | None, int | None]:
    """``(colorspace, color_range)``: the source's YUV matrix and range as
    encoder settings (``None`` where the source leaves them unspecified), so
    that window frames converted from RGB match the frames passed through
    from the decoder (see ``EncoderSettings``)."""
    return (info.colorspace if info.colorspace != 2 else None, info.color_range or None)


def open_writer(
    path: Path, fps: Fraction, info: VideoInfo, config: BuildConfig, gop: int
) -> FrameWriter:
    """The writer of one output (full-encode path); ``gop``: fixed keyframe interval (the window's F)."""
    if config.style == "released":
        return OpenCVWriter(path, fps, info.width, info.height)
    colorspace, color_range = source_colour(info)
    return VideoWriter(
        path,
        fps,
        info.width,
        info.height,
        codec=config.codec,
        crf=config.crf,
        preset=config.preset,
        gop=gop,
        qscale=config.qscale,
        threads=config.threads,
        colorspace=colorspace,
        color_range=color_range,
    )


def stream_variants(
    plan: SourcePlan,
    window: Window,
    variants: list[Variant],
    out_dir: Path,
    out_fps: Fraction,
    config: BuildConfig,
) -> int:
    """One decode of the source into every variant's writer. Returns the decoded frame count.

    Keyframes (``mmrobust`` style): every ``F`` frames from 0, and again every
    ``F`` frames from output frame ``s`` (forced there), the same pattern as
    the shared pieces of ``segment_variants``.
    """
    for v in variants:
        v.writer = open_writer(out_dir / v.relpath, out_fps, plan.info, config, window.n_frames)
    s, e = window.start_frame, window.end_frame
    held: list[np.ndarray] = []
    n = 0
    for i, frame in enumerate(iter_frames(plan.path)):
        n = i + 1
        in_window = s <= i < e
        if i == s:
            for v in variants:
                if isinstance(v.writer, VideoWriter):
                    v.writer.force_keyframe()
        for v in variants:
            if v.effect is None or not in_window:
                assert v.writer is not None
                v.writer.write(frame)
        if in_window:
            held.append(frame)
            if i == e - 1:
                for v in variants:
                    if v.effect is None:
                        continue
                    ctx = EffectContext(
                        rng=seeded_rng(config.seed, plan.sha256, v.name), donor=v.donor_frames
                    )
                    out = v.effect.apply(held, ctx)
                    v.out_len = len(out)
                    assert v.writer is not None
                    for f in out:
                        v.writer.write(f)
                held = []
    return n


def segment_variants(
    plan: SourcePlan,
    window: Window,
    variants: list[Variant],
    out_dir: Path,
    out_fps: Fraction,
    config: BuildConfig,
) -> int:
    """Encode shared prefix/suffix once and each window separately, muxed into every output.

    Returns the decoded frame count; outputs are kept only when it matches
    the planned count (else the caller re-plans). Per-variant failures to
    finish an output are stored on the variant (``error``).
    """

    def _apply(held: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        out: dict[str, list[np.ndarray]] = {}
        for v in variants:
            if v.effect is not None:
                ctx = EffectContext(
                    rng=seeded_rng(config.seed, plan.sha256, v.name), donor=v.donor_frames
                )
                out[v.name] = v.effect.apply(held, ctx)
        return out

    colorspace, color_range = source_colour(plan.info)
    settings = EncoderSettings(
        out_fps,
        plan.info.width,
        plan.info.height,
        codec=config.codec,
        crf=config.crf,
        preset=config.preset,
        gop=window.n_frames,
        qscale=config.qscale,
        threads=config.threads,
        colorspace=colorspace,
        color_range=color_range,
    )
    built = encode_variants(
        plan.path,
        window,
        {v.name: out_dir / v.relpath for v in variants},
        _apply,
        settings,
        TAMPER_ORIGINAL,
        expected=plan.info.frame_count,
    )
    if built.decoded != plan.info.frame_count:
        return built.decoded
    for v in variants:
        v.out_len = built.out_len[v.name]
        v.settings, v.padded = {**built.settings, "segmented": True}, built.padded
        if v.name in built.errors:
            v.error = built.errors[v.name]
        else:
            v.frames = built.frames[v.name]
    return built.decoded


__all__ = ["Variant", "open_writer", "segment_variants", "source_colour", "stream_variants"]
