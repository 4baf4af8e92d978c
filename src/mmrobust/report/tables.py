"""Report tables (pandas frames, rendered to Markdown and CSV).

* :func:`table7` — MVTamperBench Table 7 shape: Model, Drop, Mask, Repeat,
  Rotate, Substitute, Overall (F1), plus 95% CI of Overall, parse-fail and
  error rates, window coverage and a degenerate-predictor flag.
* :func:`per_task_table` — task x tamper type F1 of one run.
* :func:`ablation_table` — F1 (overall) of each model across values of a
  factor (tamper position: paper Table 2; duration: Table 4; prompt: Table 5).
* :func:`summary_text` — the few lines ``mmrobust eval`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

TABLE7_COLUMNS: tuple[tuple[str, str], ...] = (
    ("dropping", "Drop"),
    ("masking", "Mask"),
    ("repetition", "Repeat"),
    ("rotation", "Rotate"),
    ("substitution", "Substitute"),
)
"""Our effect names -> the column headings of the paper's Table 7, in its order."""


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and pd.isna(x)):
        return "–"
    return f"{float(x):.{digits}f}"


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * float(x):.1f}%"


def table7(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run (label -> tamper ``metrics.json``), Table 7 columns plus diagnostics.

    F1 values are fractions in [0, 1]; a type the run does not cover is NaN.
    Extra types (beyond the paper's five) get their own columns.
    """
    extra_types: list[str] = []
    known = {k for k, _ in TABLE7_COLUMNS}
    for m in runs.values():
        for t in m.get("f1", {}):
            if t != "overall" and t not in known and t not in extra_types:
                extra_types.append(t)
    rows = []
    for label, m in runs.items():
        f1 = m.get("f1", {})
        row: dict[str, Any] = {"Model": label}
        for key, head in TABLE7_COLUMNS:
            row[head] = f1.get(key)
        for t in extra_types:
            row[t] = f1.get(t)
        row["Overall"] = f1.get("overall")
        ci = m.get("f1_ci95", {}).get("overall")
        row["Overall CI95"] = f"[{_f(ci[0])}, {_f(ci[1])}]" if ci else ""
        row["n"] = m.get("n_samples")
        row["Parse fail"] = m.get("parse_fail_rate")
        row["Errors"] = m.get("error_rate")
        cov = [v for v in m.get("window_coverage", {}).values() if v is not None]
        row["Window coverage"] = sum(cov) / len(cov) if cov else None
        row["Flag"] = m.get("degenerate") or ""
        rows.append(row)
    return pd.DataFrame(rows)


def per_task_table(metrics: Mapping[str, Any]) -> pd.DataFrame:
    """Task x type F1 (rows: tasks; columns: Table 7 headings present, then Overall)."""
    per_task = metrics.get("per_task", {})
    rows = []
    for task, f1 in per_task.items():
        row: dict[str, Any] = {"Task": task}
        for key, head in TABLE7_COLUMNS:
            if key in f1:
                row[head] = f1[key]
        for t, v in f1.items():
            if t != "overall" and t not in dict(TABLE7_COLUMNS):
                row[t] = v
        row["Overall"] = f1.get("overall")
        rows.append(row)
    return pd.DataFrame(rows)


def ablation_table(values: Mapping[str, Mapping[str, float]], factor: str) -> pd.DataFrame:
    """Model x factor-value table of F1 (overall) (paper Tables 2, 4, 5).

    Args:
        values: model label -> {factor value -> F1 overall}.
        factor: column-group name ("position", "duration", "prompt").
    """
    levels: list[str] = []
    for v in values.values():
        for k in v:
            if k not in levels:
                levels.append(k)
    rows = [{"Model": m, **{f"{factor}={k}": v.get(k) for k in levels}} for m, v in values.items()]
    return pd.DataFrame(rows)


def to_markdown(
    frame: pd.DataFrame, *, rates: Sequence[str] = ("Parse fail", "Errors", "Window coverage")
) -> str:
    """Render a frame as a GitHub Markdown table (F1 to 3 decimals, rates as percentages)."""
    if frame.empty:
        return "_(no rows)_\n"
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            if c in rates:
                cells.append(_pct(None if pd.isna(v) else v))
            elif isinstance(v, float):
                cells.append(_f(v))
            else:
                cells.append("" if v is None else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary_text(metrics: Mapping[str, Any]) -> str:
    """A few human-readable lines summarising a ``metrics.json``."""
    bench = metrics.get("benchmark")
    size = (
        f"pairs: {metrics.get('pairs')}"
        if bench == "mmr"
        else f"samples: {metrics.get('n_samples')}"
    )
    lines = [f"benchmark: {bench}   {size}"]
    if bench == "tamper":
        f1 = metrics.get("f1", {})
        parts = [f"{head} {_f(f1.get(key))}" for key, head in TABLE7_COLUMNS if key in f1]
        parts += [
            f"{t} {_f(v)}"
            for t, v in f1.items()
            if t != "overall" and t not in dict(TABLE7_COLUMNS)
        ]
        lines.append("F1: " + "  ".join(parts) + f"  | Overall {_f(f1.get('overall'))}")
        if f1 and f1.get("overall") is None:
            lines.append("warning: no tampered clip of some type was scored (F1 shown as –)")
        if metrics.get("degenerate"):
            lines.append(f"warning: degenerate predictor ({metrics['degenerate']})")
    elif bench == "mmr":
        lines.append(f"RA {_f(metrics.get('RA'), 2)}%  MR {_f(metrics.get('MR'), 2)}%")
    else:
        lines.append(f"accuracy {_f(metrics.get('accuracy'))}")
    lines.append(
        f"parse-fail {_pct(metrics.get('parse_fail_rate', 0))}  errors {_pct(metrics.get('error_rate', 0))}"
    )
    if metrics.get("defects"):
        lines.append(f"data defects: {len(metrics['defects'])} (see metrics.json)")
    return "\n".join(lines)


__all__ = [
    "TABLE7_COLUMNS",
    "ablation_table",
    "per_task_table",
    "summary_text",
    "table7",
    "to_markdown",
]
