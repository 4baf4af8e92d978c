"""The tamper builder: sources in, tampered clips + ``manifest.jsonl`` out (MVTamperBench sections 3.2-3.3).

Per source, in one streaming decode (default ``mmrobust`` style, ``tamper/segments.py``):

* frames before the window ``[0, s)`` are encoded once, as a shared prefix segment;
* the window's ``F`` frames are held in memory (the only frames held, so memory
  does not grow with clip length); when complete, each effect turns them into its
  replacement frames, and each distinct window is encoded as its own segment
  (the original's; repetition reuses it, dropping has none);
* frames after the window are encoded once, as a shared suffix segment;
* each output is joined from its segments by packet copy (``media/concat.py``).

``style="released"`` writes every variant with its own OpenCV writer instead
(frames before/after the window go to every writer), as the released generator.

Substitution's donor frames come from a second streaming decode of the donor,
only of the ``F`` frames it needs. The frame count that places the window is
counted by demuxing (no decode); if decoding finds a different count, the
source is rebuilt once with the decoded count.

Writes are atomic (temporary file + rename). A re-run skips every output whose
manifest line has the same resume key and whose file still has the recorded
sha256; an interrupted build resumes from the lines already appended.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import shutil
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np

from mmrobust import __version__
from mmrobust.datasets.schema import TAMPER_ORIGINAL, Window
from mmrobust.media import MediaError, VideoInfo, iter_frames, probe
from mmrobust.media.writer import (
    DEFAULT_CODEC,
    DEFAULT_CRF,
    FrameWriter,
    OpenCVWriter,
    VideoWriter,
)
from mmrobust.tamper.effects import PAPER_EFFECTS, Effect, EffectContext, make_effect
from mmrobust.tamper.layout import Layout, output_relpath, safe_stem, write_mvtamperbench_json
from mmrobust.tamper.manifest import (
    ERRORS_NAME,
    MANIFEST_NAME,
    BuildError,
    Donor,
    ManifestEntry,
    append_jsonl,
    read_manifest,
    sha256_file,
    write_jsonl_atomic,
)
from mmrobust.tamper.segments import encode_segments, join
from mmrobust.tamper.sources import discover_sources
from mmrobust.tamper.window import Position, WindowError, make_window, source_window

Style = Literal["mmrobust", "released"]
KEY_VERSION = 4
"""Resume-key schema (older outputs are rebuilt); 3: fixed-GOP keyframes and one SEI per
output; 4: x264 without macroblock-tree rate control (bit-reproducible builds)."""
MIN_SIDE = 16
TAMPER_PRESET = "veryfast"
"""Default x264 preset of tamper builds. At crf 18 on the sample clips
(benchmarks/tamper_throughput.py): 1.2-1.5 dB lower PSNR than ``fast`` (35.7-41.8 dB),
files no larger, encoding about 1.6-2x faster. ``ultrafast`` is about 2x faster again
with 2-3.5x larger files."""
"""Smallest accepted frame side in pixels: below it effects are meaningless (a 1x1 frame rotated is itself)."""


@dataclass(frozen=True)
class BuildConfig:
    """Everything that determines the outputs of a build.

    Attributes:
        effects: effect instances, names unique (default: the paper's five).
        duration: window length in seconds (paper: 1.0).
        position: ``start``/``middle``/``end`` or a fraction in [0, 1] (paper: middle).
        seed: seeds every random choice (donor, offset, noise, shuffle order).
        official_fps: window length ``int(fps) * duration`` as the released
            generator (implied by ``style="released"``).
        codec_control: re-encode originals with the same encoder and fps as the
            tampered clips (default) so container/codec/fps cannot give the label away.
        style: ``mmrobust`` (PyAV, exact fps) or ``released`` (OpenCV ``mp4v`` at
            ``int(fps)``, originals copied as-is -- reproduces the released dataset's leak).
        codec, crf, preset: PyAV encoder settings (``mmrobust`` style).
        segments: encode the frames all variants share once and join each output
            from segments (``mmrobust`` style; default). ``False``: one full encode
            per output (about 5x slower; same keyframe set, forced).
        layout: file naming; ``mvtamperbench`` also writes ``json/<task>.json``.
        task: task name recorded in the manifest (and the json file name).
        donors: explicit substitution donor pool; empty = the other sources of the build.
        min_side: smallest accepted frame side in pixels.
    """

    effects: tuple[Effect, ...] = field(
        default_factory=lambda: tuple(make_effect(n) for n in PAPER_EFFECTS)
    )
    duration: float = 1.0
    position: Position = "middle"
    seed: int = 0
    official_fps: bool = False
    codec_control: bool = True
    style: Style = "mmrobust"
    codec: str = DEFAULT_CODEC
    crf: int = DEFAULT_CRF
    preset: str = TAMPER_PRESET
    segments: bool = True
    layout: Layout = "native"
    task: str | None = None
    donors: tuple[Path, ...] = ()
    min_side: int = MIN_SIDE

    def __post_init__(self) -> None:
        names = [e.name for e in self.effects]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"effects must be unique; repeated: {', '.join(dupes)}")
        if TAMPER_ORIGINAL in names:
            raise ValueError("'original' is not an effect")

    @property
    def truncate_fps(self) -> bool:
        """Whether the window uses the released ``int(fps)`` truncation."""
        return self.official_fps or self.style == "released"

    @property
    def copy_originals(self) -> bool:
        """Whether originals are copied byte for byte instead of re-encoded."""
        return self.style == "released" or not self.codec_control


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


@dataclass
class SourceResult:
    """What building one source produced."""

    source: str
    entries: list[ManifestEntry] = field(default_factory=list)
    errors: list[BuildError] = field(default_factory=list)
    built: int = 0
    skipped: int = 0


@dataclass
class BuildReport:
    """Outcome of ``build``.

    Attributes:
        out_dir: the build folder.
        entries: every manifest entry now in ``manifest.jsonl`` (old and new).
        errors: this run's failures (also in ``errors.jsonl``).
        built, skipped: outputs written now / found complete and kept.
        json_rows: ``{task: rows}`` written for ``layout="mvtamperbench"``.
    """

    out_dir: Path
    entries: list[ManifestEntry]
    errors: list[BuildError]
    built: int
    skipped: int
    json_rows: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the build folder holds at least one clip."""
        return bool(self.entries)


# --- helpers ------------------------------------------------------------------------------


def _rng(seed: int, sha256: str, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), int(sha256[:15], 16)])


