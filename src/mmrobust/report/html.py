"""The self-contained HTML report (``index.html``): leaderboards, plots, metadata, sample browser.

The page opens offline: no CDN, CSS and JS inline, images as files beside it
(``thumbs/``, the PNG plots). Everything that comes from a model or a file
name is escaped by Jinja2's autoescaping, so a model answer containing
``<script>`` renders as text and never runs; the filter script reads only
``data-*`` attributes that we write.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from mmrobust import __version__
from mmrobust.report.thumbs import Strip, write_image_thumb, write_video_strip
from mmrobust.status import Status
from mmrobust.store import StoredRow

INDEX_FILE = "index.html"


@dataclass
class HtmlRun:
    """What the HTML report needs of one run folder.

    Attributes:
        label: the name shown for the run (usually the model spec).
        benchmark: "tamper", "mmr" or "generic".
        run: the contents of ``run.json``.
        metrics: the contents of ``metrics.json``.
        rows: the stored rows of the run.
    """

    label: str
    benchmark: str
    run: Mapping[str, Any]
    metrics: Mapping[str, Any]
    rows: Sequence[StoredRow] = field(default_factory=list)


@dataclass
class Table:
    """A table ready to render: a title, column names and string cells."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


def frame_to_table(frame: pd.DataFrame, title: str, note: str = "", *, digits: int = 3) -> Table:
    """Render a pandas frame as strings (``digits`` decimals for floats, "–" for missing).

    A named index (e.g. MMR's ``(Method, Metric)``) becomes leading columns.
    """
    if any(name is not None for name in frame.index.names):
        frame = frame.reset_index()

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        return str(v)

    return Table(
        title=title,
        columns=[str(c) for c in frame.columns],
        rows=[[cell(v) for v in rec] for rec in frame.itertuples(index=False)],
        note=note,
    )


