"""``finetune`` refuses bad inputs before torch loads or anything is written, in one line.

* ``--data nosuch``, ``--model openai:gpt-4o``, ``--out`` an existing file: one sentence with
  the fix, exit 2, no folder, torch and transformers never imported (before: 8 s of imports
  and an empty folder, a hub repo-id syntax error, a ``FileExistsError`` traceback);
* ``--eval-data`` that shares samples with the training data (the same file, the same
  image re-encoded under another name, the same text-only sample): refused unless
  ``--allow-overlap`` (before: an "eval loss (held out)" of trained-on samples);
* a hub id with the hub unreachable (or ``HF_HUB_OFFLINE`` set) and the model not cached:
  refused at once, naming ``HF_HUB_OFFLINE`` and a local folder, nothing left (before:
  minutes of download retries and ``OUT/run_config.json`` left behind);
* ``--report-to wandb`` / ``--log-to wandb`` with wandb installed but not logged in:
  refused before the run (before: a traceback after it).

No model is loaded here.
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.finetune.data import load_training_data


def _write(folder: Path, records: list[dict[str, Any]], name: str = "llava.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _record(rid: str, image: str | None, question: str, answer: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": rid,
        "conversations": [
            {"from": "human", "value": ("<image>\n" if image else "") + question},
            {"from": "gpt", "value": answer},
        ],
    }
    if image:
        record["image"] = image
    return record


def _noise(seed: int) -> np.ndarray:
    """A 96 x 128 BGR picture: seeded blocks of colour plus fine noise (distinct per seed)."""
    rng = np.random.default_rng(seed)
    blocks = cv2.resize(rng.integers(0, 200, (6, 8, 3)).astype(np.uint8), (128, 96))
    return (blocks + rng.integers(0, 56, (96, 128, 3))).clip(0, 255).astype(np.uint8)


@pytest.fixture()
def train_file(tmp_path: Path) -> Path:
    """Two image samples (noise pictures, PNG) and one text-only sample."""
    folder = tmp_path / "train"
    folder.mkdir()
    for i in range(2):
        cv2.imwrite(str(folder / f"p{i}.png"), _noise(i))
    records = [
        _record("t0", "p0.png", "What is shown?", "Noise."),
        _record("t1", "p1.png", "What is shown?", "A ramp."),
        _record("t2", None, "Name a primary colour.", "Red."),
    ]
    return _write(folder, records)


def _no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any import of torch or transformers fail (they are not to be needed)."""
    real = builtins.__import__

    def guard(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in ("torch", "transformers", "peft", "trl"):
            raise AssertionError(f"{name} imported before the inputs were checked")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", guard)


def _finetune(*args: str) -> Any:
    return CliRunner().invoke(app, ["finetune", *args, "--device", "cpu", "-q"])


def _one_error(result: Any) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_bad_inputs_fail_before_torch_and_leave_no_folder(
    train_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _no_torch(monkeypatch)
    missing = _one_error(_finetune("--model", "hf:org/m", "--data", "nosuch", "--out", str(out)))
    assert missing == "error: --data: no such data file: nosuch"
    wrong = _one_error(
        _finetune("--model", "openai:gpt-4o", "--data", str(train_file), "--out", str(out))
    )
    assert wrong.startswith("error: finetune takes an hf: model (hf:<hub-id> or hf:<local folder>)")
    assert "'openai:gpt-4o'" in wrong
    afile = tmp_path / "a-file"
    afile.write_text("x")
    for target, says in (
        (afile, "is a file"),
        (afile / "sub", f"is inside {afile}, which is a file"),
    ):
        line = _one_error(
            _finetune("--model", "hf:org/m", "--data", str(train_file), "--out", str(target))
        )
        assert line == (
            f"error: --out {target} {says}, not a folder; choose a folder (it is made when "
            "missing), or move that file away"
        )
    template = _one_error(
        _finetune(
            "--model", "hf:org/m", "--data", str(train_file), "--out", str(out),
            "--chat-template", str(tmp_path / "none.jinja"),
        )
    )  # fmt: skip
    assert template == f"error: --chat-template {tmp_path / 'none.jinja'}: no such file"
    assert not out.exists() and afile.read_text() == "x"


def test_eval_data_overlapping_the_training_data_is_refused(
    train_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmrobust.finetune.overlap import find_overlap

    out = tmp_path / "out"
    _no_torch(monkeypatch)
    line = _one_error(
        _finetune(
            "--model", "hf:org/m", "--data", str(train_file), "--eval-data", str(train_file),
            "--out", str(out),
        )
    )  # fmt: skip
    assert line == (
        "error: --eval-data overlaps the training data: 3 of 3 evaluation samples are also "
        "trained on (same sample id 3, same media 2, same content 3; e.g. 'llava:t0': training "
        f"'llava:t0' has {train_file.parent / 'p0.png'} too), so its loss would not be held out; "
        "evaluate on other samples, or pass --allow-overlap"
    )
    assert not out.exists()

    # other ids and questions: the same picture re-encoded (JPEG) under another name, the
    # text-only sample copied; a new picture and a new question are not overlaps
    held = tmp_path / "held"
    held.mkdir()
    cv2.imwrite(str(held / "copy.jpg"), _noise(0), [cv2.IMWRITE_JPEG_QUALITY, 90])
    cv2.imwrite(str(held / "new.png"), _noise(7))
    small = cv2.resize(_noise(1), (100, 75), interpolation=cv2.INTER_AREA)
    cv2.imwrite(str(held / "small.jpg"), small, [cv2.IMWRITE_JPEG_QUALITY, 75])
    eval_file = _write(
        held,
        [
            _record("e0", "copy.jpg", "Describe the picture.", "Static."),
            _record("e1", None, "name a  primary colour.", "Red."),
            _record("e2", "new.png", "What is shown?", "Noise."),
            _record("e3", "small.jpg", "What is it?", "Blocks."),
        ],
    )
    train, _ = load_training_data([train_file])
    evaluation, _ = load_training_data([eval_file])
    found = find_overlap(train, evaluation)
    assert (found.samples, found.same_id, found.same_media, found.same_content) == (3, 0, 2, 1)
    assert found.example == "llava:e0"
    assert found.why == (
        f"{held / 'copy.jpg'} is the same picture as {train_file.parent / 'p0.png'} of training "
        "'llava:t0'"
    )
    assert find_overlap(train, evaluation[2:3]).line() is None

    # plain-colour pictures: a black frame shared by two clips is not an overlap; one
    # plain image on both sides is
    for name, value in (("black-a.png", 0), ("black-b.png", 0), ("red.png", 90)):
        cv2.imwrite(str(held / name), np.full((32, 32, 3), value, np.uint8))
    clip = _record("c0", None, "<image><image>\nIs it tampered?", "No.")
    clip["image"] = ["black-a.png", "new.png"]
    other = _record("c1", None, "<image><image>\nIs it tampered?", "Yes.")
    other["image"] = ["black-b.png", "copy.jpg"]
    left, _ = load_training_data(
        [_write(held, [clip, _record("r0", "red.png", "Q?", "A.")], "a.json")]
    )
    right, _ = load_training_data(
        [_write(held, [other, _record("r1", "red.png", "Q2?", "B.")], "b.json")]
    )
    assert [c.id for c in left] == ["a:c0", "a:r0"] and len(right) == 2
    assert find_overlap(left[:1], right[:1]).samples == 0
    assert find_overlap(left[1:], right[1:]).same_media == 1

    # --allow-overlap passes the check (and goes on to the model, which does not exist here)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    allowed = CliRunner().invoke(
        app,
        ["finetune", "--model", "hf:mmrobust-test/not-cached-anywhere", "--data", str(train_file),
         "--eval-data", str(train_file), "--allow-overlap", "--out", str(out), "-q"],
    )  # fmt: skip
    assert allowed.exit_code == 2 and "overlaps" not in allowed.output
    assert "HF_HUB_OFFLINE is set" in allowed.output


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_hub_model_without_network_fails_at_once(train_file: Path, tmp_path: Path) -> None:
    """The hub at a closed local port (connection refused), an empty cache, no HF_HUB_OFFLINE."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}", HF_HOME=str(tmp_path / "hf"))
    command = [sys.executable, "-m", "mmrobust.cli", "finetune", "--model", "hf:org/model"]
    command += ["--data", str(train_file), "--out", str(out), "-q"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: finetune: cannot reach the Hugging Face hub for 'org/model'")
    assert "pass a local folder" in lines[0] and "HF_HUB_OFFLINE=1" in lines[0]
    assert not out.exists()


def test_offline_hub_id_not_cached_fails_at_once(
    train_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _no_torch(monkeypatch)
    line = _one_error(
        _finetune(
            "--model", "hf:mmrobust-test/not-cached-anywhere", "--data", str(train_file),
            "--out", str(out),
        )
    )  # fmt: skip
    assert line == (
        "error: finetune: HF_HUB_OFFLINE is set and 'mmrobust-test/not-cached-anywhere' is not "
        "in the local Hugging Face cache: pass a local folder (--model hf:/path/to/model), or "
        "download it first with the network on"
    )
    assert not out.exists()


@pytest.fixture()
def logged_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """wandb installed, no credentials anywhere: no key, no netrc, an empty home."""
    pytest.importorskip("wandb", reason="wandb is not installed (pip install 'mmrobust[wandb]')")
    home = tmp_path / "home"
    home.mkdir()
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DISABLED", "NETRC", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("WANDB_IDENTITY_TOKEN_FILE", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(home / ".config" / "wandb"))
    return home


LOGGED_OUT = (
    "--log-to wandb: not logged in to W&B (api.wandb.ai: no WANDB_API_KEY, no netrc entry): "
    "run `wandb login` first, or set WANDB_MODE=offline to log locally for a later `wandb sync`"
)


def test_wandb_without_login_is_refused_before_the_run(
    logged_out: Path, train_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmrobust.wandb_login import wandb_problem

    assert wandb_problem() == LOGGED_OUT
    out = tmp_path / "r"
    for command in (
        ["eval", "--data", "mmr-demo", "--model", "constant:A", "--out", str(out), "-q"],
        ["run", "--data", "mmr-demo", "--model", "constant:A", "--out", str(out), "-q"],
        ["report", str(out), "--out", str(tmp_path / "rep")],
    ):
        line = _one_error(CliRunner().invoke(app, [*command, "--log-to", "wandb"]))
        assert line == f"error: {LOGGED_OUT}", command
    assert not out.exists() and not (tmp_path / "rep").exists()
    with monkeypatch.context() as patch:
        _no_torch(patch)
        line = _one_error(
            _finetune(
                "--model", "hf:org/m", "--data", str(train_file), "--out", str(out),
                "--report-to", "wandb",
            )
        )  # fmt: skip
    assert line == "error: " + LOGGED_OUT.replace("--log-to", "--report-to")
    assert not out.exists()

    # any of W&B's own credential sources, or offline mode, is enough
    (logged_out / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password k\n")
    (logged_out / ".netrc").chmod(0o600)
    assert wandb_problem() is None
    (logged_out / ".netrc").unlink()
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert wandb_problem() is None
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    assert wandb_problem() is None
