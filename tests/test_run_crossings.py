"""Where run features meet (issue 27 items 1-4): the run key of a model loaded elsewhere,
Ctrl-C, resume identity, server limits some samples hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrobust.models.spec import frame_encoding_of, load_model
from mmrobust.run.config import EvalConfig
from mmrobust.run.keys import key_difference, key_parts


def test_the_frame_encoding_of_a_spec_is_the_loaded_models(tmp_path: Path) -> None:
    for spec, args in (
        ("openai:m", {}),
        ("openai:m", {"jpeg_quality": "70", "image_max_side": "512"}),
        ("anthropic:m", {"jpeg_quality": "80", "api_key_env": ""}),
        ("constant:A", {}),
        ("forensic", {}),
    ):
        model = load_model(spec, args)
        try:
            assert frame_encoding_of(spec, args) == model.frame_encoding()
        finally:
            model.close()
    assert (frame_encoding_of("openai:m").quality, frame_encoding_of("openai:m").max_side) == (
        90,
        1024,
    )


def test_a_key_mismatch_names_the_fields_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from mmrobust.distributed.eval import RemoteModel, check_same_key

    config = EvalConfig(data="d", model="openai:m", out=str(tmp_path), frames=4)
    real = load_model("openai:m", {})
    try:
        theirs = key_parts(real, config.prompt_config(), config.policy(), text_only=False)
    finally:
        real.close()
    info = {
        "name": "m",
        "batch_size": 1,
        "max_concurrency": 4,
        "fingerprint": theirs["model"],
        "media_input": "frames",
        "key_parts": theirs,
    }
    check_same_key(config, RemoteModel.from_info(info, frame_encoding_of("openai:m")), info)
    stand_in = RemoteModel.from_info(info)  # the old driver: default encoding (q95, full size)
    with pytest.raises(ValueError) as err:
        check_same_key(config, stand_in, info)
    line = str(err.value)
    assert "\n" not in line
    assert "frame_encoding.quality 95 here, 90 there" in line
    assert "frame_encoding.max_side None here, 1024 there" in line
    assert "media.encoding" not in line and "install the same mmrobust" in line
    ours = key_parts(stand_in, config.prompt_config(), config.policy(), text_only=False)
    assert key_difference(ours, ours) is None


# -- item 2: one Ctrl-C always ends with the finished rows, metrics.json, run.json, exit 130 -


def _jsonl(path: Path, n: int) -> Path:
    import json

    lines = [
        json.dumps({"id": f"s{i:02d}", "question": "q?", "options": ["Yes", "No"], "answer": "A"})
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(run: Path) -> int:
    import contextlib
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(run / "results.sqlite", timeout=1)) as db:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0


def _interrupt_once(
    data: Path, out: Path, base_url: str, workers: int, when: str
) -> tuple[int, str]:
    """Run ``mmrobust eval`` in a subprocess, send one SIGINT at ``when`` (``locked``: the run
    folder's lock taken, model loading; ``started``: run.json written; ``rows:N``: N rows
    stored); return its exit code and stderr."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "mmrobust.cli", "eval", "--data", str(data), "--out", str(out)]
    cmd += ["--model", "openai:slow", "--model-arg", f"base_url={base_url}", "-q"]
    cmd += ["--model-arg", "max_retries=0", "--workers", str(workers), "--bootstrap", "20"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if when == "locked" and (out / ".lock").exists():  # the model is loading
            break
        if when == "started" and (out / "run.json").is_file():
            break
        if when.startswith("rows:") and _rows(out) >= int(when[5:]):
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before the interrupt ({when})"
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


CTRL_C_AT = ["locked", "started", "rows:1", "rows:3", "rows:6"]
"""Where ``test_one_ctrl_c_...`` interrupts a run (``_interrupt_once``): each point once per
``--workers`` (1 and 4)."""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 4])
def test_one_ctrl_c_always_writes_metrics_and_run_json_and_exits_130(
    tmp_path: Path, workers: int
) -> None:
    """Each attempt is its own ``mmrobust eval`` process with its own run folder; two run at
    once (a process spends most of its life starting Python and importing: CPU one core
    gives, while the other waits on the fake server)."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    from tests.fake_openai_server import FakeOpenAIServer, Reply

    data = _jsonl(tmp_path / "d.jsonl", 24)

    def attempt(number: int, when: str) -> tuple[str, int, bool, list[str]]:
        out = tmp_path / f"run{number}"
        code, err = _interrupt_once(data, out, srv.base_url, workers, when)
        metrics_file, info_file = out / "metrics.json", out / "run.json"
        ok = code == 130 and metrics_file.is_file() and info_file.is_file()
        info = json.loads(info_file.read_text()) if info_file.is_file() else {}
        metrics = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
        ok = ok and info.get("interrupted") is True and info.get("complete") is False
        ok = ok and metrics.get("complete") is False and info.get("n_rows") == _rows(out)
        return (when, code, ok, err.strip().splitlines()[-1:] if err else [])

    with (
        FakeOpenAIServer(
            responder=lambda _req: Reply(body=Reply.ok("A").body, delay_s=0.15)
        ) as srv,
        ThreadPoolExecutor(2) as pool,
    ):
        outcomes = list(pool.map(attempt, range(len(CTRL_C_AT)), CTRL_C_AT))
    assert len(outcomes) == 5
    assert all(ok for _, _, ok, _ in outcomes), outcomes


# -- item 3: a sample's identity is its content, not the spelling of its path ---------------


def test_resume_from_another_cwd_or_spelling_asks_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27 item 3: a finished run re-run from another directory, or with
    ``p4/../p4/build``, re-asked (and re-paid) every sample: the stored sample held the
    media path as spelled."""
    import cv2
    import numpy as np
    from typer.testing import CliRunner

    from mmrobust.cli import app
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.synth import make_synthetic_video

    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    make_synthetic_video(tmp_path / "src" / "clip.mp4", 50, fps=25)
    built = CliRunner().invoke(
        app, ["tamper", "src", "--out", "p4/build", "--effects", "masking,rotation", "-q"]
    )
    assert built.exit_code == 0, built.output
    (tmp_path / "imgs").mkdir()  # a JSONL with images: no sha256, identity by resolved path
    lines = []
    for i in range(3):
        cv2.imwrite(str(tmp_path / "imgs" / f"{i}.png"), np.full((16, 16, 3), 40 * i, np.uint8))
        lines.append(
            f'{{"id": "i{i}", "image": "{i}.png", "question": "q", "options": ["a", "b"], '
            '"answer": "A"}'
        )
    (tmp_path / "imgs" / "d.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "elsewhere").mkdir()

    with FakeOpenAIServer() as server:
        model = ["--model", "openai:m", "--model-arg", f"base_url={server.base_url}"]
        model += ["--model-arg", "max_retries=0", "--frames", "2", "--bootstrap", "0", "-q"]

        def run(cwd: Path, data: str, out: str) -> str:
            monkeypatch.chdir(cwd)
            res = CliRunner().invoke(app, ["eval", "--data", data, "--out", out, *model])
            assert res.exit_code == 0, res.output
            return str(res.output)

        for data, n in (("p4/build", 3), ("imgs/d.jsonl", 3)):
            out = f"runs/{data.split('/')[0]}"
            assert f"{n} new rows, 0 resumed" in run(tmp_path, data, out)
            asked = len(server.chat_requests)
            for cwd, spelled, out_spelled in (
                (tmp_path / "elsewhere", f"../{data}", f"../{out}"),
                (tmp_path, f"{data.split('/')[0]}/../{data}", out),
                (tmp_path / "elsewhere", str(tmp_path / data), str(tmp_path / out)),
            ):
                output = run(cwd, spelled, out_spelled)
                assert f"0 new rows, {n} resumed" in output, (spelled, output)
            assert len(server.chat_requests) == asked  # nothing asked (or paid) again


# -- item 4: a server limit only some samples hit does not stop the run ---------------------

CONTEXT_400 = (
    "This model's maximum context length is 4096 tokens. However, you requested 5200 tokens "
    "(5100 in the messages, 100 in the completion). Please reduce the length of the messages "
    "(too many image tokens)."
)


def _image_set(root: Path, widths: list[int]) -> Path:
    import json

    import cv2
    import numpy as np

    root.mkdir()
    lines = []
    for i, w in enumerate(widths):
        cv2.imwrite(str(root / f"{i:02d}.png"), np.full((60, w, 3), 9 * i, np.uint8))
        rec = {"id": f"i{i:02d}", "image": f"{i:02d}.png", "question": "q", "answer": "A"}
        lines.append(json.dumps({**rec, "options": ["a", "b"]}))
    (root / "d.jsonl").write_text("\n".join(lines) + "\n")
    return root / "d.jsonl"


def _refuse_wide(req: object) -> object:
    from tests.fake_openai_server import Reply, decode_data_url_image

    parts = [p for p in req.user_content if p.get("type") == "image_url"]  # type: ignore[attr-defined]
    wide = any(decode_data_url_image(p["image_url"]["url"]).shape[1] > 200 for p in parts)
    return Reply.error(400, message=CONTEXT_400) if wide else Reply.ok("A")


@pytest.mark.parametrize("workers", ["1", "4"])
def test_a_context_limit_some_samples_hit_stores_them_rejected_and_goes_on(
    tmp_path: Path, workers: str
) -> None:
    """Issue 27 item 4: 30 of 42 wide clips refused with "maximum context length ... too many
    image tokens" stopped every run at once (exit 3, 0 rows); the clips that fit were never
    asked."""
    from typer.testing import CliRunner

    from mmrobust.cli import app
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.runs import stored_rows

    widths = [400, 400, 60, 400, 400, 400, 60, 400, 400, 60, 400, 60]  # 8 wide, 4 fit
    data = _image_set(tmp_path / "imgs", widths)
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=_refuse_wide) as server:  # type: ignore[arg-type]
        args = ["eval", "--data", str(data), "--model", "openai:m", "--out", str(out), "-q"]
        args += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
        args += ["--bootstrap", "0", "--workers", workers]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        assert len(server.chat_requests) == 12  # every sample asked once
    rows = stored_rows(out)
    status = {sid: r["status"] for sid, r in rows.items()}
    assert sorted(status) == [f"i{i:02d}" for i in range(12)]
    assert [status[f"i{i:02d}"] for i in range(12)] == [
        "ok" if w == 60 else "rejected" for w in widths
    ]
    assert res.output.count("they are stored as rejected") == 1  # the fix, once
    assert "--max-model-len" in res.output and "--retry-failed" in res.output


