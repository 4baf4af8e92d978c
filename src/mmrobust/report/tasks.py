"""Leaderboards of the tasks ``type``, ``when`` and ``leading`` (``mmrobust eval --task``).

Input: the ``metrics.json`` dicts of :mod:`mmrobust.metrics.tasks`. Values are shown
in the report's convention (:mod:`mmrobust.report.units`): accuracies, F1 and rates
in percent to one decimal, RA and MR to two decimals as MMR Table 2.

* ``type``: accuracy, balanced accuracy, macro-F1 (95% CI of accuracy), recall per
  class, the derived detection F1 (comparable with the ``detect`` task's Overall),
  and a confusion-matrix heatmap per run (one figure, a panel per run);
* ``when``: the same for the thirds, accuracy per tamper type, windows that
  straddle a border, a confusion-matrix heatmap per run;
* ``leading``: RA/MR per presupposed effect in MMR Table 2's layout, and a
  summary with the positive / negative accuracies and the text-only floor
  (the best text-only run on the same data) beside every run.

Each table ends with a reference row: what a uniform random guess scores in
expectation (analytic, from the metrics' ``chance`` block).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmrobust.report.common import PALETTE, TABLE7_COLUMNS, Figure, _pyplot, _save, to_markdown
from mmrobust.report.tables import unbalanced_warning
from mmrobust.report.units import (
    pct,
    pct_interval,
    pct_sign,
    percent,
    percent_interval,
    percent_sign,
    rounded_pct,
    rounded_percent,
)

if TYPE_CHECKING:  # imported where a frame is built: eval's summary lines need no pandas
    import pandas as pd

HEADS: dict[str, str] = {
    "none": "none",
    **dict(TABLE7_COLUMNS),
    "original": "original",
    "beginning": "beginning",
    "middle": "middle",
    "end": "end",
    "nowhere": "nowhere",
}
"""Class key -> column heading (the effects as Table 7 names them)."""

CHANCE_LABEL = "chance (uniform guess, expected)"

TYPE_NOTE = (
    "Which kind of tampering, if any (--task type; docs/tasks.md). Accuracy, balanced accuracy "
    "(mean recall over classes) and macro-F1 over the classes, in %; 95% CI of accuracy by "
    "bootstrap over source videos; Recall columns per class (the type's clips answered right). "
    "Detection F1 = the detect task's Overall F1 computed from these answers (any answer but "
    "none counts as Yes), on the same clips. The last row is what a uniform guess scores."
)
WHEN_NOTE = (
    "Which third of the video is tampered, or none (--task when; truth: the third holding the "
    "window's centre, docs/tasks.md). Scores as for type; Straddling = tampered clips whose "
    "window crosses a border between thirds. Detection F1: any answer but nowhere counts as Yes."
)
LEADING_NOTE = (
    "MMR's method on the clips (--task leading): the positive question is the type question, the "
    "negative one presupposes an effect the clip does not have; RA = UR / pairs, MR = UF / (UR + "
    "UF) in % (MMR section 3, eqs. 1-2). Columns: the presupposed effect; Avg over all pairs. "
    "– marks an MR with no pair whose positive question was answered right."
)
LEADING_SUMMARY_NOTE = (
    "Negative acc. = leading questions answered by rejecting the premise; a language prior that "
    "always rejects premises scores 100 there. Text-only floor = the best text-only run "
    "(--text-only) on the same data, shown beside every run: a score near it owes nothing to the "
    "video."
)


def _head(key: str) -> str:
    return HEADS.get(key, key)


def _flag(m: Mapping[str, Any]) -> str:
    return str(m.get("degenerate") or "")


def multiclass_table(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per ``type`` or ``when`` run (label -> metrics), then the chance row; in %."""
    classes: list[str] = []
    for m in runs.values():
        classes += [c for c in m.get("classes", []) if c not in classes]
    when = any(m.get("task") == "when" for m in runs.values())
    rows = []
    for label, m in runs.items():
        row: dict[str, Any] = {
            "Model": label,
            "Accuracy": rounded_pct(m.get("accuracy")),
            "Accuracy 95% CI": pct_interval((m.get("ci95") or {}).get("accuracy")),
            "Balanced acc.": rounded_pct(m.get("balanced_accuracy")),
            "Macro-F1": rounded_pct(m.get("macro_f1")),
        }
        per = m.get("per_class", {})
        for c in classes:
            row[f"Recall {_head(c)}"] = rounded_pct(per.get(c, {}).get("recall"))
        if when:
            row["Straddling"] = m.get("straddling")
        row["Detection F1"] = rounded_pct((m.get("detection") or {}).get("f1", {}).get("overall"))
        row["n"] = m.get("n_samples")
        row["Parse fail"] = rounded_pct(m.get("parse_fail_rate"))
        row["Errors"] = rounded_pct(m.get("error_rate"))
        row["Flag"] = _flag(m)
        rows.append(row)
    chance = next((m.get("chance") for m in runs.values() if m.get("chance")), None)
    if chance and chance.get("accuracy") is not None:
        k = chance.get("n_options") or len(classes)
        row = {
            "Model": CHANCE_LABEL,
            "Accuracy": rounded_pct(chance["accuracy"]),
            "Accuracy 95% CI": "",
            "Balanced acc.": rounded_pct(chance["balanced_accuracy"]),
            "Macro-F1": rounded_pct(chance["macro_f1"]),
            **{f"Recall {_head(c)}": rounded_pct(1 / k) for c in classes},
            "Detection F1": rounded_pct(chance.get("detection_f1")),
        }
        rows.append(row)
    import pandas as pd

    frame = pd.DataFrame(rows)
    for col in ("n", "Straddling"):  # counts: integers, and None (shown –) on the chance row
        if col in frame:
            frame[col] = pd.Series(
                [None if pd.isna(v) else int(v) for v in frame[col]], dtype=object
            )
    return frame


