"""Where mmrobust keeps its caches (one rule for every cache, one helper per cache folder), and
the check of an output folder (:func:`out_folder_problem`)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$MMROBUST_CACHE``, else ``$XDG_CACHE_HOME/mmrobust``, else ``~/.cache/mmrobust``.

    Holds ``frames/`` (the frame cache, :func:`frame_cache_dir`), ``unzipped/``
    (zips unzipped once, :func:`unzip_dir`: the videos of ``hf:`` datasets, whose
    downloads stay in the hub's own cache, and MMR image zips), ``hub/`` (MMR
    datasets named by a bare hub id, :func:`hub_dir`) and ``mmr_demo/``
    (:func:`mmr_demo_dir`); each can be deleted at any time (it is rebuilt on demand).
    """
    env = os.environ.get("MMROBUST_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mmrobust"


def frame_cache_dir(root: Path | None = None) -> Path:
    """``<cache>/frames``: the default frame cache (``--cache-dir``)."""
    return (root or cache_root()) / "frames"


def unzip_dir(name: str, root: Path | None = None) -> Path:
    """``<cache>/unzipped/<name>``: where one dataset's zips are unzipped (``name`` is one
    path component, e.g. ``Srikant86--MVTamperBench``)."""
    return (root or cache_root()) / "unzipped" / name


def hub_dir(root: Path | None = None) -> Path:
    """``<cache>/hub``: the hub cache of MMR datasets named by a bare hub id."""
    return (root or cache_root()) / "hub"


def mmr_demo_dir(root: Path | None = None) -> Path:
    """``<cache>/mmr_demo``: the built-in MMR demo set, written on first use."""
    return (root or cache_root()) / "mmr_demo"


def out_folder_problem(out: str | Path, option: str = "--out") -> str | None:
    """Why ``out`` cannot be an output folder (``run --out``, ``report --out``), in one
    sentence with the fix; ``None`` when it is a folder or can be made (nothing is made here).

    A file at ``out``, or at a folder above it, is the problem this names (``mkdir`` would
    fail with ``[Errno 17] File exists`` or ``[Errno 20] Not a directory``).
    """
    p = Path(out).expanduser()
    for q in (p, *p.parents):
        if q.exists() or q.is_symlink():
            if q.is_dir():
                return None
            what = "is a file" if q == p else f"is inside {q}, which is a file"
            return (
                f"{option} {out} {what}, not a folder; choose a folder (it is made when "
                "missing), or move that file away"
            )
    return None


__all__ = [
    "cache_root",
    "frame_cache_dir",
    "hub_dir",
    "mmr_demo_dir",
    "out_folder_problem",
    "unzip_dir",
]
