"""File-name-safe, collision-free names made from model specs and dataset names.

Used for ``mmrobust run``'s run folders (``OUT/<model>/<dataset>/<task>``) and the
report's robustness cards (``report/cards/<model>.html``). A spec is scrubbed of
credentials (:func:`mmrobust.redact.redact`: a URL's ``user:pass@``, ``key=`` query
values, bearer tokens) before it becomes a name, cut to ``[A-Za-z0-9._-]`` (no
leading dot, no ``..``, no Windows device name, at most :data:`MAX_NAME`
characters), and two items whose names would collide (also when only their case
differs: macOS and Windows folders ignore case) each get a suffix from the sha256
of the full item, so the same spec always maps to the same name whatever else is
named beside it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from mmrobust.redact import redact

MAX_NAME = 80
"""Longest name made from a model spec or dataset name (characters)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}
"""Names Windows refuses as files or folders whatever the extension."""


def safe_name(text: str) -> str:
    """``text`` as one file-name-safe path component (no secrets, no separators, no dots
    alone), at most :data:`MAX_NAME` characters; never empty (``"x"``).

    >>> safe_name("openai:gpt-4o")
    'openai-gpt-4o'
    """
    name = re.sub(r"-+", "-", _UNSAFE.sub("-", redact(text)).replace("..", "-"))
    name = name.strip("-.") or "x"
    if name.split(".")[0].lower() in _RESERVED:
        name = f"{name}_"
    return name[:MAX_NAME].rstrip("-.") or "x"


def folder_names(items: Sequence[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """A distinct, safe folder name for each distinct item (a model spec, a dataset name).

    Items whose :func:`safe_name` would be equal ignoring case (or equal to a name in
    ``taken``: the caller's own files, such as ``report``) each get ``-`` and the first 8 hex digits of the sha256 of the item
    itself, so a name depends on the item and its collisions, never on the order given.

    >>> folder_names(["openai:gpt-4o", "openai-gpt-4o"])["openai:gpt-4o"]
    'openai-gpt-4o-1cffe337'
    """
    reserved = {t.lower() for t in taken}
    unique = list(dict.fromkeys(items))
    base = {item: safe_name(item) for item in unique}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
    out: dict[str, str] = {}
    for item, name in base.items():
        if counts[name.lower()] > 1 or name.lower() in reserved:
            digest = hashlib.sha256(item.encode("utf-8")).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}-{digest}"
        out[item] = name
    return out


__all__ = ["MAX_NAME", "folder_names", "safe_name"]