def accuracy_per_type_table(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """``when`` accuracy (%) on the clips of each tamper type, one row per run."""
    types: list[str] = []
    for m in runs.values():
        types += [t for t in m.get("accuracy_per_type", {}) if t not in types]
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "Model": label,
                **{
                    _head(t): rounded_pct(m.get("accuracy_per_type", {}).get(t, {}).get("accuracy"))
                    for t in types
                },
            }
            for label, m in runs.items()
        ]
    )


def leading_table2(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """MMR Table 2 layout for ``leading`` runs: rows ``(Method, RA|MR)``, one column per
    presupposed effect (Table 7 headings), ``Avg`` over all pairs; chance rows last."""
    effects: list[str] = []
    for m in runs.values():
        effects += [e for e in m.get("by_presupposed", {}) if e not in effects]
    rows = []
    for label, m in runs.items():
        for key in ("RA", "MR"):
            row: dict[str, Any] = {"Method": label, "Metric": key}
            for e in effects:
                row[_head(e)] = rounded_percent(m.get("by_presupposed", {}).get(e, {}).get(key))
            row["Avg"] = rounded_percent(m.get(key))
            rows.append(row)
    chance = next((m.get("chance") for m in runs.values() if m.get("chance")), None)
    if chance:
        for key in ("RA", "MR"):
            rows.append(
                {
                    "Method": CHANCE_LABEL,
                    "Metric": key,
                    **{_head(e): rounded_percent(chance.get(key)) for e in effects},
                    "Avg": rounded_percent(chance.get(key)),
                }
            )
    import pandas as pd

    return pd.DataFrame(rows)


def text_only_floor(
    runs: Mapping[str, Mapping[str, Any]], text_only: Mapping[str, bool]
) -> tuple[str, Mapping[str, Any]] | None:
    """The text-only run with the highest negative accuracy (then RA), or ``None``."""
    floors = [(lab, m) for lab, m in runs.items() if text_only.get(lab)]
    if not floors:
        return None
    return max(floors, key=lambda x: (x[1].get("negative_accuracy") or 0, x[1].get("RA") or 0))


def leading_summary(
    runs: Mapping[str, Mapping[str, Any]], text_only: Mapping[str, bool] | None = None
) -> pd.DataFrame:
    """One row per ``leading`` run: RA, MR (95% CIs), positive / negative accuracy, premise
    accepted, the outcome counts, and the text-only floor's RA and negative accuracy beside it."""
    floor = text_only_floor(runs, text_only or {})
    rows = []
    for label, m in runs.items():
        ci = m.get("ci") or {}
        row: dict[str, Any] = {
            "Model": label,
            "RA": rounded_percent(m.get("RA")),
            "RA 95% CI": percent_interval(ci.get("RA")),
            "MR": rounded_percent(m.get("MR")),
            "MR 95% CI": percent_interval(ci.get("MR")),
            "Positive acc.": rounded_percent(m.get("positive_accuracy")),
            "Negative acc.": rounded_percent(m.get("negative_accuracy")),
            "Premise accepted": rounded_pct(m.get("premise_accepted_rate"), 2),
            "Floor RA": rounded_percent(floor[1].get("RA")) if floor else None,
            "Floor negative acc.": rounded_percent(floor[1].get("negative_accuracy"))
            if floor
            else None,
            "Pairs": m.get("pairs"),
            "UR": m.get("UR"),
            "UF": m.get("UF"),
            "NR": m.get("NR"),
            "NF": m.get("NF"),
            "Parse fail": pct(m.get("parse_fail_rate")),  # rates: one decimal, as text
            "Errors": pct(m.get("error_rate")),
        }
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows)


