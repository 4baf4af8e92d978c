"""The leak-audit panel of the HTML report (``mmrobust report --audit audit.json``).

A small, separate block: :func:`audit_section` renders one ``audit.json``
(written by ``mmrobust audit --out``) with its own template,
``templates/audit.html.j2``, as a page :class:`~mmrobust.report.html.Section`
(placed after the plots, with a navigation link).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import markupsafe

from mmrobust.report.html import Section


def _fmt(x: Any) -> str:
    from mmrobust.report.units import pct

    return pct(x)  # the report's convention: percent, one decimal


def _values(v: Any) -> str:
    if isinstance(v, Mapping):
        return ", ".join(f"{k} ({n})" for k, n in v.items())
    return "–" if v is None else f"median {float(v):.4g}"


def load_audit(path: str | Path) -> dict[str, Any]:
    """Read an ``audit.json``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not an audit written by ``mmrobust audit``.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"audit file not found: {p}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or "window_coverage" not in data or "always_yes" not in data:
        raise ValueError(f"{p}: not an audit.json written by mmrobust audit")
    return data


def audit_section(audit: Mapping[str, Any], index: int = 0) -> Section:
    """The panel as a report :class:`~mmrobust.report.html.Section` (escaped HTML)."""
    from mmrobust.report.html import _env

    html = _env().get_template("audit.html.j2").render(a=audit, fmt=_fmt, values=_values)
    return Section(
        id=f"audit-{index}",
        title=f"Leak audit: {audit.get('dataset', '?')}",
        html=markupsafe.Markup(html),  # rendered by Jinja2 with autoescape on
    )


__all__ = ["audit_section", "load_audit"]
