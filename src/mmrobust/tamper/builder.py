"""The tamper builder: sources in, tampered clips + ``manifest.jsonl`` out (MVTamperBench sections 3.2-3.3).

Per source, in one streaming decode (default ``mmrobust`` style, ``tamper/segments.py``):

* every output clip is open from the start (temporary names, ``media/concat.py``);
* frames before the window ``[0, s)`` are encoded once, their packets muxed into
  every output;
* the window's ``F`` frames are held in memory (the only frames held, so memory
  does not grow with clip length); when complete, each effect turns them into its
  replacement frames, and each distinct window is encoded once into the outputs
  that play it (the original's; repetition muxes its packets again, dropping has none);
* frames after the window are encoded once, their packets muxed into every output;
* outputs are renamed into place when complete.

``style="released"`` writes every variant with its own OpenCV writer instead
(frames before/after the window go to every writer), as the released generator.

Substitution's donor frames come from a second streaming decode of the donor,
only of the ``F`` frames it needs. The frame count that places the window is
counted by demuxing (no decode); if decoding finds a different count, the
source is rebuilt once with the decoded count.

Writes are atomic (temporary file + rename). A re-run skips every output whose
manifest line has the same resume key and whose file still has the recorded
sha256; an interrupted build resumes from the lines already appended.

Modules, one job each:

* ``tamper/config.py``: ``BuildConfig`` (what to build) and its defaults;
* ``tamper/plan.py``: discovery, hashing and probing of sources, the donor pool, ``choose_donor``;
* ``tamper/source.py``: ``build_source``, every variant of one source;
* ``tamper/variants.py``: the streaming decode into the variants (segmented or full encodes);
* ``tamper/entries.py``: resume keys and ``ManifestEntry`` rows;
* this module: ``build`` (resume, stale temporaries, parallel jobs, manifest/errors/json files).
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from mmrobust.tamper.config import (
    MIN_SIDE,
    TAMPER_CODEC,
    TAMPER_PRESET,
    TAMPER_THREADS,
    BuildConfig,
    Style,
)
from mmrobust.tamper.entries import KEY_VERSION
from mmrobust.tamper.layout import write_mvtamperbench_json
from mmrobust.tamper.manifest import (
    ERRORS_NAME,
    MANIFEST_NAME,
    BuildError,
    ManifestEntry,
    read_manifest,
    write_jsonl_atomic,
)
from mmrobust.tamper.plan import PoolVideo, SourcePlan, choose_donor, plan_sources
from mmrobust.tamper.source import SourceResult, build_source
from mmrobust.workers import end_with_parent


@dataclass
class BuildReport:
    """Outcome of ``build``.

    Attributes:
        out_dir: the build folder.
        entries: every manifest entry now in ``manifest.jsonl`` (old and new).
        errors: this run's failures (also in ``errors.jsonl``), sorted by source, variant, reason.
        built, skipped: outputs written now / found complete and kept.
        json_rows: ``{task: rows}`` written for ``layout="mvtamperbench"``.
        stopped: the first full-disk failure (``source: reason``) when the build stopped at
            it (no source started after it; what was built is kept), else ``None``.
    """

    out_dir: Path
    entries: list[ManifestEntry]
    errors: list[BuildError]
    built: int
    skipped: int
    json_rows: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None

    @property
    def ok(self) -> bool:
        """True when the build folder holds at least one clip."""
        return bool(self.entries)


FULL_DISK = tuple(os.strerror(n) for n in (errno.ENOSPC, errno.EDQUOT))
"""Reasons of a full disk or quota (``No space left on device``, ``Disk quota exceeded``): a
build error that says one stops the build (every later source would fail the same way)."""


def full_disk(reason: str) -> bool:
    """Whether a build error's reason is a full disk or quota (:data:`FULL_DISK`)."""
    return any(text in reason for text in FULL_DISK)


def _remove_stale_temps(out_dir: Path) -> None:
    videos = out_dir / "videos"
    if videos.is_dir():
        stale = [*videos.rglob(".*.part*"), *videos.rglob(".*.tmp.*")]  # writers; write_with
        for tmp in stale:
            if tmp.is_dir():  # a segment work folder of a build before KEY_VERSION 5
                shutil.rmtree(tmp, ignore_errors=True)
                continue
            with contextlib.suppress(OSError):
                tmp.unlink()


def _remove_clip(out_dir: Path, video: str) -> None:
    """Delete one output and the folders it leaves empty under ``videos/``."""
    path = out_dir / video
    with contextlib.suppress(OSError):
        path.unlink()
    parent = path.parent
    while parent != out_dir and parent.is_relative_to(out_dir / "videos"):
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent


ProgressCallback = Callable[[SourceResult], None]

SourceMap = Callable[
    [Sequence[SourcePlan], BuildConfig, Path, Sequence[PoolVideo], Mapping[str, ManifestEntry]],
    Iterable[SourceResult],
]
"""Builds every planned source elsewhere (``distributed/tamper.py``: Ray tasks) and yields each
``build_source`` result as it completes: ``(plans, config, out_dir, donor pool, done) -> results``."""