def _fraction_str(f: Fraction | int) -> str:
    return str(Fraction(f))


def _variant_key(
    plan: SourcePlan,
    variant: str,
    effect: Effect | None,
    config: BuildConfig,
    relpath: str,
    pool: Sequence[PoolVideo],
) -> str:
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
        "encoder": [config.codec, config.crf, config.preset, config.segments],
        "seed": config.seed,
        "path": relpath,
        "pool": sorted(p.sha256 for p in pool) if effect is not None and effect.needs_donor else [],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _is_done(entry: ManifestEntry | None, out_dir: Path) -> bool:
    if entry is None:
        return False
    path = out_dir / entry.video
    return path.is_file() and sha256_file(path) == entry.video_sha256


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
    rng = _rng(seed, plan.sha256, "substitution-donor")
    donor = candidates[int(rng.integers(len(candidates)))]
    offset = int(rng.integers(0, donor.frames - length + 1))
    return donor, offset


# --- one source ---------------------------------------------------------------------------


@dataclass
class _Variant:
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


def _open_writer(
    path: Path, fps: Fraction, info: VideoInfo, config: BuildConfig, gop: int
) -> FrameWriter:
    """The writer of one output or segment; ``gop``: fixed keyframe interval (the window's F)."""
    if config.style == "released":
        return OpenCVWriter(path, fps, info.width, info.height)
    return VideoWriter(
        path,
        fps,
        info.width,
        info.height,
        codec=config.codec,
        crf=config.crf,
        preset=config.preset,
        gop=gop,
    )


