"""The report's leaderboards fit a 1280 px wide window: the ``type`` and ``when`` tables (17 and
16 columns with the robustness-card link) were wider than the page and cut at its right edge
(scrolled inside their frame); tables of 12 columns or more are now tighter, with the model
name free to wrap.

The runs are text-only ``--task type`` / ``--task when`` evaluations of a hand-written manifest
(no media: a fraction of a second each); the page is laid out by headless Chromium at 1280 px
and every leaderboard's frame is measured.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.report.site import build_site
from tests.test_tasks import FIVE, balanced, balanced_when, write_manifest

MEASURE = """<script>
document.querySelectorAll('details').forEach(d => { d.open = true; });
const tables = [...document.querySelectorAll('#leaderboard .tablewrap')].map(w => ({
  title: (w.previousElementSibling || {}).textContent || '',
  shown: w.clientWidth, needed: w.scrollWidth, columns: w.querySelector('tr').cells.length,
}));
const pre = document.createElement('pre');
pre.id = 'measure';
pre.textContent = JSON.stringify({viewport: document.documentElement.clientWidth, tables});
document.body.appendChild(pre);
</script>"""


def _task_runs(tmp_path: Path) -> list[Path]:
    sets = {
        "type": write_manifest(tmp_path / "type-set", balanced(2, FIVE)),
        "when": write_manifest(tmp_path / "when-set", balanced_when(2)),
    }
    runs = []
    for task, data in sets.items():
        for model in ("constant:A", "random:0", "blind-overlap"):
            out = tmp_path / "runs" / f"{task}-{model.replace(':', '-')}"
            args = ["eval", "--data", str(data), "--task", task, "--model", model, "--text-only"]
            result = CliRunner().invoke(app, [*args, "--out", str(out), "--bootstrap", "0", "-q"])
            assert result.exit_code == 0, result.output
            runs.append(out)
    return runs


@pytest.mark.browser
def test_type_and_when_tables_fit_a_1280_px_window(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    index = build_site(_task_runs(tmp_path), tmp_path / "report", max_thumbs=0).index_html
    page = index.read_text("utf-8")
    measured = index.with_name("measured.html")
    measured.write_text(page.replace("</body>", MEASURE + "</body>"), "utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--window-size=1280,900", f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", measured.resolve().as_uri()],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found, dom[:2000]
    layout = json.loads(html.unescape(found.group(1)))
    assert 1200 <= layout["viewport"] <= 1280  # the window asked for (less a scroll bar)
    titles = {t["title"].split(" on ")[0]: t for t in layout["tables"]}
    assert {"Tamper type", "Tamper location (thirds)"} <= set(titles), list(titles)
    assert titles["Tamper type"]["columns"] >= 16
    cut = [
        (t["title"], t["shown"], t["needed"]) for t in layout["tables"] if t["needed"] > t["shown"]
    ]
    assert cut == []
