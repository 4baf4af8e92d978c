"""The report page's layout for many runs (issue 30, "Smaller things a newcomer hit"): MMR
plots carry their pair counts, run metadata shows paths relative to the report (the full path
on hover), per-dataset parts of the page fold away under a contents bar. Each test fails on
the code before the change.

The data are tamper JSONL records without media (``constant:`` models answer them), as in
``tests/test_report_newuser.py``, so the runs take a fraction of a second.
"""

from __future__ import annotations

import html as _html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mmrobust.report.html import dataset_of, relative_paths
from mmrobust.report.plots import mmr_category_labels, plot_mmr_accuracy
from mmrobust.report.site import build_site
from tests.test_report_newuser import evaluate, tamper_jsonl


def test_mmr_plot_labels_carry_the_pair_counts(tmp_path: Path) -> None:
    metrics = {
        "pairs": 14,
        "positive_accuracy": 50.0,
        "negative_accuracy": 25.0,
        "categories": {
            "character": {"pairs": 12, "positive_accuracy": 50.0, "negative_accuracy": 25.0},
            "texture": {"pairs": 2, "positive_accuracy": 100.0, "negative_accuracy": 0.0},
            "shape": {"positive_accuracy": None, "negative_accuracy": None},  # no count known
        },
    }
    assert mmr_category_labels(metrics, {"character": "Char"}) == [
        "Char (n=12)", "texture (n=2)", "shape", "Overall (n=14)",
    ]  # fmt: skip
    fig = plot_mmr_accuracy(metrics, tmp_path / "mmr.png", label="m", dataset="demo")
    assert "14 pairs" in fig.caption
    assert fig.path.stat().st_size > 0


def test_relative_paths_keep_the_full_path_on_hover() -> None:
    text = relative_paths("set · /data/runs/set.jsonl, see http://h/x/y and a/b <i>", "/data/rep")
    assert str(text) == (
        'set · <span class="path" title="/data/runs/set.jsonl">../runs/set.jsonl</span>, '
        "see http://h/x/y and a/b &lt;i&gt;"
    )


def _metadata(page: str) -> str:
    return page.split('<section id="metadata">', 1)[1].split("</section>", 1)[0]


def test_run_metadata_shows_paths_relative_to_the_report(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = tamper_jsonl(tmp_path / "data" / "set.jsonl", 1)
    run = evaluate(data, "constant:A", tmp_path / "runs" / "a")
    page = build_site([run], tmp_path / "rep", max_thumbs=0).index_html.read_text("utf-8")
    meta = _metadata(page)
    full = str(data.resolve())
    rel = os.path.relpath(full, (tmp_path / "rep").resolve())
    assert rel == "../data/set.jsonl"
    assert f'<span class="path" title="{_html.escape(full)}">{rel}</span>' in meta
    shown = re.sub(r'title="[^"]*"', "", meta)  # the text a reader sees, hover titles aside
    assert full not in shown


def test_dataset_of_reads_the_name_after_on() -> None:
    names = ["set", "set-b"]
    assert dataset_of("F1 per tamper type on set-b, with CIs", names) == "set-b"
    assert dataset_of("Tamper detection F1 (%) on set (data sha256 ab12)", names) == "set"
    assert dataset_of("Leading questions on settings", names) is None


def _two_datasets(tmp_path: Path) -> Path:
    """Two runs on set-a, one on set-b: a page with two dataset parts."""
    runs = []
    for name, models in (("set-a", ("constant:A", "constant:B")), ("set-b", ("constant:A",))):
        data = tamper_jsonl(tmp_path / f"{name}.jsonl", 1)
        for m in models:
            runs.append(evaluate(data, m, tmp_path / "runs" / f"{name}-{m.replace(':', '-')}"))
    return build_site(runs, tmp_path / "rep", max_thumbs=0).index_html


def test_per_dataset_parts_fold_under_a_contents_bar(tmp_path: Path) -> None:
    page = _two_datasets(tmp_path).read_text("utf-8")
    nav = page.split("<nav>", 1)[1].split("</nav>", 1)[0]
    for anchor in ("lb-0", "pl-0", "md-0", "lb-1", "pl-1", "md-1"):
        assert f'href="#{anchor}"' in nav, anchor
        assert page.count(f'id="{anchor}"') == 1, anchor
    assert "<b>set-a</b>" in nav and "runs (2)</a>" in nav and "runs (1)</a>" in nav
    # the first dataset's leaderboards open, everything else folded with a summary line
    assert '<details class="part" id="lb-0" open>' in page
    assert '<details class="part" id="lb-1">' in page
    assert '<details class="part" id="md-0">' in page and '<details class="part" id="pl-1">' in page
    meta = _metadata(page)
    assert '<span class="part-sum">2 runs: constant:A, constant:B</span>' in meta
    # each table and plot sits in its own dataset's part
    lb1 = page.split('id="lb-1"', 1)[1].split("</details>", 1)[0]
    assert "on set-b" in lb1 and "on set-a" not in lb1
    pl0 = page.split('id="pl-0"', 1)[1].split("</details>", 1)[0]
    assert "on set-a" in pl0 and "on set-b" not in pl0


@pytest.mark.browser
def test_a_contents_link_opens_its_folded_part(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    index = _two_datasets(tmp_path)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", index.resolve().as_uri() + "#md-1"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert re.search(r'<details class="part" id="md-1" open="">', dom), dom[:3000]
    assert re.search(r'<details class="part" id="md-0">', dom)  # the others stay folded
    # the sample browser still runs
    assert re.search(r'id="count" data-ms="\d+">(\d+) of \1 samples<', dom)