def build(
    sources: Sequence[str | Path],
    out_dir: str | Path,
    config: BuildConfig | None = None,
    *,
    jobs: int = 1,
    on_source: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    map_sources: SourceMap | None = None,
    prune: bool = False,
) -> BuildReport:
    """Build a tampered benchmark from ``sources`` into ``out_dir``.

    Args:
        sources: video files and/or folders (searched recursively).
        out_dir: build folder; gets ``videos/``, ``manifest.jsonl``,
            ``errors.jsonl`` and, for ``layout="mvtamperbench"``, ``json/``.
        config: what to build (default: the paper's five effects, 1 s, middle).
        jobs: worker processes, one source each at a time; they end with this
            process (``mmrobust.workers.end_with_parent``) if it is killed.
        on_start: called with the number of sources once they are planned.
        on_source: called in the main process after each source finishes.
        map_sources: builds the sources instead of ``jobs`` local processes (``--executor ray``).
        prune: keep only this build's outputs: clips of an earlier build into ``out_dir``
            that ``config`` and ``sources`` no longer make (an effect left out, a source
            no longer given or that failed) are deleted and left out of the manifest
            (``tamper-data``, whose folders are its own). Default: they are kept.

    Returns:
        A ``BuildReport``. Bad sources never raise: they are in ``report.errors``.
        When no source is usable and ``out_dir`` does not exist, nothing is written
        (no empty folder). Do not run two builds into the same folder at once.
    """
    config = config or BuildConfig()
    out = Path(out_dir)
    plans, pool, errors = plan_sources(sources, config)
    if not plans and not out.exists():  # nothing to build: leave no empty folder behind
        for err in errors:
            if on_source:
                on_source(SourceResult(source=err.source, errors=[err]))
        return BuildReport(out_dir=out, entries=[], errors=errors, built=0, skipped=0)
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(out)
    previous = read_manifest(out)
    done = {e.key: e for e in previous}
    if on_start:
        on_start(len(plans))
    for err in errors:
        if on_source:
            on_source(SourceResult(source=err.source, errors=[err]))
    results: list[SourceResult] = []
    bad_donors: set[str] = set()
    progress: dict[str, ManifestEntry] = {e.id: e for e in previous}
    stopped: list[str] = []  # the first full-disk failure: no source is started after it

    def _stop_on(exc: OSError, where: Path) -> None:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise exc
        stopped.append(f"{where}: {exc.strerror or exc}")

    def _collect(r: SourceResult) -> None:
        for err in r.donor_errors:  # a bad donor is reported once, by the first source to draw it
            if err.source not in bad_donors:
                bad_donors.add(err.source)
                r.errors.append(err)
        new = [
            e for e in r.entries if e.key not in done or done[e.key].video_sha256 != e.video_sha256
        ]
        if new:  # progress survives a crash; temp file + rename never writes through a link
            progress.update((e.id, e) for e in new)
            try:
                write_jsonl_atomic(out / MANIFEST_NAME, progress.values(), durable=False)
            except OSError as exc:
                _stop_on(exc, out / MANIFEST_NAME)
        if not stopped:
            stopped.extend(f"{e.source}: {e.reason}" for e in r.errors if full_disk(e.reason))
        results.append(r)
        if on_source:
            on_source(r)

    if map_sources is not None:
        for result in map_sources(plans, config, out, pool, done):
            _collect(result)
            if stopped:
                break
    elif jobs <= 1 or len(plans) <= 1:
        for plan in plans:
            if stopped:
                break
            _collect(build_source(plan, config, out, pool, done))
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=ctx,
            initializer=end_with_parent,  # a killed `tamper --jobs N` leaves no worker behind
            initargs=(os.getpid(),),
        ) as ex:
            futures: dict[Future[SourceResult], SourcePlan] = {
                ex.submit(build_source, p, config, out, pool, done): p for p in plans
            }
            for fut in as_completed(futures):
                if stopped:  # the sources not started are not started; those running finish
                    for pending in futures:
                        pending.cancel()
                if fut.cancelled():
                    continue
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
    if prune:
        made = {e.id for r in results for e in r.entries}
        for stale in [e for e in merged.values() if e.id not in made]:
            _remove_clip(out, stale.video)
            del merged[stale.id]
    # canonical order: the same errors.jsonl whatever order workers (--jobs, Ray) finished in
    errors.sort(key=lambda e: (e.source, e.variant or "", e.reason))
    entries = sorted(merged.values(), key=lambda e: e.id)
    # no fsync (``write_jsonl_atomic``): the clips are not flushed either and resume checks
    # each one's sha256; an fsync cost 15-165 ms per write on this loaded machine
    json_rows: dict[str, int] = {}
    try:
        write_jsonl_atomic(out / MANIFEST_NAME, entries, durable=False)
        write_jsonl_atomic(out / ERRORS_NAME, errors, durable=False)
        if config.layout == "mvtamperbench":
            json_rows = write_mvtamperbench_json(out, entries)
    except OSError as exc:  # the manifest of the last source stays whole
        _stop_on(exc, out)
    return BuildReport(
        out_dir=out,
        entries=entries,
        errors=errors,
        built=sum(r.built for r in results),
        skipped=sum(r.skipped for r in results),
        json_rows=json_rows,
        stopped=stopped[0] if stopped else None,
    )


__all__ = [
    "FULL_DISK",
    "KEY_VERSION",
    "MIN_SIDE",
    "TAMPER_CODEC",
    "TAMPER_PRESET",
    "TAMPER_THREADS",
    "BuildConfig",
    "BuildReport",
    "PoolVideo",
    "ProgressCallback",
    "SourceMap",
    "SourcePlan",
    "SourceResult",
    "Style",
    "build",
    "build_source",
    "choose_donor",
    "full_disk",
    "plan_sources",
]