def _stream_variants(
    plan: SourcePlan,
    window: Window,
    variants: list[_Variant],
    out_dir: Path,
    out_fps: Fraction,
    config: BuildConfig,
) -> int:
    """One decode of the source into every variant's writer. Returns the decoded frame count.

    Keyframes (``mmrobust`` style): every ``F`` frames from 0, and again every
    ``F`` frames from output frame ``s`` (forced there), the same pattern as
    the joined segments.
    """
    for v in variants:
        v.writer = _open_writer(out_dir / v.relpath, out_fps, plan.info, config, window.n_frames)
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
                        rng=_rng(config.seed, plan.sha256, v.name), donor=v.donor_frames
                    )
                    out = v.effect.apply(held, ctx)
                    v.out_len = len(out)
                    assert v.writer is not None
                    for f in out:
                        v.writer.write(f)
                held = []
    return n


def _segment_variants(
    plan: SourcePlan,
    window: Window,
    variants: list[_Variant],
    out_dir: Path,
    out_fps: Fraction,
    config: BuildConfig,
) -> int:
    """Encode shared prefix/suffix once and each window separately, then join per variant.

    Returns the decoded frame count; outputs are written only when it matches
    the planned count (else the caller re-plans). Per-variant join failures
    are stored on the variant (``error``).
    """
    by_name = {v.name: v for v in variants}

    def _apply(held: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        out: dict[str, list[np.ndarray]] = {}
        for v in variants:
            if v.effect is not None:
                ctx = EffectContext(
                    rng=_rng(config.seed, plan.sha256, v.name), donor=v.donor_frames
                )
                out[v.name] = v.effect.apply(held, ctx)
        return out

    def _open(path: Path) -> VideoWriter:
        return VideoWriter(
            path,
            out_fps,
            plan.info.width,
            plan.info.height,
            codec=config.codec,
            crf=config.crf,
            preset=config.preset,
            gop=window.n_frames,
        )

    work = out_dir / "videos" / f".{plan.uid}.part{os.getpid()}.seg"
    try:
        res = encode_segments(
            plan.path, window, list(by_name), _apply, work, _open, TAMPER_ORIGINAL
        )
        if res.decoded != plan.info.frame_count:
            return res.decoded
        for v in variants:
            v.out_len = res.out_len[v.name]
            v.settings, v.padded = {**res.settings, "segmented": True}, res.padded
            try:
                v.frames = join(res, v.name, out_dir / v.relpath, out_fps)
            except MediaError as exc:
                v.error = str(exc)
        return res.decoded
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    out_fps = Fraction(int(info.fps)) if config.style == "released" else info.fps

    variants: list[_Variant] = []
    copy_original: _Variant | None = None
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
        key = _variant_key(plan, name, effect, config, rel, pool)
        old = done.get(key)
        if _is_done(old, out_dir):
            assert old is not None
            res.entries.append(old)
            res.skipped += 1
            continue
        v = _Variant(name=name, effect=effect, relpath=rel, key=key)
        if copied:
            copy_original = v
        else:
            variants.append(v)

    if copy_original is not None:
        dst = out_dir / copy_original.relpath
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.part{os.getpid()}")
        shutil.copyfile(plan.path, tmp)
        os.replace(tmp, dst)
        res.entries.append(
            _entry(
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
                donor, offset = choose_donor(plan, window.n_frames, pool, config.seed)
                frames = list(
                    iter_frames(
                        donor.path,
                        start=offset,
                        stop=offset + window.n_frames,
                        size=(info.width, info.height),
                    )
                )
                if len(frames) != window.n_frames:
                    raise MediaError(
                        donor.path, f"donor has only {offset + len(frames)} decodable frames"
                    )
                v.donor, v.donor_frames = (
                    Donor(source=str(donor.path), sha256=donor.sha256, offset=offset),
                    frames,
                )
            except (WindowError, MediaError) as exc:
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
                    n = _segment_variants(plan, window, variants, out_dir, out_fps, config)
                else:
                    n = _stream_variants(plan, window, variants, out_dir, out_fps, config)
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
            info = _with_count(info, n)
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
            _entry(
                plan, v, window, out_fps, info.frame_count, v.settings, v.padded, out_dir, config
            )
        )
        res.built += 1
    return res


def _with_count(info: VideoInfo, n: int) -> VideoInfo:
    return VideoInfo(
        path=info.path,
        width=info.width,
        height=info.height,
        fps=info.fps,
        frame_count=n,
        duration_s=float(n / info.fps),
        codec=info.codec,
        container=info.container,
        pix_fmt=info.pix_fmt,
        rotation=info.rotation,
    )


def _entry(
    plan: SourcePlan,
    v: _Variant,
    window: Window | None,
    out_fps: Fraction,
    n_source: int,
    encoder: dict[str, object],
    padded: bool,
    out_dir: Path,
    config: BuildConfig,
) -> ManifestEntry:
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


# --- whole build --------------------------------------------------------------------------


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


def _remove_stale_temps(out_dir: Path) -> None:
    videos = out_dir / "videos"
    if videos.is_dir():
        for tmp in list(videos.rglob(".*.part*")):
            if tmp.is_dir():  # a segment work folder
                shutil.rmtree(tmp, ignore_errors=True)
                continue
            with contextlib.suppress(OSError):
                tmp.unlink()


ProgressCallback = Callable[[SourceResult], None]


def build(
    sources: Sequence[str | Path],
    out_dir: str | Path,
    config: BuildConfig | None = None,
    *,
    jobs: int = 1,
    on_source: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
) -> BuildReport:
    """Build a tampered benchmark from ``sources`` into ``out_dir``.

    Args:
        sources: video files and/or folders (searched recursively).
        out_dir: build folder; gets ``videos/``, ``manifest.jsonl``,
            ``errors.jsonl`` and, for ``layout="mvtamperbench"``, ``json/``.
        config: what to build (default: the paper's five effects, 1 s, middle).
        jobs: worker processes, one source each at a time.
        on_start: called with the number of sources once they are planned.
        on_source: called in the main process after each source finishes.

    Returns:
        A ``BuildReport``. Bad sources never raise: they are in ``report.errors``.
        Do not run two builds into the same folder at once.
    """
    config = config or BuildConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(out)
    previous = read_manifest(out)
    done = {e.key: e for e in previous}
    plans, pool, errors = plan_sources(sources, config)
    if on_start:
        on_start(len(plans))
    for err in errors:
        if on_source:
            on_source(SourceResult(source=err.source, errors=[err]))
    results: list[SourceResult] = []

    def _collect(r: SourceResult) -> None:
        new = [
            e for e in r.entries if e.key not in done or done[e.key].video_sha256 != e.video_sha256
        ]
        if new:
            append_jsonl(out / MANIFEST_NAME, new)
        results.append(r)
        if on_source:
            on_source(r)

    if jobs <= 1 or len(plans) <= 1:
        for plan in plans:
            _collect(build_source(plan, config, out, pool, done))
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
            futures: dict[Future[SourceResult], SourcePlan] = {
                ex.submit(build_source, p, config, out, pool, done): p for p in plans
            }
            for fut in as_completed(futures):
                try:
                    _collect(fut.result())
                except Exception as exc:  # a worker crashed: one source lost, not the run
                    p = futures[fut]
                    _collect(
                        SourceResult(
                            source=str(p.path),
                            errors=[
                                BuildError(
                                    source=str(p.path),
                                    reason=f"worker failed: {type(exc).__name__}: {exc}",
                                )
                            ],
                        )
                    )

    merged: dict[str, ManifestEntry] = {e.id: e for e in previous if (out / e.video).is_file()}
    for r in results:
        for e in r.entries:
            merged[e.id] = e
        errors.extend(r.errors)
    entries = sorted(merged.values(), key=lambda e: e.id)
    write_jsonl_atomic(out / MANIFEST_NAME, entries)
    write_jsonl_atomic(out / ERRORS_NAME, errors)
    json_rows = write_mvtamperbench_json(out, entries) if config.layout == "mvtamperbench" else {}
    return BuildReport(
        out_dir=out,
        entries=entries,
        errors=errors,
        built=sum(r.built for r in results),
        skipped=sum(r.skipped for r in results),
        json_rows=json_rows,
    )


__all__ = [
    "MIN_SIDE",
    "TAMPER_PRESET",
    "BuildConfig",
    "BuildReport",
    "PoolVideo",
    "SourcePlan",
    "SourceResult",
    "build",
    "build_source",
    "choose_donor",
    "plan_sources",
]
