"""The tamper manifest: ``DIR/manifest.jsonl`` (one line per output clip) and ``DIR/errors.jsonl``.

Format (docs/CONTRACTS.md, "tamper manifest"): ``ManifestEntry`` below. Every
output clip, originals included, gets one line. Windows are frames
``[start_frame, end_frame)`` and seconds, in the source timeline
(``window_source``) and in the output clip's own timeline (``window_output``);
both are ``null`` for originals.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from mmrobust.datasets.schema import Window

MANIFEST_NAME = "manifest.jsonl"
ERRORS_NAME = "errors.jsonl"


class Donor(BaseModel):
    """Where substituted frames came from: ``offset`` is the donor's first frame index."""

    model_config = ConfigDict(frozen=True)

    source: str
    sha256: str
    offset: int


class ManifestEntry(BaseModel):
    """One output clip.

    Attributes:
        id: ``<source uid>__<variant>``, unique in the build.
        source: absolute path of the source video; ``source_sha256`` its hash.
        video: output path relative to the build folder (posix); ``video_sha256`` its hash.
        tamper_type: ``"original"`` or the effect name (``"rotation"``, not the
            released token ``"rotate"``; see ``official_token``).
        params: the effect's validated parameters (``{}`` for originals).
        position, duration_s: the window request (``"middle"``, 1.0).
        window_source, window_output: tamper window in the source and output
            timelines (``null`` for originals). ``window_output`` spans the frames
            the effect wrote: empty ``[s, s)`` for dropping, ``2F`` frames for repetition.
        fps: output frame rate as a fraction string (``"30000/1001"``, ``"25"``).
        source_fps: the source's frame rate, same format.
        frames_source, frames_output: frame counts of source and output clip.
        width, height: encoded frame size of the output; ``padded`` when one
            pixel was added to reach even sizes (content is top-left
            ``source_width x source_height``).
        encoder: writer settings (``{"writer": "pyav", "codec": "libx264", "crf": 18, ...}``,
            ``{"writer": "opencv", "fourcc": "mp4v", ...}`` or ``{"writer": "copy"}``).
        seed: the build seed; donor: substitution's donor, else ``null``.
        task: task name given to the build, else ``null``.
        official_token: released-dataset ``tamper_type`` token (``"rotate"``), or ``null``.
        key: resume key: hash of everything that determines this output.
        mmrobust_version: version that wrote the clip.
    """

    model_config = ConfigDict(extra="allow")

    id: str
    source: str
    source_sha256: str
    video: str
    video_sha256: str
    tamper_type: str
    params: dict[str, Any]
    position: str | float
    duration_s: float
    window_source: Window | None
    window_output: Window | None
    fps: str
    source_fps: str
    frames_source: int
    frames_output: int
    width: int
    height: int
    source_width: int
    source_height: int
    padded: bool
    encoder: dict[str, Any]
    seed: int
    donor: Donor | None
    task: str | None
    official_token: str | None
    style: str
    key: str
    mmrobust_version: str


class BuildError(BaseModel):
    """One line of ``errors.jsonl``: a source (or one variant of it) that failed."""

    source: str
    reason: str
    variant: str | None = None


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


def write_jsonl_atomic(path: Path, rows: Iterable[BaseModel]) -> None:
    """Write ``rows`` as JSON lines to ``path`` via a temporary file and rename.

    The temporary file is new (``mkstemp``: ``O_EXCL``, never a link's target) and the
    rename replaces ``path`` itself, so a ``path`` that is a symlink is replaced by a
    regular file and its target is never written (issue 27 item 5).
    """
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(row.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(name, 0o644)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def append_jsonl(path: Path, rows: Iterable[BaseModel]) -> None:
    """Append ``rows`` to ``path`` and flush them to disk (progress survives a crash)."""
    with path.open("a", encoding="utf-8") as f:
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