def floor_note(runs: Mapping[str, Mapping[str, Any]], text_only: Mapping[str, bool]) -> str:
    """The caption's sentence naming the text-only floor (or how to get one)."""
    floor = text_only_floor(runs, text_only)
    if floor is None:
        return (
            " No text-only run on this data: add one (mmrobust eval --task leading --text-only) "
            "to see the floor."
        )
    return f" Floor: {floor[0]}."


def plot_confusions(
    runs: Mapping[str, Mapping[str, Any]], path: str | Path, *, dataset: str = ""
) -> Figure:
    """Confusion-matrix heatmaps of ``type`` / ``when`` runs, one panel per run (small
    multiples, one colour scale): truth rows x answer columns, cells the share of the row's
    clips (%) with the count."""
    plt = _pyplot()
    labels = list(runs)
    task = next((m.get("task") for m in runs.values() if m.get("task")), "type")
    n_cls = max((len(m.get("confusion", {}).get("columns", [])) for m in runs.values()), default=3)
    ncols = min(3, max(1, len(labels)))
    nrows = -(-len(labels) // ncols)
    side = 0.42 * max(n_cls, 4) + 1.3
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(side * ncols + 1.0, side * nrows + 0.6), squeeze=False,
        layout="constrained",
    )  # fmt: skip
    try:
        im = None
        for ax, label in zip(axes.flat, labels, strict=False):
            conf = runs[label].get("confusion", {})
            rows: list[str] = list(conf.get("labels", []))
            cols: list[str] = list(conf.get("columns", []))
            counts = np.array(conf.get("matrix", []), dtype=float).reshape(len(rows), len(cols))
            totals = counts.sum(axis=1, keepdims=True)
            share = np.divide(
                100 * counts, totals, out=np.full_like(counts, np.nan), where=totals > 0
            )
            im = ax.imshow(share, vmin=0, vmax=100, cmap="Blues", aspect="equal")
            ax.set_xticks(range(len(cols)), [_head(c) for c in cols], rotation=45, ha="right",
                          fontsize=7.5)  # fmt: skip
            ax.set_yticks(range(len(rows)), [_head(r) for r in rows], fontsize=7.5)
            for (r, c), v in np.ndenumerate(share):
                if counts[r, c]:
                    ax.text(c, r, f"{int(counts[r, c])}", ha="center", va="center", fontsize=7,
                            color="white" if v >= 60 else "#1d2330")  # fmt: skip
            ax.set_title(label, fontsize=9)
        for ax in list(axes.flat)[len(labels) :]:
            ax.axis("off")
        if im is not None:
            fig.colorbar(im, ax=axes, label="share of the truth row (%)", shrink=0.6)
        where = f" on {dataset}" if dataset else ""
        fig.suptitle(f"--task {task}{where}: truth (rows) x answer (columns), counts", fontsize=10)
    except BaseException:
        plt.close(fig)
        raise
    caption = (
        f"Confusion matrices of --task {task}{f' on {dataset}' if dataset else ''}, one per "
        "run (rows: truth, columns: answer; colour: share of the row, numbers: clips): "
        + ", ".join(labels)
    )
    return _save(plt, fig, path, caption)


def plot_leading(
    runs: Mapping[str, Mapping[str, Any]], path: str | Path, *, dataset: str = ""
) -> Figure:
    """Grouped bars per run: RA and the accuracy on negative (leading) questions, in %."""
    plt = _pyplot()
    labels = list(runs)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(labels) + 2.0), 4.2), layout="constrained")
    try:
        for offset, key, name, colour in (
            (-0.2, "RA", "RA (both questions right)", PALETTE[0]),
            (0.2, "negative_accuracy", "premise rejected (negative acc.)", PALETTE[1]),
        ):
            vals = [np.nan if runs[k].get(key) is None else runs[k][key] for k in labels]
            ax.bar(x + offset, vals, 0.38, label=name, color=colour)
        ax.set_xticks(x, labels, rotation=25, ha="right")
        ax.set_ylim(0, 105)
        ax.set_ylabel("%")
        ax.set_title(f"--task leading{f' on {dataset}' if dataset else ''}")
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, loc="outside lower center", ncol=2)
    except BaseException:
        plt.close(fig)
        raise
    caption = (
        f"--task leading{f' on {dataset}' if dataset else ''}: RA and the share of leading "
        "questions whose premise was rejected, per run"
    )
    return _save(plt, fig, path, caption)


