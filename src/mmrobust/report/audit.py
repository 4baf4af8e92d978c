"""The leak-audit panel of the HTML report (``mmrobust report --audit audit.json``).

A small, separate block: :func:`audit_section` renders one ``audit.json``
(written by ``mmrobust audit --out``) with its own template,
``templates/audit.html.j2``, as a page :class:`~mmrobust.report.html.Section`
(placed after the plots, with a navigation link).

:func:`load_audit` validates the file with :class:`AuditFile` (a pydantic model
of what ``mmrobust audit`` writes, ``mmrobust.audit.audit_dataset``) before
anything renders it, so a hand-edited or hostile file (a mistyped field, JSON
nested thousands of levels deep) is one ``ValueError`` line, never a
``RecursionError`` or a template ``UndefinedError`` (issue 27 item 9).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import markupsafe
from pydantic import BaseModel, ConfigDict, ValidationError

from mmrobust.datasets.base import MAX_JSON_DEPTH, check_depth, loads_json
from mmrobust.report.html import Section


def _fmt(x: Any) -> str:
    from mmrobust.report.units import pct

    return pct(x)  # the report's convention: percent, one decimal


def _values(v: Any) -> str:
    if isinstance(v, Mapping):
        return ", ".join(f"{k} ({n})" for k, n in v.items())
    return "–" if v is None else f"median {float(v):.4g}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AuditScores(_Model):
    """The benchmark's scores of one predictor (``audit.benchmark_scores``); fractions 0-1."""

    f1: float | None = None
    f1_per_type: dict[str, float | None] = {}
    balanced_accuracy: float | None = None
    accuracy: float | None = None


class AuditValues(_Model):
    """Most common values per class (``{value: count}``) or medians (one number)."""

    original: dict[str, int] | float | None = None
    tampered: dict[str, int] | float | None = None


class AuditField(AuditScores):
    """One metadata field's single-field rule: its scores and the values it saw."""

    values: AuditValues = AuditValues()


class AuditClassifier(AuditScores):
    """The all-fields classifier's scores."""

    model: str = ""


class AuditCoverage(_Model):
    """Window coverage under a frame policy (fractions 0-1; counts of windows)."""

    policy: str
    per_type: dict[str, float | None] = {}
    overall: float | None = None
    windows_known: int = 0
    windows_derived: int = 0
    windows_unknown: int = 0


class AuditFile(_Model):
    """An ``audit.json`` as ``mmrobust audit --out`` writes it (what the panel reads)."""

    dataset: str = "?"
    source: str | None = None
    n_clips: int
    n_original: int
    n_tampered: int
    n_groups: int
    cv: str = ""
    always_yes: AuditScores
    unreadable: list[str] = []
    fields: dict[str, AuditField] = {}
    classifier: AuditClassifier | None = None
    note: str | None = None
    window_coverage: AuditCoverage


def load_audit(path: str | Path) -> dict[str, Any]:
    """Read and validate an ``audit.json`` (see :class:`AuditFile`).

    Returns:
        The validated audit as a plain dict (every key the panel reads is present).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not valid JSON, nested deeper than ``MAX_JSON_DEPTH`` levels, or
            not an audit written by ``mmrobust audit`` (the first wrong field is named).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"audit file not found: {p}")
    try:
        data = check_depth(loads_json(p.read_bytes()), MAX_JSON_DEPTH)
    except ValueError as exc:
        raise ValueError(f"{p}: not valid JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or "window_coverage" not in data or "always_yes" not in data:
        raise ValueError(f"{p}: not an audit.json written by mmrobust audit")
    try:
        return AuditFile.model_validate(data).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top)"
        raise ValueError(
            f"{p}: not an audit.json written by mmrobust audit ({where}: {err['msg']})"
        ) from None


def audit_section(audit: Mapping[str, Any], index: int = 0) -> Section:
    """The panel as a report :class:`~mmrobust.report.html.Section` (escaped HTML)."""
    from mmrobust.report.html import _env

    html = _env().get_template("audit.html.j2").render(a=audit, fmt=_fmt, values=_values)
    return Section(
        id=f"audit-{index}",
        title=f"Leak audit: {audit.get('dataset', '?')}",
        html=markupsafe.Markup(html),  # rendered by Jinja2 with autoescape on
    )


__all__ = [
    "AuditClassifier",
    "AuditCoverage",
    "AuditField",
    "AuditFile",
    "AuditScores",
    "AuditValues",
    "audit_section",
    "load_audit",
]
