"""``mmrobust tamper --position start,end`` builds a set for ``--task when``; ``forensic`` answers
the tasks from its verdict on the built clips (issue 20).

One small synthetic clip (tests/synth.py), two effects, two positions: a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets import load_dataset
from mmrobust.schema.window import WindowError
from mmrobust.store import ResultStore
from mmrobust.tamper.positions import join_builds, parse_positions
from mmrobust.tasks import derive_task
from tests.synth import make_synthetic_video


@pytest.fixture(scope="module")
def positions_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("positions")
    src = make_synthetic_video(root / "src" / "walk.mp4", 75, fps=25, size=(160, 96), seed=3)
    out = root / "set"
    result = CliRunner().invoke(
        app,
        [
            "tamper", str(src), "--out", str(out), "--effects", "masking,rotation",
            "--position", "start,end", "--preset", "ultrafast", "-q",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # two sub-builds of 3 clips each (an original in each), joined into 5 clips
    assert (
        "5 clips (6 built, 0 already done; each position's build has its own originals, "
        "joined once), 0 errors" in result.output
    )
    return out


def test_positions_build_joins_one_manifest(positions_set: Path) -> None:
    lines = [json.loads(x) for x in (positions_set / "manifest.jsonl").read_text().splitlines()]
    ids = sorted(x["id"] for x in lines)
    assert ids == [
        "walk__masking@end", "walk__masking@start", "walk__original",
        "walk__rotation@end", "walk__rotation@start",
    ]  # fmt: skip  # the original once, each effect at each position
    for x in lines:
        assert (positions_set / x["video"]).is_file()
        assert x["video"].split("/")[0] in ("start", "end")
    ds = derive_task(load_dataset(positions_set), "when")
    truth = {s.meta["clip_id"]: s.meta["task_question"]["truth"] for s in ds.samples}
    assert truth == {
        "walk__original": "nowhere",
        "walk__masking@start": "beginning",
        "walk__rotation@start": "beginning",
        "walk__masking@end": "end",
        "walk__rotation@end": "end",
    }
    # the sub-builds are ordinary sets; joining them again gives the same manifest
    before = (positions_set / "manifest.jsonl").read_text()
    join_builds(positions_set, [("start", positions_set / "start"), ("end", positions_set / "end")])
    assert (positions_set / "manifest.jsonl").read_text() == before


def test_parse_positions_refuses_bad_lists() -> None:
    assert parse_positions("start, 0.5 ,end") == ["start", 0.5, "end"]
    with pytest.raises(ValueError, match="repeat"):
        parse_positions("start,start")
    with pytest.raises(WindowError):
        parse_positions("start,later")


def test_forensic_answers_type_when_and_leading_from_its_verdict(
    positions_set: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    got = {}
    for task in ("detect", "type", "when", "leading"):
        out = tmp_path / task
        res = runner.invoke(
            app,
            ["eval", "--data", str(positions_set), "--model", "forensic", "--task", task,
             "--out", str(out), "--bootstrap", "0", "-q"],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        with ResultStore(out) as store:
            got[task] = {r.sample.id: r for r in store.rows()}
    detect = {k: r.letter == "A" for k, r in got["detect"].items()}  # A = Yes
    answered = 0
    for sid, row in got["type"].items():
        clip = sid.removesuffix("::type")
        if row.letter is None:  # its type is not among this set's effects: said in words
            assert row.status.value == "parse_fail" and detect[clip], sid
            assert row.raw_text == f"tampered: {row.extra['pred_type']}, not among the options"
            continue
        answered += 1
        info = row.sample.meta["task_question"]
        picked = info["keys"][row.options[row.letter]]
        # the type answer is the detect verdict's: none exactly when it says No
        assert (picked != "none") == detect[clip], sid
        if picked != "none":
            assert picked == row.extra["pred_type"]
    assert answered >= 2
    for sid, row in got["when"].items():
        info = row.sample.meta["task_question"]
        picked = info["keys"][row.options[row.letter]]
        assert (picked != "nowhere") == detect[sid.removesuffix("::when")], sid
    for sid, row in got["leading"].items():
        if sid.endswith(":negative"):
            picked = row.sample.meta["task_question"]["keys"][row.options[row.letter]]
            # a premise is accepted only when the presupposed effect is the detector's own type
            presupposed = row.sample.category
            assert (picked != "reject") == (row.extra["pred_type"] == presupposed), sid
