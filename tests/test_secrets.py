"""No credential leaves mmrobust, whatever its spelling (docs/models.md, "Keys and passwords").

The cells are ``tests/crossings.py``'s ``SECRET_SPELLINGS`` x every HTTP backend registered
(``http_backends()``: ``placement="api"``, so a backend added later joins them):

* refused spellings (a key in the spec's text, ``api_key=`` in ``--model-arg`` /
  ``--model-args``, a header, a JSON field, a URL's query, the judge's spec and settings):
  ``mmrobust run`` / ``eval`` exit 2 with one line naming ``api_key_env``, the secret in no
  form in the output, and no folder left behind, so no file can hold it;
* the accepted spelling (``base_url=http://u:SECRET@host/v1``): one ``mmrobust run`` per
  backend against the loopback fake server with ``--log-samples`` and ``--log-to wandb``
  (offline), a server reply that echoes the credential, then ``export`` to CSV, JSONL and
  Parquet, and an ``eval`` against a server that is down; every file written (run folders,
  report, cards, tables, exports, W&B's offline files), the console and every log record are
  searched for the secret's bytes, URL-encoded and base64 forms (``secret_forms``), and the
  server must have received it (HTTP basic auth: the model got it);
* Ray: a run that holds a password is refused before the cluster is contacted, and what Ray
  would pickle (the validated config, the replicas' settings) holds none of its forms.
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.models.credentials import hold_args, reveal
from mmrobust.redact import is_secret_name, scrub_args
from mmrobust.run.config import EvalConfig
from tests.crossings import SECRET, Spelling, http_backends, secret_cells, secret_forms
from tests.fake_openai_server import BACKENDS, FakeOpenAIServer, Reply

FORMS = secret_forms()
SPOKEN = BACKENDS
"""Backends whose wire format ``tests/fake_openai_server.py`` speaks."""


def _leaks(data: bytes | str) -> list[bytes]:
    """The forms of ``SECRET`` found in ``data``."""
    raw = data.encode() if isinstance(data, str) else data
    return [f for f in FORMS if f in raw]


def _files_with_secret(root: Path) -> list[str]:
    """Every file under ``root`` holding a form of ``SECRET`` (relative paths)."""
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and _leaks(p.read_bytes())
    )


def _dead_url() -> str:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def _data(command: str, out: Path) -> list[str]:
    return [command, "--data", "mmr-demo", "--limit", "2", "--out", str(out), "-q"]


@pytest.mark.parametrize(("backend", "spelling"), list(secret_cells(accepted=False)))
def test_a_literal_credential_is_refused_in_one_line_leaving_nothing(
    tmp_path: Path, backend: str, spelling: Spelling
) -> None:
    out = tmp_path / "out"
    argv = [*_data(spelling.command, out), *spelling.fill(backend, "http://127.0.0.1:9/v1")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "api_key_env=NAME" in lines[0]
    assert _leaks(result.output) == []
    assert not out.exists()  # nothing written: no file can hold it
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "spelling"), list(secret_cells(accepted=True)))
def test_a_password_in_base_url_reaches_the_server_and_no_artifact(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    backend: str,
    spelling: Spelling,
) -> None:
    wandb = pytest.importorskip(
        "wandb", reason="wandb is not installed (pip install 'mmrobust[wandb]')"
    )
    wandb_dir = tmp_path / "wb"
    wandb_dir.mkdir()
    for name, value in {
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(wandb_dir),
        "WANDB_SILENT": "true",
        "WANDB_DISABLE_CODE": "true",
    }.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.DEBUG)
    basic = "Basic " + base64.b64encode(f"u:{SECRET}".encode()).decode()
    echo = Reply.error(400, message=f"bad request from {basic}; password {SECRET}")
    outputs: list[str] = []
    settings = ["--model-arg", "api_key_env=", "--model-arg", "max_retries=0"]
    with FakeOpenAIServer([echo]) as server:
        out = tmp_path / "suite"
        argv = [*_data("run", out), *spelling.fill(backend, server.base_url), *settings]
        argv += ["--bootstrap", "0", "--log-samples", "--log-to", "wandb", "--wandb-project", "s"]
        result = CliRunner().invoke(app, argv)
        wandb.teardown()  # the service closes its files (and takes WANDB_DIR anew next time)
        outputs.append(result.output)
        # the fake speaks these wire formats (one echoed 400, the other rows answered: exit 0);
        # a backend registered later whose format it does not speak gets errors (exit 1)
        assert result.exit_code == (0 if backend in SPOKEN else 1), result.output
        got = [r.headers.get("authorization") for r in server.requests]
    assert got and set(got) == {basic}  # the model got the password, from memory
    (run_dir,) = [p.parent for p in out.rglob("run.json")]
    host = server.base_url.split("://", 1)[1]
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert config["model_args"]["base_url"] == f"http://***@{host}"
    assert config["model"] == f"{backend}:m"
    for fmt in ("csv", "jsonl", "parquet"):
        target = tmp_path / f"export.{fmt}"
        result = CliRunner().invoke(
            app, ["export", str(run_dir), "--format", fmt, "--out", str(target)]
        )
        outputs.append(result.output)
        assert result.exit_code == 0 and target.stat().st_size > 0, result.output
    down = tmp_path / "down"
    dead = _dead_url().replace("http://", f"http://u:{SECRET}@")
    argv = [*_data("eval", down), "--model", f"{backend}:m", "--model-arg", f"base_url={dead}"]
    result = CliRunner().invoke(app, [*argv, *settings, "--log-samples", "--bootstrap", "0"])
    outputs.append(result.output)
    assert result.exit_code == 1 and "connection error to http://***@127.0.0.1" in result.output
    written = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*") if p.is_file())
    assert {"suite", "down", "wb", "export.csv", "export.jsonl", "export.parquet"} <= set(written)
    report = out / "report"  # every artifact searched below was written
    assert (report / "index.html").is_file() and (report / "report.md").is_file()
    assert list((report / "cards").glob("*.json")) and list(report.rglob("*.csv"))
    for name in ("run.json", "metrics.json", "samples.jsonl", "results.sqlite"):
        assert (run_dir / name).is_file() and list(down.rglob(name)), name
    assert list(wandb_dir.rglob("*.wandb"))
    assert _files_with_secret(tmp_path) == []
    assert [_leaks(o) for o in outputs] == [[]] * len(outputs)
    assert [
        (r.name, r.levelname, r.getMessage()) for r in caplog.records if _leaks(r.getMessage())
    ] == []


def test_ray_refuses_a_held_password_before_the_cluster_and_pickles_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmrobust.distributed import RAY_RUNNERS

    asked: list[str] = []
    monkeypatch.setattr(RAY_RUNNERS, "get", lambda name: asked.append(name))
    dead = _dead_url()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    url = dead.replace("http://", f"http://u:{SECRET}@")
    argv = [
        *_data("eval", tmp_path / "out"),
        "--model",
        "openai:m",
        "--model-arg",
        f"base_url={url}",
    ]
    result = CliRunner().invoke(app, [*argv, "--executor", "ray", "--ray-address", address])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: --executor ray: --model-arg base_url holds a user")
    assert "api_key_env" in result.output and _leaks(result.output) == []
    assert asked == [] and not (tmp_path / "out").exists()
    # what the Ray path pickles: the validated config (its settings) and the replicas' settings
    config = EvalConfig(data="mmr-demo", model="openai:m", out="x", model_args={"base_url": url})
    config.validate()
    assert config.model_args["base_url"] == dead.replace("http://", "http://***@")
    assert _leaks(pickle.dumps(config)) == []
    assert reveal(config.model_args)["base_url"] == url  # held in this process only
    from mmrobust.distributed.eval import start_replicas

    with pytest.raises(ValueError, match="Ray's task arguments"):
        start_replicas(None, None, model="openai:m", model_args=config.model_args)  # type: ignore[arg-type]


def test_a_masked_password_this_process_does_not_hold_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="not known to this process"):
        reveal({"base_url": "http://***@10.9.8.7:1/v1"})


def test_one_scrubbed_url_with_two_passwords_is_refused() -> None:
    hold_args({"base_url": "http://u:pw-one-1@10.9.8.6/v1"})
    with pytest.raises(ValueError, match="two different passwords") as err:
        hold_args({"base_url": "http://u:pw-two-2@10.9.8.6/v1"})
    assert "pw-" not in str(err.value)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("API-KEY", True),
        ("apiKey", True),
        ("x-api-key", True),
        ("token", True),
        ("access_token", True),
        ("Password", True),
        ("client_secret", True),
        ("headers", True),
        ("api_key_env", False),
        ("max_tokens", False),
        ("max_new_tokens", False),
        ("top_k", False),
        ("base_url", False),
        ("chat_template_kwargs", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_run_json_shows_max_tokens_and_masks_keys() -> None:
    """``scrub_args`` used to mask every name holding ``token`` (``max_tokens``: ``***``)."""
    got = scrub_args({"max_tokens": "64", "api_key": "k-123456", "api_key_env": "K"})
    assert got == {"max_tokens": "64", "api_key": "***", "api_key_env": "K"}


@pytest.mark.parametrize("backend", http_backends())
def test_a_token_as_the_url_user_name_is_sent_and_masked_where_the_server_echoes_it(
    backend: str,
) -> None:
    """``base_url=http://TOKEN@host/v1`` (no password): held like a password, sent as
    ``Basic base64(TOKEN:)``, and masked in the row's error when the server echoes it."""
    from mmrobust.models.base import Request
    from mmrobust.models.spec import load_model, parse_spec

    basic = "Basic " + base64.b64encode(f"{SECRET}:".encode()).decode()
    with FakeOpenAIServer([Reply.error(400, message=f"who is {SECRET} ({basic})?")]) as server:
        url = server.base_url.replace("http://", f"http://{SECRET}@")
        spec = parse_spec(f"{backend}:m", {"base_url": url, "max_retries": "0", "api_key_env": ""})
        assert spec.args["base_url"] == server.base_url.replace("http://", "http://***@")
        model = load_model(spec)
        try:
            ask = Request(sample_id="s1", prompt="Q?", question="Q?", options={"A": "Yes"})
            (response,) = model.generate([ask])
        finally:
            model.close()
        assert server.requests[0].headers.get("authorization") == basic
    assert response.status.value == "rejected" and "who is ***" in (response.error or "")
    assert _leaks(response.error or "") == []
