"""End to end: `mmrobust tamper` on the real sample clips, then eval, rescore, report, compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips
from mmrobust.report import build_report, load_run
from mmrobust.store import ResultStore

runner = CliRunner()
TYPES = ("dropping", "masking", "repetition", "rotation", "substitution")


@pytest.fixture(scope="session")
def built_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    clips = sample_clips()
    out = tmp_path_factory.mktemp("tamper_set")
    res = runner.invoke(
        app,
        [
            "tamper",
            str(clips["carphone_pristine"]),
            str(clips["carphone_distorted"]),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.slow
def test_eval_report_end_to_end_on_real_clips(built_set: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    yes = tmp_path / "yes"
    res = runner.invoke(app, [
        "eval", "--data", str(built_set), "--model", "constant:A", "--model-arg", "media=frames",
        "--out", str(yes), "--cache-dir", str(cache), "--bootstrap", "100", "-q",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    m = json.loads((yes / "metrics.json").read_text())
    assert m["benchmark"] == "tamper" and m["n_samples"] == 12
    for t in TYPES:
        assert m["f1"][t] == pytest.approx(2 / 3)
    assert m["f1"]["overall"] == pytest.approx(2 / 3) and m["degenerate"] == "always_yes"
    assert m["run"]["frames"] == "8 segment-centre frames"
    # 120-frame clips (about 4 s): 8 centres 15 frames apart always hit a 30-frame masking window;
    # a dropping seam is covered when the shown frames around the cut are at most F = 30 apart.
    assert m["window_coverage"]["masking"] == 1.0 and m["window_coverage"]["dropping"] == 1.0
    with ResultStore(yes) as store:
        rows = store.rows()
    assert all(
        r.frame_indices == [7, 22, 37, 52, 67, 81, 96, 111]
        for r in rows
        if r.sample.tamper_type == "masking"
    )
    assert any(cache.rglob("*.frames"))

    no = tmp_path / "no"
    res = runner.invoke(
        app, ["eval", "--data", str(built_set), "--model", "constant:B", "--out", str(no), "-q"]
    )
    assert (
        res.exit_code == 0 and json.loads((no / "metrics.json").read_text())["f1"]["overall"] == 0.0
    )

    # Resume: nothing new.
    res = runner.invoke(
        app, ["eval", "--data", str(built_set), "--model", "constant:B", "--out", str(no), "-q"]
    )
    assert "0 new rows, 12 resumed" in res.output

    res = runner.invoke(app, ["rescore", str(no), "--extract", "strict"])
    assert (
        res.exit_code == 0
        and "Overall 0.0 (95% CI 0.0–0.0; chance: always Yes 66.7, coin flip 50.0)" in res.output
    )
    assert "extraction lenient -> strict" in res.output
    assert "12 of 12 stored answers re-extracted, 0 changed letter or status" in res.output

    rep = tmp_path / "report"
    res = runner.invoke(app, ["report", str(yes), str(no), "--out", str(rep)])
    assert res.exit_code == 0, res.output
    table = (rep / "table7.csv").read_text().splitlines()
    assert table[0].startswith("Model,Drop,Mask,Repeat,Rotate,Substitute,Overall")
    assert table[1].startswith("constant:A,66.7,66.7,66.7,66.7,66.7,66.7,66.7–66.7,12,0.0,0.0,")
    assert (rep / "f1_per_type.png").read_bytes()[:4] == b"\x89PNG"
    assert "always_yes" in (rep / "report.md").read_text()

    res = runner.invoke(app, ["compare", str(yes), str(no)])
    assert res.exit_code == 0, res.output
    assert "constant:A: right                  0                 10" in res.output
    assert "constant:A: wrong                  2                  0" in res.output
    assert "accuracy: constant:A 83.3%, constant:B 16.7%" in res.output
    assert "p = 0.03857 (the runs differ at the 5% level)" in res.output
    res = runner.invoke(app, ["compare", str(yes), str(no), "--json"])
    cmp = json.loads(res.output)
    # A is right on the 10 tampered clips, B on the 2 originals: 12 discordant pairs.
    assert (cmp["a_only_correct"], cmp["b_only_correct"], cmp["n"]) == (10, 2, 12)
    assert cmp["p_value"] == pytest.approx(0.0385742, abs=1e-6)


def test_ablation_tables_across_positions(tmp_path: Path) -> None:
    lines = []
    for s in range(3):
        lines.append({"id": f"v{s}_o", "benchmark": "tamper", "question": "q", "options": {"A": "Yes", "B": "No"},
                      "answer": "B", "group": f"v{s}", "tamper_type": "original"})  # fmt: skip
        for pos in ("start", "middle"):
            lines.append({"id": f"v{s}_{pos}", "benchmark": "tamper", "question": "q",
                          "options": {"A": "Yes", "B": "No"}, "answer": "A", "group": f"v{s}",
                          "tamper_type": "masking", "position": pos})  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    for prompt in ("structured", "generic"):
        res = runner.invoke(app, ["eval", "--data", str(data), "--model", "constant:A", "--prompt", prompt,
                                  "--out", str(tmp_path / prompt), "-q", "--bootstrap", "0"])  # fmt: skip
        assert res.exit_code == 0, res.output
    paths = build_report([tmp_path / "structured", tmp_path / "generic"], tmp_path / "rep")
    names = {p.name for p in paths.ablation_csv}
    assert names == {"ablation_position.csv", "ablation_prompt.csv"}
    pos = (tmp_path / "rep" / "ablation_position.csv").read_text().splitlines()
    assert pos[0] == "Model,position=middle,position=start"
    assert pos[1] == "constant:A,66.7,66.7"  # F1 in percent, one decimal
    assert len(load_run(tmp_path / "generic").records) == 9


def test_eval_bad_arguments_exit_nonzero(tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        [
            "eval",
            "--data",
            str(tmp_path / "none.jsonl"),
            "--model",
            "constant:A",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 2 and "dataset not found" in res.output
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"id": "a", "question": "q", "options": ["x", "y"], "answer": "A"}) + "\n"
    )
    res = runner.invoke(
        app, ["eval", "--data", str(data), "--model", "constnt:A", "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "Did you mean: constant" in res.output
    res = runner.invoke(
        app,
        [
            "eval",
            "--data",
            str(data),
            "--model",
            "constant:A",
            "--extract",
            "fuzzy",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 2


@pytest.mark.parametrize(
    ("data", "extra", "has"),
    [("mmr-demo", [], "images"), ("{tamper}", ["--text-only"], "no media")],
)
def test_a_video_only_model_on_other_media_exits_2_before_any_request(
    data: str, extra: list[str], has: str, family_tamper_set: Path, tmp_path: Path
) -> None:
    """``forensic`` reads clips (``Model.media_kinds == ("video",)``): on MMR's images, or with
    ``--text-only``, it refuses in one line before any request and leaves no run folder
    (before: 8 ``model_error`` / ``media_error`` rows, then the stop rule, exit 3)."""
    out = tmp_path / "run"
    args = ["eval", "--model", "forensic", "--data", data.format(tamper=family_tamper_set)]
    res = runner.invoke(app, [*args, *extra, "--out", str(out), "-q"])
    assert res.exit_code == 2, res.output
    assert res.stderr == f"error: forensic takes video only; the samples have {has}\n"
    assert not out.exists()
