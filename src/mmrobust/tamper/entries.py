"""Manifest entries of a build: the resume key of each output and its ``ManifestEntry``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from mmrobust import __version__
from mmrobust.schema import TAMPER_ORIGINAL, Window
from mmrobust.schema.window import make_window
from mmrobust.tamper.config import BuildConfig
from mmrobust.tamper.effects import Effect
from mmrobust.tamper.manifest import ManifestEntry, sha256_file
from mmrobust.tamper.plan import PoolVideo, SourcePlan
from mmrobust.tamper.variants import Variant

KEY_VERSION = 7
"""Resume-key schema (older outputs are rebuilt); 3: fixed-GOP keyframes and one SEI per
output; 4: x264 without macroblock-tree rate control (bit-reproducible builds); 5: pieces muxed
straight into the outputs (SEI-stripped piece starts now length-prefixed, no Annex B in mp4);
6: frames converted through RGB keep the source's luma (its YUV matrix and range, exact
rounding): up to 5 the window's frames were about 1 luma level darker than the frames
around them, and 4 levels for BT.709 sources; 7: a fixed encoder thread count
(``BuildConfig.threads``, in the key): up to 6 FFmpeg chose it from the machine's cores, so
the slices per frame, and the bytes, changed from one machine to another."""


def _fraction_str(f: Fraction | int) -> str:
    return str(Fraction(f))


def variant_key(
    plan: SourcePlan,
    variant: str,
    effect: Effect | None,
    config: BuildConfig,
    relpath: str,
    pool: Sequence[PoolVideo],
) -> str:
    """The resume key of one output: sha256 of everything that determines its bytes."""
    payload = {
        "v": KEY_VERSION,
        "source": plan.sha256,
        "variant": variant,
        "params": effect.params if effect else {},
        "duration": config.duration,
        "position": config.position,
        "truncate_fps": config.truncate_fps,
        "style": config.style,
        "copy": config.copy_originals if variant == TAMPER_ORIGINAL else False,
        "encoder": [
            config.codec,
            config.crf,
            config.preset,
            config.segments,
            config.qscale,
            config.threads,
        ],
        "seed": config.seed,
        "path": relpath,
        # the donor draw depends on each pool video's frame count as well (the demux
        # count left out frames hidden by an mp4 edit list only from 2026-11-30)
        "pool": sorted((p.sha256, p.frames) for p in pool)
        if effect is not None and effect.needs_donor
        else [],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def is_done(entry: ManifestEntry | None, out_dir: Path) -> bool:
    """Whether ``entry`` exists and its file is still there with the recorded sha256."""
    if entry is None:
        return False
    path = out_dir / entry.video
    return path.is_file() and sha256_file(path) == entry.video_sha256


def make_entry(
    plan: SourcePlan,
    v: Variant,
    window: Window | None,
    out_fps: Fraction,
    n_source: int,
    encoder: dict[str, object],
    padded: bool,
    out_dir: Path,
    config: BuildConfig,
) -> ManifestEntry:
    """The manifest line of one written output (``window is None`` or no effect: the original)."""
    path = out_dir / v.relpath
    info = plan.info
    if v.effect is None or window is None:
        w_src = w_out = None
        n_out = v.frames if v.frames else n_source
    else:
        w_src = window
        w_out = make_window(window.start_frame, window.start_frame + v.out_len, out_fps)
        n_out = n_source - window.n_frames + v.out_len
    width = info.width + (info.width % 2 if padded else 0)
    height = info.height + (info.height % 2 if padded else 0)
    return ManifestEntry(
        id=f"{plan.uid}__{v.name}",
        source=str(plan.path),
        source_sha256=plan.sha256,
        video=v.relpath,
        video_sha256=sha256_file(path),
        tamper_type=v.name,
        params=v.effect.params if v.effect else {},
        position=config.position,
        duration_s=config.duration,
        window_source=w_src,
        window_output=w_out,
        fps=_fraction_str(out_fps if v.frames else info.fps),
        source_fps=_fraction_str(info.fps),
        frames_source=n_source,
        frames_output=n_out,
        width=width,
        height=height,
        source_width=info.width,
        source_height=info.height,
        padded=padded,
        encoder=dict(encoder),
        seed=config.seed,
        donor=v.donor,
        task=config.task,
        official_token=(v.effect.official_token if v.effect else TAMPER_ORIGINAL),
        style=config.style,
        key=v.key,
        mmrobust_version=__version__,
    )


__all__ = ["KEY_VERSION", "is_done", "make_entry", "variant_key"]
