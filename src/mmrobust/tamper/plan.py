"""Planning a build: discover, hash and probe the sources, the donor pool, the donor draw.

``plan_sources`` turns paths into ``SourcePlan`` rows (frame count by demuxing,
no decode) and the substitution donor pool (``PoolVideo``); ``choose_donor``
draws one source's donor and its first frame (MVTamperBench section 3.2,
substitution).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mmrobust.media import MediaError, VideoInfo, probe
from mmrobust.schema.window import WindowError
from mmrobust.tamper.config import BuildConfig
from mmrobust.tamper.layout import safe_stem
from mmrobust.tamper.manifest import BuildError, sha256_file
from mmrobust.tamper.sources import discover_sources


@dataclass(frozen=True)
class PoolVideo:
    """A possible substitution donor: path, sha256 and frame count."""

    path: Path
    sha256: str
    frames: int


@dataclass(frozen=True)
class SourcePlan:
    """A probed source ready to build."""

    path: Path
    sha256: str
    uid: str
    info: VideoInfo


def seeded_rng(seed: int, sha256: str, name: str) -> np.random.Generator:
    """The generator of one random choice of one source (``name``: variant or donor draw)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode()), int(sha256[:15], 16)])


def with_count(info: VideoInfo, n: int) -> VideoInfo:
    """``info`` with the decoded frame count ``n`` (and the duration it implies)."""
    return replace(info, frame_count=n, duration_s=float(n / info.fps))


def plan_sources(
    paths: Sequence[str | Path], config: BuildConfig
) -> tuple[list[SourcePlan], list[PoolVideo], list[BuildError]]:
    """Discover, hash and probe (frame count by demuxing) every source and donor.

    Returns:
        ``(plans, donor pool, errors)``. The pool is ``config.donors`` when
        given, else every source that probed cleanly.
    """
    files, errors = discover_sources(paths)
    probed: list[tuple[Path, str, VideoInfo]] = []
    for f in files:
        try:
            info = probe(f, count_frames="demux")
            if min(info.width, info.height) < config.min_side:
                raise MediaError(
                    f,
                    f"frame size {info.width}x{info.height} is below the minimum "
                    f"{config.min_side}x{config.min_side}",
                )
            probed.append((f, sha256_file(f), info))
        except MediaError as exc:
            errors.append(BuildError(source=str(f), reason=exc.reason))
        except OSError as exc:
            errors.append(BuildError(source=str(f), reason=f"cannot read: {exc.strerror or exc}"))
    stems = [safe_stem(f.stem) for f, _, _ in probed]
    plans = [
        SourcePlan(f, sha, stem if stems.count(stem) == 1 else f"{stem}-{sha[:8]}", info)
        for (f, sha, info), stem in zip(probed, stems, strict=True)
    ]
    if config.donors:
        pool = []
        for d in config.donors:
            try:
                dinfo = probe(d, count_frames="demux")
                pool.append(PoolVideo(Path(d).resolve(), sha256_file(Path(d)), dinfo.frame_count))
            except (MediaError, OSError) as exc:
                errors.append(
                    BuildError(
                        source=str(d), reason=f"donor unusable: {exc}", variant="substitution"
                    )
                )
    else:
        pool = [PoolVideo(p.path, p.sha256, p.info.frame_count) for p in plans]
    return plans, pool, errors


def choose_donor(
    plan: SourcePlan, length: int, pool: Sequence[PoolVideo], seed: int
) -> tuple[PoolVideo, int]:
    """Draw the substitution donor and its first frame from a seeded RNG.

    Candidates are pool videos with a different sha256 and at least ``length``
    frames, ordered by sha256 so the draw does not depend on paths or order.

    Raises:
        WindowError: no candidate (one source and no ``--donor``, or all too short).
    """
    candidates = sorted(
        (p for p in pool if p.sha256 != plan.sha256 and p.frames >= length), key=lambda p: p.sha256
    )
    if not candidates:
        raise WindowError(
            f"no substitution donor: needs another video with at least {length} frames "
            "(give more sources or --donor PATH)"
        )
    rng = seeded_rng(seed, plan.sha256, "substitution-donor")
    donor = candidates[int(rng.integers(len(candidates)))]
    offset = int(rng.integers(0, donor.frames - length + 1))
    return donor, offset


__all__ = ["PoolVideo", "SourcePlan", "choose_donor", "plan_sources", "seeded_rng", "with_count"]