def _timeline(
    n_frames: int,
    window: Mapping[str, Any] | None,
    shown: Mapping[str, Sequence[int]],
    predicted: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Geometry of the SVG timeline under a strip, in percent of the clip length."""
    n = max(1, n_frames)

    def pct(i: float) -> float:
        return round(100.0 * i / n, 3)

    out: dict[str, Any] = {"window": None, "marks": [], "predicted": []}
    if window is not None:
        start, end = int(window["start_frame"]), int(window["end_frame"])
        if end == start:  # a dropping seam: draw a thin bar at the cut
            out["window"] = {"x": pct(start) - 0.4, "w": 0.8, "seam": True}
        else:
            out["window"] = {"x": pct(start), "w": pct(end - start), "seam": False}
    for row_i, (label, indices) in enumerate(shown.items()):
        for i in indices:
            out["marks"].append({"x": pct(i + 0.5), "row": row_i, "label": label, "frame": i})
    for label, win in predicted.items():
        start, end = int(win["start_frame"]), int(win["end_frame"])
        out["predicted"].append({"x": pct(start), "w": max(0.8, pct(end - start)), "label": label})
    out["rows"] = max(1, len(shown))
    return out


def _sample_cards(runs: Sequence[HtmlRun], out_dir: Path, max_cards: int) -> list[dict[str, Any]]:
    """One card per sample (per dataset: equal ids in two datasets stay apart), with every answer."""
    by_sample: dict[tuple[str, str], list[tuple[HtmlRun, StoredRow]]] = {}
    for run in runs:
        data_hash = str(run.run.get("dataset", {}).get("data_hash", ""))
        for row in run.rows:
            by_sample.setdefault((data_hash, row.sample.id), []).append((run, row))
    cards: list[dict[str, Any]] = []
    rank = {"tamper": 0, "mmr": 1}

    def order(k: tuple[str, str]) -> tuple[int, str, str]:
        return (rank.get(by_sample[k][0][1].sample.benchmark, 2), k[1], k[0])

    for key in sorted(by_sample, key=order)[:max_cards]:
        pairs = by_sample[key]
        sample = pairs[0][1].sample
        true_window = next((r.window for _, r in pairs if r.window is not None), None)  # or derived
        window = true_window.model_dump() if true_window is not None else None
        strip: Strip | None = None
        if sample.video is not None and Path(sample.video).exists():
            strip = write_video_strip(Path(sample.video), out_dir, window=true_window)
        elif sample.image is not None and Path(sample.image).exists():
            strip = write_image_thumb(Path(sample.image), out_dir)
        shown = {run.label: row.frame_indices for run, row in pairs if row.frame_indices}
        predicted = {
            run.label: row.extra["pred_window"]
            for run, row in pairs
            if isinstance(row.extra.get("pred_window"), Mapping)
        }
        answers = []
        for run, row in pairs:
            correct = row.status is Status.OK and row.letter == row.answer
            answers.append(
                {
                    "model": run.label,
                    "raw": row.raw_text,
                    "letter": row.letter or "–",
                    "status": row.status.value,
                    "correct": "correct" if correct else "incorrect",
                    "error": row.error or "",
                    "covered": row.window_covered,
                    "pred_type": row.extra.get("pred_type"),
                }
            )
        video_kind = "video" if sample.video is not None else "image" if sample.image else "text"
        cards.append(
            {
                "id": sample.id,
                "benchmark": sample.benchmark,
                "kind": video_kind,
                "type": sample.tamper_type or sample.category or "–",
                "polarity": sample.polarity or "",
                "truth": f"{pairs[0][1].answer}. {sample.options.get(sample.answer, '')}",
                "question": sample.prompt or sample.question,
                "media": str(sample.video or sample.image or ""),
                "strip": strip,
                "timeline": _timeline(strip.n_frames, window, shown, predicted)
                if strip is not None and sample.video is not None
                else None,
                "answers": answers,
            }
        )
    return cards


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("mmrobust.report", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def write_html(
    out_dir: str | Path,
    runs: Sequence[HtmlRun],
    *,
    tables: Sequence[Table] = (),
    figures: Mapping[str, str] | None = None,
    title: str = "mmrobust report",
    max_cards: int = 2000,
    panels: Sequence[str] = (),
) -> Path:
    """Write ``out_dir/index.html`` (and ``out_dir/thumbs/``) for ``runs``.

    Args:
        out_dir: the report folder; created if missing.
        runs: the runs to show (any mix of benchmarks).
        tables: leaderboards and per-task tables, in display order.
        figures: caption -> PNG path relative to ``out_dir``.
        title: page title.
        max_cards: at most this many samples in the browser (tamper clips first, then by id).
        panels: extra HTML sections placed after the plots (the leak-audit panels).

    Returns:
        The path of ``index.html``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cards = _sample_cards(runs, out, max_cards)
    meta = [
        {
            "label": run.label,
            "benchmark": run.benchmark,
            "model": run.metrics.get("run", {}).get(
                "model", run.run.get("config", {}).get("model")
            ),
            "run": run.metrics.get("run", {}),
            "data": run.run.get("dataset", {}),
            "versions": run.run.get("versions", {}),
            "git": run.run.get("git_sha"),
            "n": run.metrics.get("n_samples")
            if run.benchmark != "mmr"
            else f"{run.metrics.get('pairs')} pairs ({2 * int(run.metrics.get('pairs') or 0)} questions)",
            "complete": run.metrics.get("complete", True),
            "parse_fail_rate": run.metrics.get("parse_fail_rate"),
            "error_rate": run.metrics.get("error_rate"),
            "defects": run.metrics.get("defects", []),
        }
        for run in runs
    ]
    types = sorted({c["type"] for c in cards})
    models = [run.label for run in runs]
    html = (
        _env()
        .get_template("index.html.j2")
        .render(
            title=title,
            generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            version=__version__,
            tables=list(tables),
            figures=dict(figures or {}),
            panels=list(panels),
            meta=meta,
            cards=cards,
            types=types,
            models=models,
            n_total=len(
                {
                    (str(run.run.get("dataset", {}).get("data_hash")), r.sample.id)
                    for run in runs
                    for r in run.rows
                }
            ),
        )
    )
    path = out / INDEX_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path


__all__ = ["INDEX_FILE", "HtmlRun", "Table", "frame_to_table", "write_html"]
