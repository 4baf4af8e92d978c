"""MMR through ``mmrobust eval`` / ``report``: real file text-only, demo set with images."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.fake_openai_server import FakeOpenAIServer, RecordedRequest, Reply
from tests.shared_data import MMR_JSON as REAL
from tests.shared_data import needs_shared


@needs_shared(REAL)
def test_eval_real_file_text_only_constant_a(tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--data",
            str(REAL),
            "--model",
            "constant:A",
            "--text-only",
            "--out",
            str(run),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["benchmark"] == "mmr"
    got = [metrics[k] for k in ("pairs", "UR", "UF", "NR", "NF", "RA", "MR")]
    assert got == [300, 20, 56, 54, 170, 6.67, 73.68]
    assert metrics["defects"][0].startswith("attribute/number/04: both records labelled POS/POS")
    assert metrics["categories"]["Character/Number"]["pairs"] == 40
    assert metrics["pairing"] == "content" and metrics["run"]["reference"] is None


@needs_shared(REAL)
@pytest.mark.parametrize("switch", [["--official"], ["--extract", "official"]])
def test_official_real_file_constant_a_matches_the_reference(
    tmp_path: Path, switch: list[str]
) -> None:
    """The MMR scripts (b85b573, models/calculation.py) on 600 replies "A": UR 20, UF 57.

    They pair records by file position and count both mixed outcomes of the
    POS/POS pair attribute/number/04 as UF (this pair: positive wrong, leading right).
    """
    run = tmp_path / "run"
    args = ["eval", "--data", str(REAL), "--model", "constant:A", "--text-only", "--out", str(run)]
    result = CliRunner().invoke(app, [*args, *switch, "-q"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((run / "metrics.json").read_text())
    got = [metrics[k] for k in ("pairs", "UR", "UF", "RA", "MR")]
    assert got == [300, 20, 57, 6.67, 74.03]
    assert metrics["pairing"] == "position"
    assert metrics["run"]["reference"]["repo"] == "BAAI-DCAI/Multimodal-Robustness-Benchmark"
    # rescoring the same replies by content gives the default numbers back
    again = CliRunner().invoke(app, ["rescore", str(run), "--extract", "lenient"])
    assert again.exit_code == 0, again.output
    lenient = json.loads((run / "metrics.json").read_text())
    assert [lenient[k] for k in ("UR", "UF", "MR")] == [20, 56, 73.68]


def test_demo_set_with_images_through_eval_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "cache"))

    def answer(request: RecordedRequest) -> Reply:
        # Answers "B" only for the coins-count question; everything else "A".
        return Reply.ok("B" if "How many coins are in the picture?" in request.text else "A")

    run = tmp_path / "run"
    with FakeOpenAIServer(responder=answer) as server:
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "--data",
                "mmr-demo",
                "--model",
                "openai:fake",
                "--model-arg",
                f"base_url={server.base_url}",
                "--out",
                str(run),
                "-q",
            ],
        )
        assert result.exit_code == 0, result.output
        requests = server.chat_requests
        assert len(requests) == 48
        assert all(len(r.image_urls) == 1 for r in requests)
        coins = next(r for r in requests if "How many coins are in the picture?" in r.text)
        image = coins.images()[0]
        assert abs(image.shape[1] / image.shape[0] - 384 / 303) < 0.02  # the coins photo
        spread = np.abs(image.astype(int) - image.mean(axis=2, keepdims=True)).max()
        assert spread <= 3  # grey photo sent as RGB
        assert coins.text.rstrip().endswith(
            "Answer with the option's letter from the given choices directly."
        )
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["benchmark"] == "mmr" and metrics["pairs"] == 24
    assert metrics["defects"] == [] and metrics["error_rate"] == 0.0
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tables = list(out.glob("mmr/*/mmr_table.csv"))
    assert len(tables) == 1 and (tables[0].parent / "mmr_accuracy.png").is_file()
