"""Where output clips go, and the released dataset's layout (``--layout mvtamperbench``).

``native``: ``videos/<uid>/<variant>.mp4`` (variant = ``original`` or the effect name).
``mvtamperbench``: the released naming, ``videos/<uid>_<position>_tampered_<token>_<duration>sec.mp4``
for tampered clips and ``videos/<uid>.<ext>`` for originals, plus ``json/<task>.json``
annotation rows (see ``../shared/data/mvtamperbench/README.md``, "Released annotation layout").
"""

from __future__ import annotations

import json
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from mmrobust.atomicfile import write_text
from mmrobust.schema import TAMPER_ORIGINAL, TAMPER_QUESTION, ManifestEntry
from mmrobust.schema.vocab import OFFICIAL_TOKENS as _TOKEN_OF

Layout = Literal["native", "mvtamperbench"]

STRUCTURED_QUESTION = TAMPER_QUESTION
"""The benchmark's structured prompt (``mmrobust.schema.TAMPER_QUESTION``; MVTamperBench
section 4.1 / appendix A.2.2)."""

OFFICIAL_TOKENS: tuple[str, ...] = tuple(_TOKEN_OF.values())
"""The released ``tamper_type`` tokens (``original|dropping|masking|repetition|rotate|substitution``)."""
DEFAULT_TASK = "tamper"


def safe_stem(stem: str) -> str:
    """File-name-safe version of a source stem: letters, digits and marks of any script and
    ``._-`` kept (NFC-normalised), the rest ``_``: ``電話`` stays ``電話``, ``vélo 1`` is
    ``vélo_1`` (issue 33.3: ids the sample browser can find by name)."""
    stem = unicodedata.normalize("NFC", stem)
    kept = (c if c in "._-" or unicodedata.category(c)[0] in "LNM" else "_" for c in stem)
    return "".join(kept) or "video"


def position_token(position: str | float) -> str:
    """``middle`` / ``start`` / ``end``, or ``p0.25`` for a fraction."""
    return position if isinstance(position, str) else f"p{position:g}"


def output_relpath(
    uid: str,
    variant: str,
    *,
    layout: Layout,
    position: str | float,
    duration: float,
    token: str | None,
    suffix: str = ".mp4",
) -> str:
    """Output path of one variant, relative to the build folder (posix)."""
    if layout == "native":
        return f"videos/{uid}/{variant}{suffix}"
    if variant == TAMPER_ORIGINAL:
        return f"videos/{uid}{suffix}"
    return (
        f"videos/{uid}_{position_token(position)}_tampered_{token or variant}"
        f"_{duration:g}sec{suffix}"
    )


def write_mvtamperbench_json(out_dir: Path, entries: Iterable[ManifestEntry]) -> dict[str, int]:
    """Write ``json/<task>.json`` for originals and the paper's five effects.

    Rows: ``video`` (path relative to ``out_dir``), ``question`` (the structured
    prompt), ``candidates`` ``["Yes", "No"]``, ``answer`` (``"Yes"`` for tampered),
    ``tamper_type`` (official token: ``original|dropping|masking|repetition|rotate|substitution``).
    Effects outside the paper's five are left out (they have no official token).

    Returns:
        ``{task: number of rows}``.
    """
    rows: dict[str, list[dict[str, object]]] = defaultdict(list)
    for e in sorted(entries, key=lambda x: x.id):
        token = TAMPER_ORIGINAL if e.tamper_type == TAMPER_ORIGINAL else e.official_token
        if token not in OFFICIAL_TOKENS:
            continue
        rows[e.task or DEFAULT_TASK].append(
            {
                "video": e.video,
                "question": STRUCTURED_QUESTION,
                "candidates": ["Yes", "No"],
                "answer": "No" if token == TAMPER_ORIGINAL else "Yes",
                "tamper_type": token,
            }
        )
    (out_dir / "json").mkdir(parents=True, exist_ok=True)
    for task, task_rows in rows.items():
        path = out_dir / "json" / f"{task}.json"
        write_text(path, json.dumps(task_rows, indent=1) + "\n")
    return {task: len(r) for task, r in rows.items()}


__all__ = [
    "DEFAULT_TASK",
    "OFFICIAL_TOKENS",
    "STRUCTURED_QUESTION",
    "Layout",
    "output_relpath",
    "position_token",
    "safe_stem",
    "write_mvtamperbench_json",
]
