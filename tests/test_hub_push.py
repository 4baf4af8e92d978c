"""``--push-to-hub`` of ``run`` and ``report`` against a loopback fake of the hub
(:mod:`tests.fake_hub`, ``HF_ENDPOINT``): the upload's file list in its one commit, the model
card's pull request (its YAML diff) and the refusal without a token.

The suite: ``constant:A`` on ``mmr-demo`` (24 pairs, 48 rows; RA 4.17, MR 83.33), run in a
subprocess so ``huggingface_hub`` reads ``HF_ENDPOINT`` as a user's process does.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.fake_hub import FakeHub

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "hf_fakeWriteToken0123456789"


def _mmrobust(hub: FakeHub, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(
        HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN, HF_HOME=str(cwd / "hf-home"),
        HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    )  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "mmrobust.cli", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _header(readme: str) -> str:
    """The YAML between a card's ``---`` lines."""
    return readme.split("---\n")[1]


def _card(hub_url: str, ra: float) -> str:
    """A model card with a result of another benchmark and an earlier mmrobust RA of mmr-demo
    (its value ``ra``), as the hub would hold it."""
    from mmrobust import __version__

    mine = {
        "task": {"type": "visual-question-answering", "name": "MMR leading questions"},
        "dataset": {"name": "mmr-demo", "type": "mmr-demo", "config": "mmr", "split": "test",
                    "revision": "sha256:" + _MMR_DEMO_SHA},
        "metrics": [{"type": "robust_accuracy", "value": ra, "name": "RA, robust accuracy (%)",
                     "config": "default", "args": {"mmrobust_version": __version__}}],
        "source": {"url": f"{hub_url}/datasets/me/results", "name": f"mmrobust {__version__}"},
    }  # fmt: skip
    other = {
        "task": {"type": "text-generation"},
        "dataset": {"type": "gsm8k", "name": "GSM8K"},
        "metrics": [{"type": "accuracy", "value": 50.0}],
    }
    meta = {"license": "mit", "model-index": [{"name": "constant:A", "results": [other, mine]}]}
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n# My model\n"


_MMR_DEMO_SHA = "6e716f72de961cb0495d84e773044083b6bb8c062635e35c8e9864b68368f670"


