"""Report tables (pandas frames, rendered to Markdown, CSV and HTML).

Values in the frames are already in the display convention of
:mod:`mmrobust.report.units`: percentages, rounded (F1 and rates to one
decimal), so the CSV, ``report.md`` and ``index.html`` show the same numbers.

* :func:`table7` — MVTamperBench Table 7 shape: Model, Drop, Mask, Repeat,
  Rotate, Substitute, Overall (F1, %), plus the 95% CI of Overall, parse-fail and
  error rates, window coverage and a degenerate-predictor flag.
* :func:`per_task_table` — task x tamper type F1 of one run.
* :func:`ablation_table` — F1 (overall) of each model across values of a
  factor (tamper position: paper Table 2; duration: Table 4; prompt: Table 5).
* :func:`summary_text` — the lines ``mmrobust eval`` and ``rescore`` print.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust.families import get_family
from mmrobust.metrics.chance import detection_chance_of_metrics
from mmrobust.report.common import TABLE7_COLUMNS, to_markdown
from mmrobust.report.stability import stability_line
from mmrobust.report.units import (
    pct,
    pct_interval,
    pct_sign,
    rounded_pct,
)

if TYPE_CHECKING:  # imported where a frame is built: summary_text (eval, rescore) needs no pandas
    import pandas as pd

TABLE7_NOTE = (
    "F1 in % with tampered = positive class, per type on that type's clips plus all originals; "
    "Overall = unweighted mean over the types (MVTamperBench section 4.1). Overall 95% CI = "
    "bootstrap over source videos. Window coverage = share of tampered clips whose shown frames "
    "cover the tamper window (the window-coverage rule of the evaluation docs, dropping seams "
    "included; mean over types; – when the model was shown no sampled frames). "
    "Flag always_yes / always_no marks a degenerate predictor. Chance rows: the expected F1 of "
    "answering Yes to every clip and of a fair coin on the same clips, by the same definition "
    "(per type, then the mean; 66.7 and 50.0 when each type has as many clips as there are "
    "originals). Parse fail and Errors: shares of every answer of the run."
)
"""The caption of every Table 7 shaped table."""


def _coverage(metrics: Mapping[str, Any]) -> float | None:
    cov = [v for v in metrics.get("window_coverage", {}).values() if v is not None]
    return sum(cov) / len(cov) if cov else None


def _extra_types(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    known = {k for k, _ in TABLE7_COLUMNS}
    extra: list[str] = []
    for m in runs.values():
        for t in m.get("f1", {}):
            if t != "overall" and t not in known and t not in extra:
                extra.append(t)
    return extra


def table7(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run (label -> tamper ``metrics.json``), Table 7 columns plus diagnostics.

    F1 and rates are percentages rounded to one decimal; a type the run does not
    cover is NaN. Extra types (beyond the paper's five) get their own columns.
    """
    extra_types = _extra_types(runs)
    rows = []
    for label, m in runs.items():
        f1 = m.get("f1", {})
        row: dict[str, Any] = {"Model": label}
        for key, head in TABLE7_COLUMNS:
            row[head] = rounded_pct(f1.get(key))
        for t in extra_types:
            row[t] = rounded_pct(f1.get(t))
        row["Overall"] = rounded_pct(f1.get("overall"))
        ci = m.get("f1_ci95", {}).get("overall")
        row["Overall 95% CI"] = pct_interval(ci)
        row["n"] = m.get("n_samples")
        row["Parse fail"] = rounded_pct(m.get("parse_fail_rate"))
        row["Errors"] = rounded_pct(m.get("error_rate"))
        row["Window coverage"] = rounded_pct(_coverage(m))
        row["Flag"] = m.get("degenerate") or ""
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows)


CHANCE_LABELS = {
    "always_yes": "chance: always Yes (expected)",
    "coin_flip": "chance: coin flip (expected)",
}
"""The reference rows :func:`chance_rows` adds under a Table 7 shaped table."""


