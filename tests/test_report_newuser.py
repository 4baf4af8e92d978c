"""What a new user trips on in ``report`` and ``compare`` (issue 33 items 1, 4, 5, 8, 9, 10;
issue 28 item 3, the published rows): each test fails on the code before the fix.

The data are tamper JSONL records without media (``constant:`` models answer them), so
the runs take a fraction of a second and every expected number is counted by hand.
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
from mmrobust.report.html import HtmlRun, run_metadata
from mmrobust.report.mmr import RELEASED_SHA256
from mmrobust.report.mmr import is_released_run as mmr_released
from mmrobust.report.site import build_site
from mmrobust.report.tamper import is_released_run as tamper_released

runner = CliRunner()
TYPES = ("dropping", "masking", "repetition", "rotation", "substitution")


def tamper_jsonl(path: Path, sources: int, originals: int | None = None) -> Path:
    """``sources`` sources x (an original + one clip per type), or only ``originals`` of the
    originals (an unbalanced set); answer A (Yes) for tampered clips, B (No) for originals."""
    lines = []
    for s in range(sources):
        if originals is None or s < originals:
            lines.append({"id": f"v{s}__original", "tamper_type": "original", "answer": "B",
                          "group": f"v{s}"})  # fmt: skip
        for t in TYPES:
            lines.append({"id": f"v{s}__{t}", "tamper_type": t, "answer": "A", "group": f"v{s}"})
    common = {"benchmark": "tamper", "question": "Tampered?", "options": {"A": "Yes", "B": "No"}}
    path.write_text("".join(json.dumps({**common, **x}) + "\n" for x in lines), encoding="utf-8")
    return path


def evaluate(data: Path, model: str, out: Path) -> Path:
    res = runner.invoke(app, ["eval", "--data", str(data), "--model", model, "--out", str(out),
                              "--bootstrap", "0", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return out


# --------------------------------------------------------------------------- 33.1


def test_interrupted_run_is_scored_from_its_rows_and_marked(tmp_path: Path) -> None:
    data = tamper_jsonl(tmp_path / "set.jsonl", 9)  # 9 x 6 = 54 clips
    run = evaluate(data, "constant:A", tmp_path / "run")
    # as a run stopped after two rows looks: no metrics.json, 2 of the 54 selected rows stored
    (run / "metrics.json").unlink()
    with sqlite3.connect(run / "results.sqlite") as db:
        db.execute("DELETE FROM results WHERE sample_id NOT IN ('v0__original', 'v0__dropping')")
    assert json.loads((run / "run.json").read_text())["dataset"]["n_selected"] == 54
    rep = tmp_path / "rep"
    res = runner.invoke(app, ["report", str(run), "--out", str(rep)])
    assert res.exit_code == 0, res.output
    # always Yes on one original and one dropping clip: dropping F1 = 2/3, the rest not scored
    table = (rep / "table7.csv").read_text().splitlines()
    assert table[1].startswith("constant:A,66.7,,,,,66.7,"), table[1]
    assert ",2," in table[1]  # n = the two stored rows, not a dash
    md = (rep / "report.md").read_text()
    assert "- constant:A: interrupted, 2 of 54" in md
    page = (rep / "index.html").read_text()
    assert '<span class="tag warn">interrupted, 2 of 54</span>' in page
    assert "2 (interrupted, 2 of 54)" in page  # the samples line of its metadata
    assert "constant:A: F1 66.7% (interrupted, 2 of 54)" in res.output


# --------------------------------------------------------------------------- 33.4, 33.5


def test_report_prints_a_summary_and_names_wrong_paths(tmp_path: Path) -> None:
    data = tamper_jsonl(tmp_path / "set.jsonl", 2)
    runs = tmp_path / "runs"
    evaluate(data, "constant:A", runs / "yes")
    evaluate(data, "constant:B", runs / "no")
    rep = tmp_path / "rep"
    res = runner.invoke(app, ["report", str(runs / "yes"), str(runs / "no"), "--out", str(rep)])
    assert res.exit_code == 0, res.output
    assert "# mmrobust report" not in res.output  # not the whole report.md
    lines = res.output.splitlines()
    assert lines[0] == "report of 2 runs:"
    assert lines[1].startswith("  MVTamperBench tamper detection on set (data sha256 ")
    assert lines[2:4] == ["    constant:A: F1 66.7%", "    constant:B: F1 0.0%"]
    assert lines[-1] == f"open {rep / 'index.html'}"
    assert len(lines) < 10

    res = runner.invoke(app, ["report", str(runs), "--out", str(rep)])
    assert res.exit_code != 0
    assert f"{runs} is a folder of 2 run folders, not a run folder" in res.output
    assert f"mmrobust report {runs / '*'} --out DIR" in res.output

    res = runner.invoke(app, ["report", str(tmp_path / "nowhere"), "--out", str(rep)])
    assert res.exit_code != 0 and f"no such folder: {tmp_path / 'nowhere'}" in res.output


def test_report_refuses_an_out_folder_inside_a_run_folder(tmp_path: Path) -> None:
    run = evaluate(tamper_jsonl(tmp_path / "set.jsonl", 1), "constant:A", tmp_path / "run")
    before = sorted(p.name for p in run.iterdir())
    for out in (run, run / "report"):
        res = runner.invoke(app, ["report", str(run), "--out", str(out)])
        assert res.exit_code != 0
        assert f"is inside the run folder {run.resolve()}" in res.output
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written into it


# --------------------------------------------------------------------------- 33.8


def test_each_family_states_its_own_failure_rule_in_the_run_metadata() -> None:
    block = {"run": {"extraction": "lenient", "failures": "exclude"}}
    mmr = dict(run_metadata(HtmlRun("m", "mmr", {}, {"pairs": 3, **block})))
    assert "left out of F1" not in mmr["extraction"]
    assert mmr["extraction"] == (
        "lenient (a failed answer (parse failure or error) counts as not right; MMR has no F1)"
    )
    tamper = dict(run_metadata(HtmlRun("m", "tamper", {}, block)))
    assert tamper["extraction"] == (
        "lenient (parse failures and errors left out of F1, counted in their rates)"
    )
    leading = dict(run_metadata(HtmlRun("m", "tamper-leading", {}, block)))
    assert "not right, as in MMR" in leading["extraction"]


# --------------------------------------------------------------------------- 33.9


def test_compare_prints_the_always_yes_f1_and_the_imbalance_warning(tmp_path: Path) -> None:
    # 2 sources, one original only: per type 2 tampered clips and 1 original
    data = tamper_jsonl(tmp_path / "set.jsonl", 2, originals=1)
    yes = evaluate(data, "constant:A", tmp_path / "yes")
    no = evaluate(data, "constant:B", tmp_path / "no")
    res = runner.invoke(app, ["compare", str(yes), str(no)])
    assert res.exit_code == 0, res.output
    assert "accuracy: constant:A 90.9%, constant:B 9.1%" in res.output  # 10 of 11 clips say Yes
    # always Yes per type: precision 2/3, recall 1, F1 = 0.8; a coin: 2*2/(3*2+1) = 4/7
    assert (
        "answering Yes to every one of these clips scores detection F1 80.0%, a coin flip "
        "57.1% (1 originals, 10 tampered)" in res.output
    )
    assert "warning: fewer originals than tampered clips per type" in res.output
    res = runner.invoke(app, ["compare", str(yes), str(no), "--json"])
    assert len(json.loads(res.output)["notes"]) == 2


# --------------------------------------------------------------------------- 28.3


def test_published_rows_shown_by_default_only_on_the_released_benchmark(tmp_path: Path) -> None:
    run = evaluate(tamper_jsonl(tmp_path / "set.jsonl", 1), "constant:A", tmp_path / "run")
    page = build_site([run], tmp_path / "own").index_html.read_text()
    assert 'class="pubtag">published, not run here<' in page  # present, one click away
    assert '<input type="checkbox" id="show-published">' in page  # ... but off
    forced = build_site([run], tmp_path / "forced", published=True).index_html.read_text()
    assert '<input type="checkbox" id="show-published" checked>' in forced
    left_out = build_site([run], tmp_path / "none", published=False).index_html.read_text()
    assert 'id="show-published"' not in left_out and "published, not run here<" not in left_out
    # a run on the released hub set: shown by default
    info = json.loads((run / "run.json").read_text())
    info["dataset"]["hub"] = {"repo_id": "Srikant86/MVTamperBench", "commit": "0" * 40}
    (run / "run.json").write_text(json.dumps(info))
    page = build_site([run], tmp_path / "released").index_html.read_text()
    assert '<input type="checkbox" id="show-published" checked>' in page
    assert tamper_released({"dataset": {"source": "hf:Srikant86/MVTamperBenchEnd@main"}})
    assert not tamper_released({"dataset": {"source": "hf:someone/else"}})
    assert mmr_released({"dataset": {"data_hash": RELEASED_SHA256}})
    assert not mmr_released({"dataset": {"data_hash": "0" * 64}})


# --------------------------------------------------------------------------- 33.10


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_browser_answer_filter_with_every_model(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    data = tamper_jsonl(tmp_path / "set.jsonl", 2)  # 2 originals, 10 tampered clips
    runs = [evaluate(data, m, tmp_path / m.replace(":", "-")) for m in ("constant:A", "constant:B")]
    index = build_site(runs, tmp_path / "rep", max_thumbs=0).index_html
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip

    def count(fragment: str) -> str:
        dom = subprocess.run(
            [browser, *flags, "--dump-dom", index.resolve().as_uri() + fragment],
            check=True, capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
        found = re.search(r'id="count" data-ms="\d+">(\d+ of \d+) samples<', dom)
        assert found, dom[-2000:]
        if fragment == "":
            assert '<option value="incorrect">any run incorrect</option>' in dom
            assert '<option value="all-incorrect">every run incorrect</option>' in dom
        return found.group(1)

    # every clip has one run right and one wrong: "any run incorrect" keeps all 12 (and says
    # so), "every run correct" and "every run incorrect" none; one model narrows to its errors
    assert count("") == "12 of 12"
    assert count("#answer=incorrect") == "12 of 12"
    assert count("#answer=correct") == "0 of 12"
    assert count("#answer=all-incorrect") == "0 of 12"
    assert count("#run=0&answer=incorrect") == "2 of 12"  # always Yes: wrong on the originals
    assert count("#run=1&answer=incorrect") == "10 of 12"
    assert count("#type=rotation&answer=incorrect") == "2 of 12"
