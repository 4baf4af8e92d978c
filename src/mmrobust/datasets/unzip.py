"""Unzip once: the one implementation behind ``hf:`` tamper releases and MMR image zips.

Each zip is unzipped into a staging folder of its own, checked, and moved into
place whole; then its completion marker is written. The rules:

* a member's path must stay inside the zip's own tree (a ``\\`` in a name is read as
  ``/``): with ``own`` given
  (the released MVTamperBench zips, ``video/<source>.zip`` holding
  ``<source>/...``), every member lies under ``<own>/``, so ``perception.zip``
  can never write into ``clevrer/`` nor into the marker folder; without
  ``own`` the zip owns the whole ``into`` folder (MMR image zips). Absolute
  paths and ``..`` are refused, as are member names that occur twice;
* the marker (``<root>/.mmrobust-unzipped/<name with / as __>.json``) records
  the zip's identity (blob file name, size, mtime) and every member file with
  its size; on reuse the identity and every file's size are checked again, so a
  new revision of the zip (another blob) or a deleted or truncated file makes
  the zip be unzipped again, replacing its tree (old files never mix with new);
* a damaged zip (bad CRC, broken deflate stream, truncated) is one line
  (``DatasetError``), never a ``zlib.error`` traceback; the staging folder is
  removed whatever happens.

Callers hold :func:`unzip_lock` on ``root`` around their unzips (two processes
never unzip into one root at once). Standard library ``zipfile`` only.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import zipfile
import zlib
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.datasets.base import DatasetError

log = logging.getLogger(__name__)

MARKER_DIR = ".mmrobust-unzipped"
"""Folder under an unzip root that holds one completion marker per zip."""

STAGING_DIR = ".mmrobust-staging"
"""Folder under an unzip root where a zip is unzipped before it is moved into place."""

_RESERVED = (MARKER_DIR, STAGING_DIR, ".lock")

IGNORED_TOP = ("__MACOSX",)
"""Top folders of a zip that are skipped, not unzipped (resource forks a macOS zip tool adds)."""


def marker_path(root: Path, name: str) -> Path:
    """Where the completion marker of the zip called ``name`` lives under ``root``."""
    return root / MARKER_DIR / (name.replace("/", "__") + ".json")


def zip_identity(zip_path: Path) -> dict[str, Any]:
    """What identifies a zip's content: its blob's file name (the hub names blobs by their hash),
    size and modification time (``st_mtime_ns``), symlinks followed."""
    st = zip_path.stat()
    return {
        "blob": Path(os.path.realpath(zip_path)).name,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }


def _tree(root: Path, into: str, own: str | None) -> Path:
    """The folder a zip owns (replaced whole when it is unzipped again)."""
    base = root / into if into else root
    return base / own if own else base


def is_unzipped(zip_path: Path, name: str, root: Path) -> bool:
    """Whether ``root`` holds a complete unzip of this very zip.

    True only when the marker exists, names the same blob (name, size, mtime) and
    every member file it lists exists with its recorded size.
    """
    try:
        marker = json.loads(marker_path(root, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or not isinstance(marker.get("files"), dict):
        return False  # an older marker without the member list: unzip again, once
    identity = zip_identity(zip_path)
    if any(marker.get(k) != v for k, v in identity.items()):
        return False
    base = root / str(marker.get("into") or "")
    for rel, size in marker["files"].items():
        try:
            if (base / rel).stat().st_size != size:
                return False
        except OSError:
            return False
    return True


def check_members(
    infos: list[zipfile.ZipInfo], name: str, own: str | None
) -> tuple[list[zipfile.ZipInfo], dict[str, int]]:
    """Check a zip's member list; return the members to unzip and ``{relative path: size}`` of
    its files (members under ``__MACOSX/`` are skipped).

    Raises:
        DatasetError: a member path that is absolute, climbs out (``..``), lies outside
            ``own/`` (when given) or in mmrobust's own folders, or occurs twice.
    """
    names: list[str] = []
    files: dict[str, int] = {}
    kept: list[zipfile.ZipInfo] = []
    for info in infos:
        raw = info.filename
        if "\\" in raw:  # a Windows tool's separator: read it as one (zip names use "/")
            info.filename = raw.replace("\\", "/")
        path = PurePosixPath(info.filename)
        parts = path.parts
        if not parts or path.is_absolute() or ".." in parts:
            raise DatasetError(f"{name}: unsafe member path {raw!r}; the zip is not unzipped")
        if parts[0] in IGNORED_TOP:
            continue
        if own is not None and parts[0] != own:
            raise DatasetError(
                f"{name}: member {raw!r} lies outside the zip's own folder {own}/ "
                "(a zip may only fill its own folder); the zip is not unzipped"
            )
        if parts[0] in _RESERVED:
            raise DatasetError(f"{name}: member {raw!r} is in a folder mmrobust reserves")
        rel = path.as_posix()
        names.append(rel)
        kept.append(info)
        if not info.is_dir():
            files[rel] = info.file_size
    twice = sorted(n for n, c in Counter(names).items() if c > 1)
    if twice:
        raise DatasetError(
            f"{name}: {len(twice)} member name(s) occur more than once (first: {twice[0]!r}); "
            "which copy is meant cannot be told, the zip is not unzipped"
        )
    return kept, files


def _damaged(name: str, exc: BaseException) -> DatasetError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return DatasetError(
        f"{name}: the zip is damaged ({type(exc).__name__}: {text}); delete it and download "
        "it again (for hf: data, remove it from the hub cache)"
    )


def unzip_once(
    zip_path: Path, name: str, root: Path, *, into: str = "", own: str | None = None
) -> bool:
    """Unzip ``zip_path`` into ``root/into/`` unless a complete unzip of it is already there.

    Args:
        zip_path: the zip (symlinks followed: a hub snapshot links to its blob).
        name: the zip's name in messages and its marker (``"video/perception.zip"``).
        root: the unzip root (holds the markers and the staging folder).
        into: folder under ``root`` the members are unzipped into (``"video"``).
        own: the one top folder every member must lie under (``"perception"``); ``None``
            when the zip owns all of ``root/into`` (then ``into`` must be given).

    Returns:
        Whether the zip was unzipped now.

    Raises:
        DatasetError: a damaged zip, or a member list the module rules refuse (one line).
        OSError: the disk is full or not writable (the staging folder is removed).
    """
    if own is None and not into:
        raise ValueError("unzip_once: a zip without its own folder needs `into`")
    if is_unzipped(zip_path, name, root):
        return False
    tree = _tree(root, into, own)
    staging = root / STAGING_DIR / f"{name.replace('/', '__')}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        identity = zip_identity(zip_path)
        try:
            with zipfile.ZipFile(zip_path) as archive:
                kept, files = check_members(archive.infolist(), name, own)
                log.info("unzipping %s (%d files) into %s", name, len(files), tree)
                staging.mkdir(parents=True)
                for info in kept:
                    archive.extract(info, staging)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            raise _damaged(name, exc) from None
        marker = marker_path(root, name)
        marker.unlink(missing_ok=True)  # the old tree is going: never trust its marker again
        if tree.is_symlink():
            tree.unlink()  # a link the user made: drop the link, never what it points to
        elif tree.exists():
            shutil.rmtree(tree)
        tree.parent.mkdir(parents=True, exist_ok=True)
        moved = staging / own if own else staging
        if own and not moved.exists():
            moved.mkdir(parents=True)  # a zip with no members: an empty tree
        os.replace(moved, tree)
        marker.parent.mkdir(parents=True, exist_ok=True)
        record = {**identity, "into": into, "own": own, "files": files}
        write_text(marker, json.dumps(record))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def unzipped_size(zip_path: Path) -> int:
    """Bytes the zip's members take once unzipped (0 when it cannot be read)."""
    try:
        with zipfile.ZipFile(zip_path) as archive:
            return sum(m.file_size for m in archive.infolist())
    except (OSError, zipfile.BadZipFile):
        return 0


def unzip_lock(root: Path) -> Any:
    """An exclusive file lock on ``root`` (``filelock.FileLock`` on ``root/.lock``)."""
    from filelock import FileLock

    root.mkdir(parents=True, exist_ok=True)
    return FileLock(str(root / ".lock"))


__all__ = [
    "MARKER_DIR",
    "STAGING_DIR",
    "check_members",
    "is_unzipped",
    "marker_path",
    "unzip_lock",
    "unzip_once",
    "unzipped_size",
    "zip_identity",
]