def leading_summary_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The lines ``mmrobust eval`` prints for a ``--task leading`` run (after its head line)."""
    ci = metrics.get("ci") or {}
    chance = metrics.get("chance") or {}
    per = metrics.get("by_presupposed", {})
    return [
        f"RA {percent_sign(metrics.get('RA'))} (95% CI {percent_interval(ci.get('RA'))})  "
        f"MR {percent_sign(metrics.get('MR'))} (95% CI {percent_interval(ci.get('MR'))})  "
        f"pairs: UR {metrics.get('UR')}, UF {metrics.get('UF')}, NR {metrics.get('NR')}, "
        f"NF {metrics.get('NF')}",
        f"positive questions {percent_sign(metrics.get('positive_accuracy'))}, leading questions "
        f"rejected {percent_sign(metrics.get('negative_accuracy'))}, premise accepted in "
        f"{pct_sign(metrics.get('premise_accepted_rate'))} of answered leading questions; "
        f"chance RA {percent_sign(chance.get('RA'))}, MR {percent_sign(chance.get('MR'))}",
        "RA / MR % per presupposed effect: "
        + "  ".join(
            f"{_head(e)} {percent(v.get('RA'))}/{percent(v.get('MR'))}" for e, v in per.items()
        ),
    ]


def multiclass_summary_lines(metrics: Mapping[str, Any], task: str) -> list[str]:
    """The lines ``mmrobust eval`` prints for a ``--task type|when`` run (after its head line)."""
    ci = (metrics.get("ci95") or {}).get("accuracy")
    chance_block = metrics.get("chance") or {}
    chance = chance_block.get("accuracy")
    lines = [
        f"accuracy {pct_sign(metrics.get('accuracy'))} "
        f"(95% CI {pct_interval(ci if metrics.get('accuracy') is not None else None)})  "
        f"balanced {pct_sign(metrics.get('balanced_accuracy'))}  "
        f"macro-F1 {pct_sign(metrics.get('macro_f1'))}  (uniform guess: {pct_sign(chance)})",
        "recall %: "
        + "  ".join(
            f"{_head(c)} {pct(v.get('recall'))}" for c, v in metrics.get("per_class", {}).items()
        ),
    ]
    det = (metrics.get("detection") or {}).get("f1", {})
    if det:
        negative = "nowhere" if task == "when" else "none"
        lines.append(
            f"detection F1 % (any answer but {negative} = Yes): "
            + "  ".join(f"{_head(t)} {pct(v)}" for t, v in det.items() if t != "overall")
            + f"  | Overall {pct(det.get('overall'))} (uniform guess "
            f"{pct(chance_block.get('detection_f1'))}, always Yes "
            f"{pct(chance_block.get('always_yes_detection_f1'))})"
        )
        lines += unbalanced_warning(chance_block.get("always_yes_detection_f1"))
    if task == "when":
        per_type = metrics.get("accuracy_per_type", {})
        lines.append(
            "accuracy % per tamper type: "
            + "  ".join(f"{_head(t)} {pct(v.get('accuracy'))}" for t, v in per_type.items())
        )
        if metrics.get("straddling"):
            lines.append(f"{metrics['straddling']} tamper windows straddle a border between thirds")
        lines += [f"warning: {w}" for w in metrics.get("warnings", [])]
    if metrics.get("degenerate"):
        lines.append(f"warning: degenerate predictor ({metrics['degenerate']})")
    return lines


def multiclass_headline(metrics: Mapping[str, Any]) -> str:
    """``acc 40.0%  macro-F1 35.2%``: a ``--task type|when`` run's score."""
    return f"acc {pct_sign(metrics.get('accuracy'))}  macro-F1 {pct_sign(metrics.get('macro_f1'))}"


def confusion_markdown(metrics: Mapping[str, Any]) -> str:
    """A run's confusion matrix (counts) as a Markdown table: truth rows x answer columns."""
    conf = metrics.get("confusion", {})
    cols = [_head(c) for c in conf.get("columns", [])]
    import pandas as pd

    frame = pd.DataFrame(
        conf.get("matrix", []),
        columns=cols,
        index=[_head(r) for r in conf.get("labels", [])],
    )
    frame.insert(0, "truth \\ answer", frame.index)
    return to_markdown(frame.reset_index(drop=True))


__all__ = [
    "CHANCE_LABEL",
    "LEADING_NOTE",
    "LEADING_SUMMARY_NOTE",
    "TYPE_NOTE",
    "WHEN_NOTE",
    "accuracy_per_type_table",
    "confusion_markdown",
    "floor_note",
    "leading_summary",
    "leading_summary_lines",
    "leading_table2",
    "multiclass_headline",
    "multiclass_summary_lines",
    "multiclass_table",
    "plot_confusions",
    "plot_leading",
    "text_only_floor",
]
