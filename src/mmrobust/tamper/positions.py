"""One tampered set with several window positions (``mmrobust tamper --position start,middle,end``).

The ``when`` task (``mmrobust eval --task when``) needs clips tampered in
different parts of the video. ``build_positions`` builds one ordinary set per
position into ``OUT/<position>/`` (``start``, ``middle``, ``end``, ``p0.25`` for a
fraction; each resumes on its own) and joins them in ``OUT/manifest.jsonl``:

* every tampered clip of every position, ``id`` suffixed ``@<position>``
  (``bikes__rotation@start``) and ``video`` prefixed with its sub-folder;
* the originals once, from the first position's build (every sub-build encodes
  them identically; listing them once keeps one original per source, as in a
  one-position set);
* ``OUT/errors.jsonl`` joins the sub-builds' errors.

``mmrobust eval --data OUT`` then loads the joined set like any manifest.
``join_builds`` joins build folders that already exist (``mmrobust demo`` joins
its middle-position set with start and end builds), with ``video`` paths
relative to the joined folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from mmrobust.schema import TAMPER_ORIGINAL
from mmrobust.schema.window import Position, parse_position
from mmrobust.tamper.builder import BuildReport, ProgressCallback, SourceMap, build
from mmrobust.tamper.config import BuildConfig
from mmrobust.tamper.layout import position_token
from mmrobust.tamper.manifest import (
    ERRORS_NAME,
    MANIFEST_NAME,
    BuildError,
    ManifestEntry,
    read_manifest,
    write_jsonl_atomic,
)


def parse_positions(value: str) -> list[Position]:
    """A comma list of positions (``"start,middle,end"``, ``"0.1,0.5,0.9"``), duplicates refused.

    Raises:
        WindowError: a position that is not start, middle, end or a fraction in [0, 1].
        ValueError: empty or repeated positions.
    """
    items = [parse_position(p) for p in value.split(",") if p.strip()]
    if not items:
        raise ValueError("no position given")
    tokens = [position_token(p) for p in items]
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"positions repeat: {value!r}")
    return items


def joined_entry(entry: ManifestEntry, token: str, prefix: str) -> ManifestEntry:
    """``entry`` of the build ``token`` as a line of the joined manifest (``prefix``: the
    build folder relative to the joined one, posix)."""
    tampered = entry.tamper_type != TAMPER_ORIGINAL
    return entry.model_copy(
        update={
            "id": f"{entry.id}@{token}" if tampered else entry.id,
            "video": f"{prefix}/{entry.video}",
        }
    )


def join_builds(
    out_dir: str | Path, parts: Sequence[tuple[str, str | Path]]
) -> tuple[list[ManifestEntry], list[BuildError]]:
    """Join build folders into ``out_dir/manifest.jsonl`` (and ``errors.jsonl``).

    Args:
        out_dir: the joined set's folder (created).
        parts: ``(position token, build folder)`` pairs; the originals are taken
            from the first folder only.

    Returns:
        The joined entries (sorted by id) and errors.

    Raises:
        ValueError: a token repeats.
    """
    tokens = [t for t, _ in parts]
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"positions must be given once each, got {tokens}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    entries: list[ManifestEntry] = []
    errors: list[BuildError] = []
    for i, (token, folder) in enumerate(parts):
        prefix = Path(os.path.relpath(Path(folder).resolve(), out.resolve())).as_posix()
        entries += [
            joined_entry(e, token, prefix)
            for e in read_manifest(Path(folder))
            if i == 0 or e.tamper_type != TAMPER_ORIGINAL
        ]
        errors += [
            err.model_copy(update={"variant": f"{err.variant or 'all'}@{token}"})
            for err in read_errors(Path(folder))
        ]
    entries.sort(key=lambda e: e.id)
    write_jsonl_atomic(out / MANIFEST_NAME, entries)
    write_jsonl_atomic(out / ERRORS_NAME, errors)
    return entries, errors


def read_errors(folder: Path) -> list[BuildError]:
    """The lines of ``folder/errors.jsonl`` (unreadable lines skipped)."""
    path = folder / ERRORS_NAME
    out = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(BuildError.model_validate_json(line))
            except ValueError:
                continue
    return out


def build_positions(
    sources: Sequence[str | Path],
    out_dir: str | Path,
    config: BuildConfig,
    positions: Sequence[Position],
    *,
    jobs: int = 1,
    on_source: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    map_sources: SourceMap | None = None,
) -> BuildReport:
    """Build ``config`` at each of ``positions`` and join the sets (module docstring).

    ``jobs``, ``on_source``, ``on_start``, ``map_sources``: as :func:`mmrobust.tamper.build`,
    for each position's build.

    Returns:
        A ``BuildReport`` of the joined set (``entries`` as in ``OUT/manifest.jsonl``;
        ``built`` / ``skipped`` summed over the sub-builds).

    Raises:
        ValueError: no positions, or repeated ones.
    """
    tokens = [position_token(p) for p in positions]
    if not tokens or len(set(tokens)) != len(tokens):
        raise ValueError(f"positions must be given once each, got {tokens}")
    out = Path(out_dir)
    built = skipped = 0
    first_errors: list[BuildError] = []
    for position, token in zip(positions, tokens, strict=True):
        report = build(
            sources,
            out / token,
            replace(config, position=position),
            jobs=jobs,
            on_source=on_source,
            on_start=on_start,
            map_sources=map_sources,
        )
        built += report.built
        skipped += report.skipped
        first_errors = first_errors or report.errors
        if report.stopped:  # a full disk: no later position is started
            return replace(report, built=built, skipped=skipped)
    if not any((out / t).is_dir() for t in tokens):  # no usable source: write nothing
        return BuildReport(out_dir=out, entries=[], errors=first_errors, built=0, skipped=0)
    entries, errors = join_builds(out, [(t, out / t) for t in tokens if (out / t).is_dir()])
    return BuildReport(out_dir=out, entries=entries, errors=errors, built=built, skipped=skipped)


__all__ = ["build_positions", "join_builds", "joined_entry", "parse_positions", "read_errors"]
