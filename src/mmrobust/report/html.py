"""The self-contained HTML report (``index.html``): leaderboards, plots, metadata, sample browser.

The page opens offline: no CDN, CSS and JS inline, images as files beside it
(``thumbs/``, the PNG plots), the sample browser's data in script files beside it
(``samples/``, :mod:`mmrobust.report.browser_files`) so the page stays small at any number
of rows. Everything that comes from a model or a file name is escaped: Jinja2
autoescapes the tables and metadata, and the sample browser's data travels as JSON
(``<`` escaped) that the page script only ever puts into the DOM as text. A model answer
containing ``<script>`` renders as text and never runs.

Extending the page: pass :class:`Section` objects (``sections=``) to add a
panel of your own between the plots and the run metadata (its body rendered by
:func:`render_section` with the same autoescaping environment), and add lines to
a run's metadata with ``RunView.extra_meta``. A run is the report's one run view,
:class:`mmrobust.report.view.RunView`.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import pandas as pd

from mmrobust import __version__
from mmrobust.atomicfile import write_text
from mmrobust.report.browser import MAX_THUMBS, THUMB_SECONDS, script_json
from mmrobust.report.browser_files import write_browser
from mmrobust.report.stability import stability_text
from mmrobust.report.units import MISSING, pct_sign
from mmrobust.report.view import RunView
from mmrobust.store import StoredRow

INDEX_FILE = "index.html"


def HtmlRun(
    label: str,
    benchmark: str,
    run: Mapping[str, Any],
    metrics: Mapping[str, Any],
    rows: Sequence[StoredRow] = (),
    dataset: str = "",
    extra_meta: Sequence[tuple[str, str]] = (),
) -> RunView:
    """A :class:`~mmrobust.report.view.RunView` built from its parts (the page's old run type).

    Args:
        label: the name shown for the run (usually the model spec).
        benchmark: its family id.
        run: the contents of ``run.json``.
        metrics: the contents of ``metrics.json``.
        rows: the stored rows of the run.
        dataset: the dataset's display name (default: ``run.json``'s dataset name).
        extra_meta: more ``(name, value)`` lines for the run's metadata block.
    """
    return RunView(
        Path(label), run, metrics, list(rows), label=label, bench=benchmark,
        dataset_label=dataset, extra_meta=list(extra_meta),
    )  # fmt: skip


@dataclass
class Table:
    """A table ready to render: a title, column names and string cells.

    Attributes:
        title: heading above the table.
        columns: column names.
        rows: string cells, one list per row.
        note: caption under the table.
        row_classes: a CSS class per row ("" or ``published`` for a paper's reference row).
        group: ``tamper`` / ``mmr`` / ``generic`` (the published-rows toggle applies to all).
        published_default: its published rows are shown when the page opens (runs on the
            released benchmark); the page's toggle starts on only when every such table's is.
        links: first-cell text -> page it links to (a model's robustness card, ``report.card``).
    """

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    row_classes: list[str] = field(default_factory=list)
    group: str = ""
    published_default: bool = True
    links: dict[str, str] = field(default_factory=dict)

    def row_class(self, i: int) -> str:
        """CSS class of row ``i``."""
        return self.row_classes[i] if i < len(self.row_classes) else ""

    @property
    def has_published(self) -> bool:
        """Whether some row is a published reference row."""
        return "published" in self.row_classes


@dataclass
class Section:
    """An extra panel of the page (e.g. a leak audit), placed after the plots.

    Attributes:
        id: HTML id (also the navigation anchor).
        title: heading and navigation label.
        html: the panel's body, already escaped (:func:`render_section`).
    """

    id: str
    title: str
    html: markupsafe.Markup


def frame_to_table(
    frame: pd.DataFrame,
    title: str,
    note: str = "",
    *,
    digits: int = 1,
    row_classes: Sequence[str] = (),
    group: str = "",
) -> Table:
    """Render a pandas frame as strings (``digits`` decimals for floats, "–" for missing).

    A named index (e.g. MMR's ``(Method, Metric)``) becomes leading columns.
    """
    if any(name is not None for name in frame.index.names):
        frame = frame.reset_index()

    def cell(v: Any) -> str:
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            return MISSING
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        return str(v)

    return Table(
        title=title,
        columns=[str(c) for c in frame.columns],
        rows=[[cell(v) for v in rec] for rec in frame.itertuples(index=False)],
        note=note,
        row_classes=list(row_classes),
        group=group,
    )


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("mmrobust.report", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _asset(name: str) -> str:
    """A static file of the templates folder (CSS, JS), inlined into the page as is."""
    return resources.files("mmrobust.report").joinpath("templates", name).read_text("utf-8")


def render_section(template: str, **context: Any) -> markupsafe.Markup:
    """Render a Jinja2 template string with autoescaping, for :class:`Section`'s ``html``."""
    return markupsafe.Markup(_env().from_string(template).render(**context))


def _prompt_line(run: Mapping[str, Any]) -> str:
    p = run.get("prompt", {})
    if not isinstance(p, Mapping):
        return str(p)
    return ", ".join(f"{k}={v}" for k, v in p.items())


def _media_line(block: Mapping[str, Any]) -> str:
    frames = str(block.get("frames", MISSING))
    if block.get("text_only"):
        return "none: a text-only run (--text-only)"
    if frames.startswith("none"):
        return "none: the model reads only the question"
    return frames


def run_metadata(run: RunView) -> list[tuple[str, str]]:
    """The ``(name, value)`` lines of a run's metadata block, rates in percent; the
    extraction line states the family's failure rule (``BenchmarkFamily.failure_rule``)."""
    m, info, family = run.metrics, run.info, run.family
    block = run.run_block
    data = info.get("dataset", {})
    if family.paired:
        pairs = int(m.get("pairs") or 0)
        size = f"{pairs} pairs ({2 * pairs} questions)"
    else:
        size = str(m.get("n_samples", "–"))
    if run.interrupted:
        size += f" ({run.interrupted})"
    versions = " · ".join(f"{k} {v}" for k, v in info.get("versions", {}).items())
    if info.get("git_sha"):
        versions += f" · git {info['git_sha']}"
    lines = [
        ("model", str(block.get("model", info.get("config", {}).get("model", MISSING)))),
        ("dataset", f"{run.dataset_name} · {data.get('source', MISSING)}"),
        ("data sha256", str(data.get("data_hash", MISSING))),
        ("prompt", _prompt_line(block)),
        ("media sent", _media_line(block)),
        (
            "extraction",
            f"{block.get('extraction', MISSING)} "
            f"({family.failure_rule(str(block.get('failures') or 'exclude'))})",
        ),
        (
            "samples",
            f"{size} · parse-fail rate {pct_sign(m.get('parse_fail_rate'))} · error rate "
            f"{pct_sign(m.get('error_rate'))}",
        ),
        ("versions", versions or MISSING),
    ]
    stability = stability_text(m)
    if stability:  # --repeats: how far the answer moves between asks
        lines.insert(-1, ("sampling stability", stability))
    ref = block.get("reference")
    if isinstance(ref, dict):  # official scoring: the reference code and version reproduced
        lines.insert(
            5,
            (
                "reference",
                f"{ref.get('repo')} @ {ref.get('name')} ({ref.get('date')}): "
                f"{ref.get('description')}" + _versions_note(block),
            ),
        )
    if m.get("defects"):
        lines.append(("data defects", "; ".join(m["defects"])))
    return lines + list(run.extra_meta)


_ABS_PATH = re.compile(r"(?<![\w/.~-])/(?!/)[^\s·,;()\[\]]+")
"""A POSIX absolute path inside a metadata value (not a URL's ``//host/...`` or ``a/b``)."""


def relative_paths(value: str, base: str | Path) -> markupsafe.Markup:
    """``value`` for the page, each absolute path in it shown relative to ``base`` (the
    report folder) with the full path on hover: ``<span class="path" title="/full">rel</span>``.

    The run folder records absolute paths of the machine that made it (``run.json``'s
    ``dataset.source``, a local model path); ``../runs/x.json`` says where the file is from
    the report, the full path stays one hover away. The rest of the text is escaped.
    """
    root = Path(base).resolve()
    parts: list[str] = []
    last = 0
    for m in _ABS_PATH.finditer(value):
        full = m.group(0)
        parts.append(str(markupsafe.escape(value[last : m.start()])))
        rel = os.path.relpath(full, root)
        parts.append(
            f'<span class="path" title="{markupsafe.escape(full)}">{markupsafe.escape(rel)}</span>'
        )
        last = m.end()
    parts.append(str(markupsafe.escape(value[last:])))
    return markupsafe.Markup("".join(parts))


def _versions_note(block: Mapping[str, Any]) -> str:
    """``"; decisions at e8e78f0, prompt as sent at eb58e9e"`` for an official tamper run."""
    decision, prompt = block.get("decision_reference"), block.get("prompt_reference")
    if not decision or not prompt:
        return ""
    return f"; decisions at {decision}, prompt as sent at {prompt}"


@dataclass
class DatasetPart:
    """One dataset's share of the page: its leaderboards, plots and run metadata, each
    folded under a ``<details>`` (the first dataset's leaderboards open) and linked from the
    contents bar.

    Attributes:
        index: its position (the anchors ``lb-N``, ``pl-N``, ``md-N``).
        name: the dataset's display name (``RunView.dataset_name``).
        tables: its leaderboards and task tables.
        figures: its plots (``caption``, ``src``, ``width`` dicts).
        meta: its runs' metadata blocks.
    """

    index: int
    name: str
    tables: list[Table] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    meta: list[dict[str, Any]] = field(default_factory=list)


def dataset_of(text: str, names: Sequence[str]) -> str | None:
    """The dataset a table title or plot caption is about: the longest of ``names`` that
    follows `` on `` in it (``"F1 per tamper type on tamper-set, ..."`` -> ``tamper-set``),
    else ``None``. Titles and captions of this package all say ``on <dataset>``."""
    for name in sorted(names, key=len, reverse=True):
        if re.search(rf" on {re.escape(name)}(?=$|[\s,.;:)(])", text):
            return name
    return None


def dataset_parts(
    runs: Sequence[RunView],
    tables: Sequence[Table],
    figures: Sequence[dict[str, Any]],
    meta: Sequence[dict[str, Any]],
) -> list[DatasetPart]:
    """Split the page's tables, plots and metadata by dataset, datasets in the order of
    their first table (then of their first run). A table or plot that names no dataset
    stays with the one before it (the first dataset when it comes first)."""
    names = list(dict.fromkeys(r.dataset_name for r in runs))
    order = [n for n in (dataset_of(t.title, names) for t in tables) if n]
    order = list(dict.fromkeys([*order, *names])) or [""]
    parts = {n: DatasetPart(i, n) for i, n in enumerate(order)}
    current = order[0]
    for t in tables:
        current = dataset_of(t.title, names) or current
        parts[current].tables.append(t)
    current = order[0]
    for f in figures:
        current = dataset_of(str(f["caption"]), names) or current
        parts[current].figures.append(f)
    for m in meta:
        parts[m["dataset"] if m["dataset"] in parts else order[0]].meta.append(m)
    return list(parts.values())


def write_html(
    out_dir: str | Path,
    runs: Sequence[RunView],
    *,
    tables: Sequence[Table] = (),
    figures: Sequence[Any] = (),
    sections: Sequence[Section] = (),
    title: str = "mmrobust report",
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
) -> Path:
    """Write ``out_dir/index.html`` (and ``out_dir/thumbs/``, ``out_dir/samples/``) for ``runs``.

    The page carries the leaderboards, plots, panels and metadata; the sample browser's
    data is in ``samples/`` beside it (:mod:`mmrobust.report.browser_files`), written from
    the runs' rows streamed out of their stores, before the page.

    Args:
        out_dir: the report folder; created if missing.
        runs: the runs to show (any mix of benchmarks).
        tables: leaderboards and per-task tables, in display order.
        figures: :class:`mmrobust.report.plots.Figure` objects (``path`` under ``out_dir``,
            ``caption``, display ``width``); a caption -> path mapping is also accepted.
        sections: extra panels placed after the plots.
        title: page title.
        max_thumbs: at most this many samples get a thumbnail (the rest are listed without).
        thumb_seconds: time budget for drawing thumbnails (``None``: none).

    Returns:
        The path of ``index.html``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    browser = write_browser(runs, out, max_thumbs=max_thumbs, thumb_seconds=thumb_seconds)
    figs = []
    items = figures.items() if isinstance(figures, Mapping) else figures
    for f in items:
        if isinstance(f, tuple):  # (caption, relative path)
            figs.append({"caption": f[0], "src": f[1], "width": 640})
        else:
            src = Path(f.path).resolve().relative_to(out.resolve()).as_posix()
            figs.append({"caption": f.caption, "src": src, "width": f.width})
    meta = [
        {
            "label": r.label or r.model,
            "benchmark": r.benchmark,
            "dataset": r.dataset_name,
            "complete": r.complete,
            "interrupted": r.interrupted,
            "lines": [(k, relative_paths(v, out)) for k, v in run_metadata(r)],
        }
        for r in sorted(runs, key=lambda r: r.family.browser_rank)
    ]
    parts = dataset_parts(runs, list(tables), figs, meta)
    html = (
        _env()
        .get_template("index.html.j2")
        .render(
            title=title,
            generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            version=__version__,
            tables=list(tables),
            figures=figs,
            sections=list(sections),
            meta=meta,
            parts=parts,
            n_total=browser.n_samples,
            n_thumbs=browser.n_thumbs,
            has_video=browser.has_video,
            browser_json=markupsafe.Markup(script_json(browser.manifest)),
            css=markupsafe.Markup(_asset("report.css")),
            js=markupsafe.Markup(_asset("browser.js")),
            has_published=any(t.has_published for t in tables),
            published_checked=all(t.published_default for t in tables if t.has_published),
        )
    )
    path = out / INDEX_FILE
    write_text(path, html)
    return path


__all__ = [
    "INDEX_FILE",
    "DatasetPart",
    "HtmlRun",
    "Section",
    "Table",
    "dataset_of",
    "dataset_parts",
    "frame_to_table",
    "relative_paths",
    "render_section",
    "run_metadata",
    "write_html",
]
