"""``--model-arg`` pairs and lm-eval's comma form ``--model-args K=V,K=V`` (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.models.spec import parse_model_args, split_model_args
from tests.fake_openai_server import FakeOpenAIServer, Reply


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # lm-eval's own examples and rules (lm_eval/utils.py simple_parse_args_string)
        ("pretrained=EleutherAI/gpt-j-6B,dtype=float", {"pretrained": "EleutherAI/gpt-j-6B", "dtype": "float"}),
        ("base_url=http://h:8000/v1,concurrency=4", {"base_url": "http://h:8000/v1", "concurrency": "4"}),
        ("a=1,,b=2,", {"a": "1", "b": "2"}),  # empty pairs skipped
        ("extra_body=x=y", {"extra_body": "x=y"}),  # the first '=' splits
        ("", {}),
        # lmms-eval's JSON-aware split: commas inside quotes or brackets stay
        (' a=1 , b=2 ', {"a": "1", "b": "2"}),
        ('extra_body={"top_k":1,"min_p":0.1},seed=3', {"extra_body": '{"top_k":1,"min_p":0.1}', "seed": "3"}),
        ("stop=[1,2],seed=3", {"stop": "[1,2]", "seed": "3"}),
        ("name='a,b',seed=1", {"name": "a,b", "seed": "1"}),  # ours: outer quotes dropped
        ('name="x",y=2', {"name": "x", "y": "2"}),
        ("a=1,a=1", {"a": "1"}),
    ],
)  # fmt: skip
def test_comma_form_follows_lm_eval(text: str, expected: dict[str, str]) -> None:
    assert split_model_args(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("concurrency", "bad --model-args item 'concurrency': expected KEY=VALUE"),
        ("=4", "bad --model-args item '=4'"),
        ("a=1,a=2", "--model-args gives 'a' twice ('1' and '2')"),
    ],
)
def test_comma_form_errors_are_one_line(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        split_model_args(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_swallowed_comma_list_in_one_model_arg_is_refused() -> None:
    # before: {"base_url": "http://x,concurrency=4"}, a URL that fails much later
    with pytest.raises(ValueError) as info:
        parse_model_args(["base_url=http://x,concurrency=4"])
    assert str(info.value) == (
        "--model-arg 'base_url=http://x,concurrency=4' looks like several settings joined by "
        "commas; give each its own --model-arg, or pass them all as --model-args "
        "base_url=http://x,concurrency=4"
    )


def test_commas_that_belong_to_a_value_are_kept() -> None:
    got = parse_model_args(['extra_body={"top_k": 1, "min_p": 0.1}', "system=a, b and c", "x=1,2"])
    assert got == {"extra_body": '{"top_k": 1, "min_p": 0.1}', "system": "a, b and c", "x": "1,2"}


def test_both_forms_merge_and_a_conflict_is_an_error() -> None:
    got = parse_model_args(["max_tokens=64"], ["base_url=http://h/v1,concurrency=4"])
    assert got == {"base_url": "http://h/v1", "concurrency": "4", "max_tokens": "64"}
    assert parse_model_args(["concurrency=4"], ["concurrency=4"]) == {"concurrency": "4"}
    with pytest.raises(ValueError, match=r"'concurrency' is given by --model-args \('4'\)"):
        parse_model_args(["concurrency=8"], ["concurrency=4"])
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        parse_model_args(["novalue"])


# -- the CLI: eval --model-args / --model_args ------------------------------------------


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    rec = {"id": "s1", "question": "Is it tampered?", "options": ["Yes", "No"], "answer": "No"}
    path.write_text(json.dumps(rec) + "\n")
    return path


@pytest.mark.parametrize("flag", ["--model-args", "--model_args"])
def test_eval_takes_the_comma_form(tmp_path: Path, flag: str) -> None:
    with FakeOpenAIServer(responder=lambda _r: Reply.ok("B")) as server:
        cli = ["eval", "--data", str(_data(tmp_path)), "--model", "openai:test"]
        cli += [flag, f"base_url={server.base_url},max_tokens=7", "--model-arg", "max_retries=0"]
        cli += ["--out", str(tmp_path / "run"), "--bootstrap", "0", "-q"]
        res = CliRunner().invoke(app, cli)
        assert res.exit_code == 0, res.output
        assert [r.body["max_tokens"] for r in server.chat_requests] == [7]
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["config"]["model_args"]["max_retries"] == "0"


def test_eval_refuses_a_swallowed_comma_list_before_any_request(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        cli = ["eval", "--data", str(_data(tmp_path)), "--model", "openai:test"]
        cli += ["--model-arg", f"base_url={server.base_url},concurrency=4"]
        cli += ["--out", str(tmp_path / "run"), "-q"]
        res = CliRunner().invoke(app, cli)
        assert res.exit_code == 2, res.output
        assert server.chat_requests == []
    assert "looks like several settings joined by commas" in res.output
    assert "--model-args base_url=" in res.output


@pytest.mark.parametrize("flag", ["--model-args", "--model-arg"])
def test_spaces_around_the_equals_sign_are_not_part_of_the_url(tmp_path: Path, flag: str) -> None:
    """``base_url = http://...`` (as written in a config file) reached httpx as ``" http://..."``
    and every row failed with "Request URL is missing an 'http://' or 'https://' protocol"."""
    assert parse_model_args(["base_url = http://h/v1 "]) == {"base_url": "http://h/v1"}
    assert split_model_args("base_url = http://h/v1 , max_retries = 0") == {
        "base_url": "http://h/v1",
        "max_retries": "0",
    }
    assert split_model_args("name=' a b '") == {"name": " a b "}  # quotes keep spaces
    with FakeOpenAIServer(responder=lambda _r: Reply.ok("B")) as server:
        cli = ["eval", "--data", str(_data(tmp_path)), "--model", "openai:test", "-q"]
        cli += [flag, f"base_url = {server.base_url}", "--model-arg", "max_retries = 0"]
        res = CliRunner().invoke(app, [*cli, "--out", str(tmp_path / "run"), "--bootstrap", "0"])
        assert res.exit_code == 0, res.output
        assert len(server.chat_requests) == 1
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["config"]["model_args"]["base_url"] == server.base_url