@pytest.mark.slow
def test_run_and_report_push_one_commit_and_open_a_card_pull_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeHub() as hub:
        before = _card(hub.url, 1.0)
        hub.cards["me/model-a"] = before
        args = ["run", "--model", "constant:A", "--data", "mmr-demo", "--out", "S", "-q"]
        args += ["--bootstrap", "0", "--push-to-hub", "me/results", "--private"]
        proc = _mmrobust(hub, [*args, "--model-card", "me/model-a"], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert f"pushed 27 files to {hub.url}/datasets/me/results in one commit" in proc.stdout
        assert "opened a pull request on the card of me/model-a" in proc.stdout
        assert hub.created == [
            {"name": "results", "organization": "me", "visibility": "private", "type": "dataset"}
        ]
        [data, card] = hub.commits
        assert (data.kind, data.repo, data.create_pr) == ("datasets", "me/results", False)
        thumbs = [p for p in data.files if p.startswith("report/thumbs/")]
        assert len(thumbs) == 11 and all(p.endswith(".jpg") for p in thumbs)
        run = "constant-A/mmr-demo/mmr/"
        assert sorted(set(data.files) - set(thumbs)) == [
            f"{run}metrics.json",
            f"{run}run.json",
            f"{run}samples.jsonl",
            "report/cards/constant-A.html",
            "report/cards/constant-A.json",
            "report/index.html",
            "report/mmr/constant_A/mmr_accuracy.png",
            "report/mmr/constant_A/mmr_table.csv",
            "report/mmr/constant_A/mmr_table.md",
            "report/mmr_table2.csv",
            "report/report.md",
            "report/samples/chunk-000000.js",
            "report/samples/ids-0000.js",
            "report/samples/index-0000.js",
            "report/suite.yaml",
            "suite.json",
        ]  # fmt: skip; no results.sqlite, no media; the page's sample data beside it
        assert not any(TOKEN.encode() in body for body in data.files.values())
        assert len(data.files[f"{run}samples.jsonl"].decode().splitlines()) == 48
        suite = json.loads(data.files["suite.json"])
        assert suite["config"]["push_to_hub"] == "me/results"
        assert suite["config"]["models"] == [{"spec": "constant:A", "card": "me/model-a"}]
        index = data.files["report/index.html"].decode()
        assert '<section id="reproduce">' in index and "mmrobust run --config" in index
        # the card: a pull request (never a direct write) whose YAML diff updates RA, adds MR
        assert (card.kind, card.repo, card.create_pr) == ("models", "me/model-a", True)
        assert [r.query for r in hub.requests if "/models/" in r.path and "/commit/" in r.path] == [
            {"create_pr": ["1"]}
        ]
        after = card.files["README.md"].decode()
        assert after.endswith("---\n\n# My model\n")
        diff = [
            line
            for line in difflib.unified_diff(
                _header(before).splitlines(), _header(after).splitlines(), lineterm="", n=0
            )
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        removed = {line[1:] for line in diff if line.startswith("-")}
        added = {line[1:] for line in diff if line.startswith("+")}
        assert removed - added == {"      value: 1.0"}  # else only lines the hub library reorders
        assert {"      value: 4.17", "    - type: misleading_rate", "      value: 83.33"} <= added
        old = yaml.safe_load(_header(before))["model-index"][0]["results"]
        new = yaml.safe_load(_header(after))["model-index"][0]["results"]
        assert new[0] == old[0]  # another benchmark's result is kept as it was
        assert [(m["type"], m["value"]) for m in new[1]["metrics"]] == [
            ("robust_accuracy", 4.17),
            ("misleading_rate", 83.33),
        ]
        assert len(new) == 2 and yaml.safe_load(_header(after))["license"] == "mit"

        # report --push-to-hub: the report folder as report/, each run folder as runs/<name>/
        # (in this process: HfApi reads the endpoint when it is made)
        import huggingface_hub.constants as hub_constants

        monkeypatch.setattr(hub_constants, "ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        report = ["report", str(tmp_path / "S" / run), "--out", str(tmp_path / "R")]
        done = CliRunner().invoke(app, [*report, "--thumbs", "0", "--push-to-hub", "me/rep"])
        assert done.exit_code == 0, done.output
        assert f"pushed 14 files to {hub.url}/datasets/me/rep in one commit" in done.stdout
        third = hub.commits[2]
        assert third.repo == "me/rep" and len(hub.commits) == 3  # no --model-card: no PR
        runs = sorted(p for p in third.files if p.startswith("runs/"))
        assert len(runs) == 3 and {p.rsplit("/", 1)[1] for p in runs} == {
            "metrics.json",
            "run.json",
            "samples.jsonl",
        }
        assert "report/index.html" in third.files and "report/suite.yaml" not in third.files
        assert sorted(p for p in third.files if p.startswith("report/samples/")) == [
            "report/samples/chunk-000000.js",
            "report/samples/ids-0000.js",
            "report/samples/index-0000.js",
        ]  # the page's sample data (11 files before the browser's data moved beside the page)


def test_no_token_is_refused_in_one_line_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants as hub_constants

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    out = tmp_path / "S"
    args = ["run", "--model", "constant:A", "--data", "mmr-demo", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--push-to-hub", "me/results"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --push-to-hub needs a Hugging Face token with write access: set HF_TOKEN "
        "(or run `hf auth login`); nothing was run\n"
    )
    assert not out.exists()
    card = CliRunner().invoke(app, [*args, "--model-card", "me/model-a"])
    assert card.exit_code == 2 and "--model-card (models[].card) needs --push-to-hub" in card.stderr
    bad = CliRunner().invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "R"),
                                   "--push-to-hub", "me/results"])  # fmt: skip
    assert bad.exit_code == 2 and "needs a Hugging Face token" in bad.stderr
    assert not out.exists() and not (tmp_path / "R").exists()


def test_a_file_holding_the_token_stops_the_push_before_any_request(tmp_path: Path) -> None:
    from mmrobust.report.hub_push import HubTarget, push_report

    report = tmp_path / "R"
    (report / "cards").mkdir(parents=True)
    (report / "index.html").write_text("<p>scores</p>")
    (report / "cards" / "m.json").write_text(f'{{"note": "{TOKEN}"}}')
    (tmp_path / "elsewhere.txt").write_text(TOKEN)
    (report / "link.txt").symlink_to(tmp_path / "elsewhere.txt")  # never followed
    with FakeHub() as hub:
        target = HubTarget("me/results", token=TOKEN)
        with pytest.raises(ValueError, match=r"^report/cards/m.json holds the hub token; nothing"):
            push_report(target, report, [])
        assert hub.requests == []
    from mmrobust.report.hub_push import _copy_tree, staged_files

    _copy_tree(report, tmp_path / "staged")
    assert staged_files(tmp_path / "staged") == ["cards/m.json", "index.html"]  # no link.txt
