"""Writing and reading the tamper manifest files: ``DIR/manifest.jsonl`` and ``DIR/errors.jsonl``.

The entry model is :class:`mmrobust.schema.ManifestEntry` (re-exported here with
``Donor`` and ``BuildError``): the builder writes it and the loader
(``mmrobust.datasets.manifest``) reads it, one schema for both. Every output
clip, originals included, gets one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from mmrobust.atomicfile import atomic_write, open_append
from mmrobust.schema.manifest import ERRORS_NAME, MANIFEST_NAME, BuildError, Donor, ManifestEntry


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def read_manifest(out_dir: Path) -> list[ManifestEntry]:
    """Entries of ``out_dir/manifest.jsonl``; unparsable lines (an interrupted write) are skipped."""
    path = out_dir / MANIFEST_NAME
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        with contextlib.suppress(ValidationError, json.JSONDecodeError):
            entries.append(ManifestEntry.model_validate_json(line))
    return entries


def write_jsonl_atomic(path: Path, rows: Iterable[BaseModel], *, durable: bool = True) -> None:
    """Write ``rows`` as JSON lines to ``path`` via a temporary file and rename.

    The temporary file is new (``mkstemp``: ``O_EXCL``, never a link's target) and the
    rename replaces ``path`` itself, so a ``path`` that is a symlink is replaced by a
    regular file and its target is never written (issue 27 item 5). Readers see the old
    file or the new one, never a part, whether or not ``durable``.

    ``durable`` also flushes the file to disk (``fsync``) before the rename, so that it
    survives a power cut, not only a crash of this process. The tamper builder passes
    ``False``: its clips are not flushed either, and a resume checks every clip's sha256,
    so a manifest lost to a power cut costs a rebuild, never a wrong row.
    """
    with atomic_write(path, durable=durable) as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")


def append_jsonl(path: Path, rows: Iterable[BaseModel]) -> None:
    """Append ``rows`` to ``path`` and flush them to disk (progress survives a crash).

    Raises:
        OSError: a link or a non-regular file is at ``path`` (:func:`open_append`: never
            appended through), or the write fails.
    """
    with open_append(path) as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")
        f.flush()
        os.fsync(f.fileno())


__all__ = [
    "ERRORS_NAME",
    "MANIFEST_NAME",
    "BuildError",
    "Donor",
    "ManifestEntry",
    "append_jsonl",
    "read_manifest",
    "sha256_file",
    "write_jsonl_atomic",
]