def test_a_context_limit_nearly_every_sample_hits_stops_the_run(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mmrobust.cli import app
    from tests.fake_openai_server import FakeOpenAIServer

    data = _image_set(tmp_path / "imgs", [400] * 12)
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=_refuse_wide) as server:  # type: ignore[arg-type]
        args = ["eval", "--data", str(data), "--model", "openai:m", "--out", str(out), "-q"]
        args += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
        res = CliRunner().invoke(app, [*args, "--bootstrap", "0", "--workers", "1"])
        assert len(server.chat_requests) == 9  # 9 of the first 10: stopped, nothing more asked
    assert res.exit_code == 3, res.output
    assert "the server refused 9 of the first 9 samples with a limit" in res.output
    assert "--max-model-len" in res.output
    from tests.runs import stored_rows

    assert stored_rows(out) == {}  # nothing stored: every sample is asked again after the fix


@pytest.mark.slow
def test_a_second_ctrl_c_ends_at_once_with_130(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    from tests.fake_openai_server import FakeOpenAIServer, Reply

    data = _jsonl(tmp_path / "d.jsonl", 6)
    out = tmp_path / "run"
    hang = Reply.hang(60.0)  # every request hangs: only the second Ctrl-C can end the run
    with FakeOpenAIServer(responder=lambda _req: hang) as srv:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        cmd = [sys.executable, "-m", "mmrobust.cli", "eval", "--data", str(data), "--out"]
        cmd += [str(out), "--model", "openai:slow", "--model-arg", f"base_url={srv.base_url}"]
        cmd += ["--model-arg", "max_retries=0", "--workers", "2", "-q", "--bootstrap", "0"]
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        first_said = threading.Event()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if "interrupt: no new requests" in line:
                    first_said.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while not srv.chat_requests and proc.poll() is None:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)
        # the second Ctrl-C only once the first was handled (a pause could let both arrive as one)
        assert first_said.wait(120), "".join(lines)
        assert proc.poll() is None  # the first one waits for the requests in flight
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=50)  # a hang guard, below the server's 60 s
        reader.join(10)
        err = "".join(lines)
    assert proc.returncode == 130, err
    assert "interrupt: no new requests" in err  # said at the first one
    assert "interrupted twice: stopped at once" in err
    assert "Traceback" not in err
