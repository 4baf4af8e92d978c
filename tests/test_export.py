"""Per-sample logs (issue 30): ``eval --log-samples`` writes ``samples.jsonl``;
``mmrobust export RUN --format jsonl|csv|parquet`` writes the same values.

``constant:A`` on ``mmr-demo`` (24 pairs, 48 questions): positive and negative accuracy 25 %
each (metrics.json), so 6 + 6 = 12 of 48 rows are correct.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.export import SAMPLE_FIELDS


def _eval(*args: str) -> None:
    result = CliRunner().invoke(app, ["eval", *args, "--bootstrap", "0", "-q"])
    assert result.exit_code == 0, result.output


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def mmr_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("export") / "mmr"
    _eval("--model", "constant:A", "--data", "mmr-demo", "--out", str(run), "--log-samples")
    return run


def test_log_samples_writes_one_line_per_row(mmr_run: Path) -> None:
    rows = _jsonl(mmr_run / "samples.jsonl")
    assert len(rows) == 48
    assert all(list(r) == [name for name, _ in SAMPLE_FIELDS] for r in rows)
    assert sum(bool(r["correct"]) for r in rows) == 12
    first = next(r for r in rows if r["id"] == "attribute/existence/01#pos")
    assert first["model"] == "constant:A" and first["dataset"] == "mmr-demo"
    assert (first["benchmark"], first["task"], first["polarity"]) == ("mmr", None, "positive")
    assert first["group"] == "attribute/existence/01" and first["category"] == "Presence"
    assert (first["letter"], first["answer"], first["correct"]) == ("A", "A", True)
    assert (first["raw_answer"], first["rule"], first["status"]) == (
        "A",
        "strict:lone-letter",
        "ok",
    )
    assert str(first["prompt"]).startswith("Is there a flag in the picture?\nA. Yes, an American")
    assert str(first["prompt"]).endswith(
        "Answer with the option's letter from the given choices directly."
    )
    assert str(first["image"]).endswith("astronaut.jpg") and first["video"] is None
    assert first["options"] == {
        "A": "Yes, an American flag hangs on the left side.",
        "B": "No, there is no flag in the picture.",
        "C": "Yes, a Canadian flag hangs on the left side.",
        "D": "Yes, an American flag is printed on her helmet visor.",
    }
    assert first["reasoning"] is None and first["reasoning_form"] == "none"
    assert first["error"] is None and first["prompt_tokens"] is None


def test_export_formats_hold_the_same_values(mmr_run: Path, tmp_path: Path) -> None:
    import pandas as pd

    runner = CliRunner()
    for fmt in ("jsonl", "csv", "parquet"):
        result = runner.invoke(app, ["export", str(mmr_run), "--format", fmt, "--out",
                                     str(tmp_path / f"s.{fmt}")])  # fmt: skip
        assert result.exit_code == 0, result.output
    base = _jsonl(tmp_path / "s.jsonl")
    assert base == _jsonl(mmr_run / "samples.jsonl")
    for frame in (pd.read_csv(tmp_path / "s.csv"), pd.read_parquet(tmp_path / "s.parquet")):
        assert list(frame.columns) == [name for name, _ in SAMPLE_FIELDS]
        assert len(frame) == 48 and int(frame["correct"].sum()) == 12
        assert [json.loads(o) for o in frame["options"]] == [r["options"] for r in base]
        assert list(frame["id"]) == [r["id"] for r in base]
        assert list(frame["raw_answer"]) == [r["raw_answer"] for r in base]
    out = runner.invoke(app, ["export", str(mmr_run), "--out", "-"])
    assert out.exit_code == 0 and len(out.stdout.splitlines()) == 48
    bad = runner.invoke(app, ["export", str(mmr_run), "--format", "xlsx"])
    assert bad.exit_code == 2 and "--format must be one of jsonl, csv, parquet" in bad.stderr
    missing = runner.invoke(app, ["export", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert missing.stderr == f"error: no such folder: {tmp_path / 'nope'}\n"


def test_failed_rows_and_frames(tmp_path: Path, family_tamper_set: Path) -> None:
    """A row whose image is missing is a data_error: no letter, correct null, its reason kept;
    a frames model's row lists the 8 frames it was shown."""
    data = tmp_path / "q.jsonl"
    data.write_text(
        json.dumps({"id": "gone", "image": "missing.jpg", "question": "Red?",
                    "options": ["Yes", "No"], "answer": "Yes"}) + "\n"
        + json.dumps({"id": "text", "question": "Two?", "options": ["Yes", "No"],
                      "answer": "No"}) + "\n"
    )  # fmt: skip
    run = tmp_path / "q"
    _eval("--model", "constant:A", "--data", str(data), "--out", str(run), "--log-samples")
    rows = {r["id"]: r for r in _jsonl(run / "samples.jsonl")}
    assert rows["gone"]["status"] == "data_error" and rows["gone"]["correct"] is None
    assert rows["gone"]["letter"] is None and "missing.jpg" in str(rows["gone"]["error"])
    assert (rows["text"]["status"], rows["text"]["correct"]) == ("ok", False)  # A = Yes, not No

    frames = tmp_path / "frames"
    _eval("--model", "random:0", "--model-arg", "media=frames", "--data", str(family_tamper_set),
          "--task", "type", "--out", str(frames))  # fmt: skip
    result = CliRunner().invoke(app, ["export", str(frames)])
    assert result.exit_code == 0, result.output
    rows2 = _jsonl(frames / "samples.jsonl")
    assert len(rows2) == 4 and {r["task"] for r in rows2} == {"type"}
    assert all(len(r["frame_indices"]) == 8 for r in rows2)  # type: ignore[arg-type]
    assert all(str(r["video"]).endswith(".mp4") for r in rows2)
    tampered = [r for r in rows2 if r["tamper_type"] != "original"]
    assert len(tampered) == 2 and all(isinstance(r["window_covered"], bool) for r in tampered)


def test_suite_log_samples(family_tamper_set: Path, tmp_path: Path) -> None:
    args = ["run", "--model", "constant:A", "--data", str(family_tamper_set), "--data", "mmr-demo"]
    args += ["--task", "detect,when", "--out", str(tmp_path / "S"), "--log-samples", "-q"]
    result = CliRunner().invoke(app, [*args, "--bootstrap", "0", "--no-report"])
    assert result.exit_code == 0, result.output
    logs = sorted(
        p.relative_to(tmp_path / "S").as_posix() for p in (tmp_path / "S").rglob("samples.jsonl")
    )
    name = family_tamper_set.name
    assert logs == [f"constant-A/{name}/detect/samples.jsonl", f"constant-A/{name}/when/samples.jsonl",
                    "constant-A/mmr-demo/mmr/samples.jsonl"]  # fmt: skip
    assert len(_jsonl(tmp_path / "S" / "constant-A" / "mmr-demo" / "mmr" / "samples.jsonl")) == 48
