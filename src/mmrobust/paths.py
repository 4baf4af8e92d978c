"""Where mmrobust keeps its caches (one rule for every cache)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$MMROBUST_CACHE``, else ``$XDG_CACHE_HOME/mmrobust``, else ``~/.cache/mmrobust``.

    Holds ``frames/`` (the frame cache), ``unzipped/`` (the videos of ``hf:``
    datasets, unzipped; their downloads stay in the hub's own cache), ``hub/``
    (MMR datasets named by a bare hub id) and ``mmr_demo/``; each can be deleted
    at any time (it is rebuilt on demand).
    """
    env = os.environ.get("MMROBUST_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mmrobust"


__all__ = ["cache_root"]
