"""Folder names for ``mmrobust run`` and its ``--task`` list.

Model specs are scrubbed of credentials (:func:`mmrobust.redact.redact`: a URL's
``user:pass@``, ``key=`` query values) before they become names, cut to
``[A-Za-z0-9._-]`` (no leading dot, no Windows device name, at most
:data:`MAX_NAME` characters), and two items whose names would collide (also when
only their case differs: macOS and Windows folders ignore case) each get a suffix
from the sha256 of the full item, so the same spec always maps to the same folder
whatever else the command names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from mmrobust.redact import redact

REPORT_DIR = "report"
"""The report folder inside ``--out``."""

SUITE_FILE = "suite.json"
"""The plan and outcome file in the suite's ``--out`` folder."""

MAX_NAME = 80
"""Longest folder name made from a model spec or dataset name (characters)."""

ALL_TASKS = ("detect", "type", "when", "leading")
"""``--task all``: every task, in this order."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}
# names Windows refuses as folders whatever the extension; the report folder's name too
_TAKEN = {REPORT_DIR, SUITE_FILE}


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


def folder_names(items: Sequence[str]) -> dict[str, str]:
    """A distinct, safe folder name for each distinct item (a model spec, a dataset name).

    Items whose :func:`safe_name` would be equal ignoring case (or a reserved name of the
    suite's own folder) each get ``-`` and the first 8 hex digits of the sha256 of the item
    itself, so a name depends on the item and its collisions, never on the order given.

    >>> folder_names(["openai:gpt-4o", "openai-gpt-4o"])["openai:gpt-4o"]
    'openai-gpt-4o-d9a0d0a5'
    """
    unique = list(dict.fromkeys(items))
    base = {item: safe_name(item) for item in unique}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
    out: dict[str, str] = {}
    for item, name in base.items():
        if counts[name.lower()] > 1 or name.lower() in _TAKEN:
            digest = hashlib.sha256(item.encode("utf-8")).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}-{digest}"
        out[item] = name
    return out


def parse_tasks(values: Sequence[str]) -> list[str]:
    """``--task`` values (repeatable, each a comma list; ``all`` = :data:`ALL_TASKS`) as a list
    of distinct task names in the order given.

    Raises:
        ValueError: an unknown task name (one line listing the known ones), or none given.
    """
    from mmrobust.tasks import check_task

    names: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part:
                names.extend(ALL_TASKS if part == "all" else [check_task(part)])
    if not names:
        raise ValueError("--task: no task given; expected all or a list of " + ",".join(ALL_TASKS))
    return list(dict.fromkeys(names))


__all__ = [
    "ALL_TASKS",
    "MAX_NAME",
    "REPORT_DIR",
    "SUITE_FILE",
    "folder_names",
    "parse_tasks",
    "safe_name",
]
