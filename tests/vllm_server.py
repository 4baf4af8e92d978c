"""Start a real vLLM OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

vLLM pins its own torch and transformers, so it usually lives in a venv of its own
(docs/models.md, "vLLM on a CPU-only machine"): ``MMROBUST_VLLM_PYTHON`` names that
venv's python. Without it, the current interpreter is used when it can import vLLM.
The server runs in its own process group and is always stopped on exit.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

ENV_PYTHON = "MMROBUST_VLLM_PYTHON"
ENV_START_TIMEOUT = "MMROBUST_VLLM_START_TIMEOUT"


def vllm_python() -> tuple[str | None, str]:
    """``(python, "")`` of an interpreter that has vLLM, or ``(None, why not)``."""
    configured = os.environ.get(ENV_PYTHON, "").strip()
    if configured:
        probe = subprocess.run(
            [configured, "-c", "import vllm, sys; sys.stdout.write(vllm.__version__)"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if probe.returncode != 0:
            last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"{ENV_PYTHON}={configured} cannot import vllm ({last})"
        return configured, ""
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable, ""
    return None, (
        f"vLLM is not installed here; set {ENV_PYTHON}=/path/to/vllm-venv/bin/python "
        "(install steps: docs/models.md, 'vLLM on a CPU-only machine')"
    )


def start_timeout() -> float:
    """Seconds the server may take to answer ``/models`` (``MMROBUST_VLLM_START_TIMEOUT``, 900)."""
    return float(os.environ.get(ENV_START_TIMEOUT, "900"))


def suite_timeout_s() -> float:
    """The opt-in test's own pytest timeout: the server's start timeout twice over (the start,
    then the evaluations through ``openai:`` and ``hf:``, about as long again on 2 busy cores;
    pytest's global 600 s cut a passing run that took 563-593 s, issue 31 item 5)."""
    return 2 * start_timeout()


def build_checkpoint(python: str, family: str, out: Path, *, seed: int = 0) -> Path:
    """Build a family's tiny checkpoint with ``python``'s transformers (vLLM's), return ``out``.

    transformers releases save some architectures under different weight names
    (5.24 writes a SigLIP tower as ``vision_tower.embeddings``, the released checkpoints
    and vLLM 0.32 expect ``vision_tower.vision_model.embeddings``); a checkpoint saved by
    the server's own transformers loads in both, as a hub checkpoint does.

    Raises:
        RuntimeError: the build failed (the message ends with its last output line).
    """
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "from tests.hf_families import FAMILIES; "
        "FAMILIES[sys.argv[2]].build(Path(sys.argv[3]), seed=int(sys.argv[4]))"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [python, "-c", code, str(root), family, str(out), str(seed)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"building {family} with {python} failed: {last}")
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def vllm_server(
    python: str,
    model: Path,
    *,
    served_name: str,
    log: Path,
    limit_mm: Mapping[str, int] | None = None,
    max_model_len: int = 2048,
    extra_args: Sequence[str] = (),
    timeout_s: float | None = None,
) -> Iterator[str]:
    """Serve ``model`` and yield its base URL (``http://127.0.0.1:PORT/v1``).

    CPU settings: ``--dtype float32 --enforce-eager``, ``VLLM_CPU_KVCACHE_SPACE=1`` (GiB).
    The server's output goes to ``log``.

    Raises:
        RuntimeError: the server exited or did not answer within ``timeout_s``
            (default ``MMROBUST_VLLM_START_TIMEOUT`` or 900 s); the message ends
            with the last lines of its log.
    """
    port = _free_port()
    cmd = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--max-model-len",
        str(max_model_len),
        "--enforce-eager",
        *(["--limit-mm-per-prompt", json.dumps(dict(limit_mm))] if limit_mm else []),
        *extra_args,
    ]
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    timeout = timeout_s or start_timeout()
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vLLM exited with {proc.returncode}: {_tail(log)}")
            try:
                if httpx.get(f"{base_url}/models", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM did not answer within {timeout:.0f} s: {_tail(log)}")
            time.sleep(2)
        yield base_url
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:])


__all__ = ["ENV_PYTHON", "build_checkpoint", "vllm_python", "vllm_server"]
