"""Building one source: every variant (original + each effect) from a single decode.

Skips outputs already complete (resume key + sha256), copies or re-encodes the
original, draws substitution donors (a drawn donor is decoded over the range it
must give before it is used; one that fails is left out of the pool and the draw
is made again, and ``build`` reports it once), renders the rest
(``tamper/variants.py``) and re-plans once if decoding finds a different frame
count than demuxing.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np

from mmrobust.atomicfile import write_with
from mmrobust.media import MediaError
from mmrobust.media.encoder import encodable_fps
from mmrobust.schema import TAMPER_ORIGINAL
from mmrobust.schema.window import WindowError, source_window
from mmrobust.tamper.config import BuildConfig
from mmrobust.tamper.donor_frames import donor_frames
from mmrobust.tamper.entries import is_done, make_entry, variant_key
from mmrobust.tamper.layout import output_relpath
from mmrobust.tamper.manifest import BuildError, Donor, ManifestEntry
from mmrobust.tamper.plan import PoolVideo, SourcePlan, choose_donor, with_count
from mmrobust.tamper.variants import Variant, segment_variants, stream_variants


@dataclass
class SourceResult:
    """What building one source produced.

    ``donor_errors`` are substitution donors found undecodable over the range
    this source needed (one entry per donor; ``build`` reports each donor once).
    """

    source: str
    entries: list[ManifestEntry] = field(default_factory=list)
    errors: list[BuildError] = field(default_factory=list)
    built: int = 0
    skipped: int = 0
    donor_errors: list[BuildError] = field(default_factory=list)


def build_source(
    plan: SourcePlan,
    config: BuildConfig,
    out_dir: Path,
    pool: Sequence[PoolVideo],
    done: Mapping[str, ManifestEntry],
) -> SourceResult:
    """Build every variant of one source (original + each effect) from a single decode.

    Never raises for bad media: failures come back as ``BuildError`` rows.
    ``done`` maps resume keys to existing manifest entries; complete outputs are kept.
    """
    res = SourceResult(source=str(plan.path))
    info = plan.info
    try:
        window = source_window(
            info.frame_count,
            info.fps,
            duration=config.duration,
            position=config.position,
            official_fps=config.truncate_fps,
        )
    except WindowError as exc:
        res.errors.append(BuildError(source=str(plan.path), reason=str(exc)))
        return res
    if config.style == "released":
        out_fps = Fraction(int(info.fps))
    else:
        out_fps = encodable_fps(info.fps, config.codec)

    variants: list[Variant] = []
    copy_original: Variant | None = None
    for effect in (None, *config.effects):
        name = TAMPER_ORIGINAL if effect is None else effect.name
        copied = effect is None and config.copy_originals
        rel = output_relpath(
            plan.uid,
            name,
            layout=config.layout,
            position=config.position,
            duration=config.duration,
            token=effect.official_token if effect else None,
            suffix=plan.path.suffix.lower() if copied else ".mp4",
        )
        key = variant_key(plan, name, effect, config, rel, pool)
        old = done.get(key)
        if is_done(old, out_dir):
            assert old is not None
            res.entries.append(old)
            res.skipped += 1
            continue
        v = Variant(name=name, effect=effect, relpath=rel, key=key)
        if copied:
            copy_original = v
        else:
            variants.append(v)

    if copy_original is not None:
        dst = out_dir / copy_original.relpath
        dst.parent.mkdir(parents=True, exist_ok=True)
        write_with(dst, partial(shutil.copyfile, plan.path))  # never through a link at dst
        res.entries.append(
            make_entry(
                plan,
                copy_original,
                None,
                info.fps,
                info.frame_count,
                {"writer": "copy"},
                False,
                out_dir,
                config,
            )
        )
        res.built += 1

    for v in variants:
        if v.effect is not None and v.effect.needs_donor:
            try:
                donor, offset, frames = _draw_donor(plan, window.n_frames, pool, config, res)
                v.donor, v.donor_frames = (
                    Donor(source=str(donor.path), sha256=donor.sha256, offset=offset),
                    frames,
                )
            except WindowError as exc:
                res.errors.append(
                    BuildError(source=str(plan.path), reason=str(exc), variant=v.name)
                )
    variants = [
        v
        for v in variants
        if not (v.effect is not None and v.effect.needs_donor and v.donor is None)
    ]
    if not variants:
        return res

    segmented = config.style != "released" and config.segments
    try:
        for _attempt in range(2):
            try:
                if segmented:
                    n = segment_variants(plan, window, variants, out_dir, out_fps, config)
                else:
                    n = stream_variants(plan, window, variants, out_dir, out_fps, config)
            except BaseException:
                for v in variants:
                    if v.writer is not None:
                        v.writer.abort()
                raise
            if n == info.frame_count:
                break
            for v in variants:
                if v.writer is not None:
                    v.writer.abort()
            info = with_count(info, n)
            plan = SourcePlan(plan.path, plan.sha256, plan.uid, info)
            window = source_window(
                n,
                info.fps,
                duration=config.duration,
                position=config.position,
                official_fps=config.truncate_fps,
            )
        else:  # pragma: no cover - decode count unstable between two decodes
            raise MediaError(plan.path, "frame count differs between decodes")
    except (MediaError, WindowError, ValueError, OSError) as exc:
        res.errors.append(BuildError(source=str(plan.path), reason=str(exc)))
        return res

    for v in variants:
        if v.writer is not None:
            try:
                v.writer.close()
            except MediaError as exc:
                v.error = str(exc)
            else:
                v.frames, v.settings, v.padded = (
                    v.writer.frames_written,
                    v.writer.settings,
                    v.writer.padded,
                )
        if v.error is not None:
            res.errors.append(BuildError(source=str(plan.path), reason=v.error, variant=v.name))
            continue
        res.entries.append(
            make_entry(
                plan, v, window, out_fps, info.frame_count, v.settings, v.padded, out_dir, config
            )
        )
        res.built += 1
    return res


def _draw_donor(
    plan: SourcePlan,
    length: int,
    pool: Sequence[PoolVideo],
    config: BuildConfig,
    res: SourceResult,
) -> tuple[PoolVideo, int, list[np.ndarray]]:
    """Draw a donor and decode its ``length`` frames (``donor_frames``: from the IDR keyframe
    before them where that gives the same frames); a donor that does not decode over that
    range is left out (recorded in ``res.donor_errors``) and the draw is made again.

    The draw stays seeded: it depends only on the files, the seed and which donors failed.

    Raises:
        WindowError: no usable donor is left.
    """
    usable = list(pool)
    while True:
        donor, offset = choose_donor(plan, length, usable, config.seed)
        try:
            frames = donor_frames(
                donor.path, offset, offset + length, (plan.info.width, plan.info.height)
            )
            if len(frames) != length:
                raise MediaError(donor.path, f"only {offset + len(frames)} frames decode")
        except MediaError as exc:
            reason = f"donor unusable, left out of the pool: {exc.reason}"
            res.donor_errors.append(
                BuildError(source=str(donor.path), reason=reason, variant="substitution")
            )
            usable = [p for p in usable if p.sha256 != donor.sha256]
            continue
        return donor, offset, frames


__all__ = ["SourceResult", "build_source"]