def chance_rows(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The chance levels of a Table 7 leaderboard's clips as reference rows in its columns:
    always Yes and a fair coin, F1 per type and Overall in % on the clips the runs were
    scored on (:func:`mmrobust.metrics.chance.detection_chance_of_metrics`, the figures of
    the card and the console). One pair of rows when the runs' clips give the same levels;
    else one pair per distinct set of levels, labelled with the first run that has it."""
    extra_types = _extra_types(runs)
    levels: dict[str, tuple[str, dict[str, Any]]] = {}
    for label, m in runs.items():
        guess = detection_chance_of_metrics(m)
        if guess["always_yes"]["overall"] is not None:
            levels.setdefault(json.dumps(guess, sort_keys=True), (label, guess))
    rows: list[dict[str, Any]] = []
    for label, guess in levels.values():
        for name, head in CHANCE_LABELS.items():
            f1 = guess[name]
            row: dict[str, Any] = {
                "Model": head + (f" on {label}'s clips" if len(levels) > 1 else "")
            }
            for key, col in TABLE7_COLUMNS:
                row[col] = rounded_pct(f1.get(key))
            for t in extra_types:
                row[t] = rounded_pct(f1.get(t))
            row["Overall"] = rounded_pct(f1.get("overall"))
            rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows)


def with_chance_rows(
    frame: pd.DataFrame, runs: Mapping[str, Mapping[str, Any]]
) -> tuple[pd.DataFrame, int]:
    """``frame`` (a :func:`table7` frame of ``runs``, maybe with more rows) with
    :func:`chance_rows` appended; and how many were appended."""
    import pandas as pd

    extra = chance_rows(runs)
    if extra.empty:
        return frame, 0
    both = pd.concat([frame, extra.reindex(columns=frame.columns)], ignore_index=True)
    if "n" in both:  # counts stay integers (the chance rows have none)
        both["n"] = both["n"].astype("Int64")
    return both, len(extra)


def per_task_table(metrics: Mapping[str, Any]) -> pd.DataFrame:
    """Task x type F1 in % (rows: tasks; columns: Table 7 headings present, then Overall)."""
    per_task = metrics.get("per_task", {})
    rows = []
    for task, f1 in per_task.items():
        row: dict[str, Any] = {"Task": task}
        for key, head in TABLE7_COLUMNS:
            if key in f1:
                row[head] = rounded_pct(f1[key])
        for t, v in f1.items():
            if t != "overall" and t not in dict(TABLE7_COLUMNS):
                row[t] = rounded_pct(v)
        row["Overall"] = rounded_pct(f1.get("overall"))
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows)


def ablation_table(values: Mapping[str, Mapping[str, float]], factor: str) -> pd.DataFrame:
    """Model x factor-value table of F1 (overall) in % (paper Tables 2, 4, 5).

    Args:
        values: model label -> {factor value -> F1 overall as a fraction}.
        factor: column-group name ("position", "duration", "prompt").
    """
    levels: list[str] = []
    for v in values.values():
        for k in v:
            if k not in levels:
                levels.append(k)
    rows = [
        {"Model": m, **{f"{factor}={k}": rounded_pct(v.get(k)) for k in levels}}
        for m, v in values.items()
    ]
    import pandas as pd

    return pd.DataFrame(rows)


def _f1_line(metrics: Mapping[str, Any]) -> str:
    f1 = metrics.get("f1", {})
    parts = [f"{head} {pct(f1.get(key))}" for key, head in TABLE7_COLUMNS if key in f1]
    parts += [
        f"{t} {pct(v)}" for t, v in f1.items() if t != "overall" and t not in dict(TABLE7_COLUMNS)
    ]
    ci = metrics.get("f1_ci95", {}).get("overall")
    notes = [f"95% CI {pct_interval(ci)}"] if ci and f1.get("overall") is not None else []
    guess = detection_chance_of_metrics(metrics)
    yes, coin = guess["always_yes"]["overall"], guess["coin_flip"]["overall"]
    if yes is not None:
        notes.append(f"chance: always Yes {pct(yes)}, coin flip {pct(coin)}")
    note = f" ({'; '.join(notes)})" if notes else ""
    return "F1 %: " + "  ".join(parts) + f"  | Overall {pct(f1.get('overall'))}{note}"


BALANCED_YES_F1 = 2 / 3
"""F1 of always answering Yes on a type with as many originals as tampered clips."""


def always_yes_f1(metrics: Mapping[str, Any]) -> float | None:
    """Macro F1 (fraction) that answering Yes to every clip scores on this run's clips, from
    the per-type counts of a tamper ``metrics.json``
    (:func:`mmrobust.metrics.chance.detection_chance_of_metrics`: 66.7% when each type has as
    many clips as there are originals); ``None`` without counts."""
    value: float | None = detection_chance_of_metrics(metrics)["always_yes"]["overall"]
    return value


def unbalanced_warning(always_yes: float | None) -> list[str]:
    """A console warning when always answering Yes scores well above a balanced set's 66.7%
    (fewer originals than tampered clips per type): F1 on such a set flatters a model that
    says Yes too often."""
    if always_yes is None or always_yes <= BALANCED_YES_F1 + 0.02:
        return []
    return [
        f"warning: fewer originals than tampered clips per type: answering Yes to every clip "
        f"scores F1 {pct(always_yes)} here ({pct(BALANCED_YES_F1)} on a balanced set); "
        "compare runs on this set with each other, and with that figure"
    ]


def _coverage_line(metrics: Mapping[str, Any]) -> str:
    cov = metrics.get("window_coverage", {})
    overall = _coverage(metrics)
    if overall is None:
        frames = metrics.get("run", {}).get("frames") or "no sampled frames"
        return f"window coverage: not measured (frames: {frames})"
    heads = dict(TABLE7_COLUMNS)
    parts = [f"{heads.get(t, t)} {pct(v)}" for t, v in cov.items() if v is not None]
    return (
        f"window coverage {pct_sign(overall)} (tampered clips with a shown frame inside the "
        f"window): {'  '.join(parts)}"
    )


def tamper_summary_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The ``tamper`` family's lines of :func:`summary_text`: F1 per type and Overall with its
    95% CI and the always-Yes F1, window coverage, the imbalance and degenerate warnings."""
    lines = [_f1_line(metrics)]
    f1 = metrics.get("f1", {})
    if f1 and f1.get("overall") is None:
        lines.append("warning: no tampered clip of some type was scored (F1 shown as –)")
    lines.append(_coverage_line(metrics))
    lines += unbalanced_warning(always_yes_f1(metrics))
    if metrics.get("degenerate"):
        lines.append(f"warning: degenerate predictor ({metrics['degenerate']})")
    return lines


def generic_summary_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The ``generic`` family's line of :func:`summary_text`: accuracy."""
    return [f"accuracy {pct_sign(metrics.get('accuracy'))}"]


def generic_headline(metrics: Mapping[str, Any]) -> str:
    """``acc 66.7%``: a generic run's score in a few characters."""
    return f"acc {pct_sign(metrics.get('accuracy'))}"


def summary_text(metrics: Mapping[str, Any]) -> str:
    """The lines ``mmrobust eval`` / ``rescore`` print for a ``metrics.json``.

    A head line (family, size, model), the family's own lines
    (``BenchmarkFamily.summary``: tamper F1 per type and Overall with its 95% CI,
    window coverage, flags; MMR RA and MR with 95% CIs and the pair counts; the
    ``--task`` lines of :mod:`mmrobust.report.tasks`; generic accuracy), then the
    parse-fail and error rates, the sampling stability of a ``--repeats`` run
    (:mod:`mmrobust.report.stability`) and the data defects. All values in percent
    (:mod:`mmrobust.report.units`).

    Raises:
        ValueError: ``metrics["benchmark"]`` names no registered family.
    """
    bench = metrics.get("benchmark")
    family = get_family(bench)
    run = metrics.get("run", {})
    head = f"{bench}: {family.size(metrics)}"
    if run.get("model"):
        head += f", model {run['model']}"
    if run.get("text_only"):
        head += " (text only: no images or frames sent)"
    lines = [head, *family.summary(metrics)]
    lines.append(
        f"parse-fail {pct_sign(metrics.get('parse_fail_rate', 0))}  "
        f"errors {pct_sign(metrics.get('error_rate', 0))}"
    )
    stability = stability_line(metrics)
    if stability:  # --repeats: how far the answer moves between asks
        lines.append(stability)
    if (metrics.get("reasoning") or {}).get("hint"):  # thinking model out of tokens
        lines.append(f"warning: {metrics['reasoning']['hint']}")
    if metrics.get("defects"):
        lines.append(f"data defects: {len(metrics['defects'])} (see metrics.json)")
    return "\n".join(lines)


def rescore_text(run_dir: str | Path) -> str:
    """What the last ``rescore`` of ``run_dir`` changed (the ``rescore`` block of ``run.json``)."""
    info = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    block = info.get("rescore") or {}
    if not block:
        return f"{run_dir}: no rescore recorded"
    (old_x, new_x), (old_f, new_f) = block["extraction"], block["failures"]

    def change(what: str, old: Any, new: Any) -> str:
        return f"{what} {old} -> {new}" if old != new else f"{what} {new} (unchanged)"

    return (
        f"rescored {run_dir}: {change('extraction', old_x, new_x)}, "
        f"{change('parse failures', old_f, new_f)}; {block['rows_reextracted']} of "
        f"{block['rows_total']} stored answers re-extracted, {block['rows_changed']} changed "
        f"letter or status; rewrote {', '.join(block['files'])}"
    )


__all__ = [
    "BALANCED_YES_F1",
    "CHANCE_LABELS",
    "TABLE7_COLUMNS",
    "TABLE7_NOTE",
    "ablation_table",
    "always_yes_f1",
    "chance_rows",
    "generic_headline",
    "generic_summary_lines",
    "per_task_table",
    "rescore_text",
    "summary_text",
    "table7",
    "tamper_summary_lines",
    "to_markdown",
    "unbalanced_warning",
    "with_chance_rows",
]
