"""``--data hf:...``: a hub snapshot read by huggingface_hub itself, offline.

The hub cache is laid out as huggingface_hub lays it out (``datasets--<owner>--<name>/``
with ``blobs/<hash>``, ``refs/main`` holding the commit, and
``snapshots/<commit>/<path>`` as relative symlinks to the blobs), so
``snapshot_download`` runs its real offline code path: the released layout
(``json/<task>.json`` and one zip per source under ``video/``, as the
reference toolkit unzips it: VLMEvalKit ``vlmeval/dataset/tamperbench.py`` at
e8e78f05, ``unzip_hf_zip``). Error paths talk to a local HTTP server that
answers as the hub does (``X-Error-Code`` headers); nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from mmrobust.datasets import DatasetError, load_dataset
from mmrobust.datasets.hub import HubRef, parse_hub_ref, snapshot
from mmrobust.media import read_frames
from tests.synth import make_synthetic_video, synthetic_frame

REPO = "Srikant86/MVTamperBenchSample"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def populate_hub_cache(cache: Path, repo_id: str, files: dict[str, bytes], commit: str) -> Path:
    """Write ``files`` as a cached dataset snapshot, the way huggingface_hub stores one."""
    repo = cache / f"datasets--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)  # no trailing newline, as the library writes it
    for rel, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return repo / "snapshots" / commit


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _row(video: str, tamper_type: str = "original") -> dict[str, object]:
    return {"video": video, "question": "q?", "candidates": ["Yes", "No"],
            "answer": "No" if tamper_type == "original" else "Yes", "tamper_type": tamper_type}  # fmt: skip


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cached snapshot of the released layout: two sources that both have video_0001.mp4."""
    tmp = tmp_path_factory.mktemp("hub")
    clip = {
        s: make_synthetic_video(tmp / f"{s}.mp4", 10, 25, (48, 32), seed=s).read_bytes()
        for s in (1, 2)
    }
    files = {
        "json/object_existence.json": json.dumps([_row("video_0001.mp4")]).encode(),
        "json/object_shuffle.json": json.dumps([_row("video_0001.mp4")]).encode(),
        "video/clevrer.zip": _zip({"clevrer/video_validation/video_0001.mp4": clip[1]}),
        "video/perception.zip": _zip({"perception/videos/video_0001.mp4": clip[2]}),
        "README.md": b"# sample\n",
    }
    cache = tmp / "hf-cache"
    populate_hub_cache(cache, REPO, files, COMMIT)
    return cache


@pytest.fixture()
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """HF_HUB_OFFLINE=1 for the library (read at import, so set on its constants too)."""
    import huggingface_hub.constants as c

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)


def _seed(path: Path) -> int:
    frame = read_frames(path, [3])[0]
    errs = {
        s: np.abs(frame.astype(int) - synthetic_frame(3, 48, 32, seed=s)).mean() for s in (1, 2)
    }
    return min(errs, key=lambda s: errs[s])


def test_parse_hub_ref() -> None:
    assert parse_hub_ref("hf:Srikant86/MVTamperBench") == HubRef("Srikant86/MVTamperBench")
    assert parse_hub_ref("hf:MVTamperBenchEnd@v1") == HubRef("Srikant86/MVTamperBenchEnd", "v1")
    assert (
        parse_hub_ref("hf:MVTamperBenchSample_Start").repo_id
        == "Srikant86/MVTamperBenchSample_Start"
    )
    with pytest.raises(DatasetError, match="expected hf:<owner>/<name>"):
        parse_hub_ref("hf:nonsense")


def test_offline_cache_unzips_once_and_resolves_by_task(
    hub_cache: Path, tmp_path: Path, offline: None
) -> None:
    unzip = tmp_path / "unzipped"
    ds = load_dataset(f"hf:{REPO}", hub_cache=hub_cache, unzip_dir=unzip)
    assert ds.source == f"hf:{REPO}" and ds.name == "MVTamperBenchSample"
    hub = ds.info["hub"]
    assert (hub["commit"], hub["zips"], hub["unzipped_now"]) == (COMMIT, 2, 2)
    assert ds.info["media"]["found"] == 2 and ds.info["media"]["missing"] == 0
    by_task = {s.task: s.video for s in ds.samples}
    assert by_task["object_existence"] == unzip / "video/clevrer/video_validation/video_0001.mp4"
    assert by_task["object_shuffle"] == unzip / "video/perception/videos/video_0001.mp4"
    assert _seed(by_task["object_existence"]) == 1 and _seed(by_task["object_shuffle"]) == 2
    # Unzipped once: a second load trusts the completion markers.
    again = load_dataset(f"hf:{REPO}", hub_cache=hub_cache, unzip_dir=unzip)
    assert again.info["hub"]["unzipped_now"] == 0
    # An interrupted unzip (no marker; a half-written file) is redone, not trusted.
    clip = unzip / "video/perception/videos/video_0001.mp4"
    clip.write_bytes(clip.read_bytes()[:100])
    (unzip / ".mmrobust-unzipped" / "video__perception.zip.json").unlink()
    redone = load_dataset(f"hf:{REPO}", hub_cache=hub_cache, unzip_dir=unzip)
    assert redone.info["hub"]["unzipped_now"] == 1 and _seed(clip) == 2


def test_offline_without_a_cached_copy_says_so(tmp_path: Path, offline: None) -> None:
    with pytest.raises(DatasetError, match=r"not \(completely\) in the local hub cache"):
        snapshot(HubRef("Srikant86/MVTamperBench"), cache_dir=tmp_path)


def test_cli_eval_offline_in_a_fresh_process(hub_cache: Path, tmp_path: Path) -> None:
    """HF_HUB_OFFLINE=1 as a user sets it; the endpoint is unroutable, so any call would fail."""
    env = {
        **os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache),
        "HF_ENDPOINT": "http://127.0.0.1:9", "MMROBUST_CACHE": str(tmp_path / "mm"),
    }  # fmt: skip
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "mmrobust.cli", "eval", "--data", f"hf:{REPO}", "--model",
         "constant:A", "--model-arg", "media=frames", "--out", str(out), "-q", "--bootstrap", "0"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["dataset"]["hub"]["commit"] == COMMIT and run["dataset"]["n_samples"] == 2
    assert json.loads((out / "metrics.json").read_text())["status_counts"] == {"ok": 2}
    assert (tmp_path / "mm" / "unzipped" / REPO.replace("/", "--") / "video").is_dir()


class _Hub(BaseHTTPRequestHandler):
    """Answers every request as the hub does for a gated repo, or for a missing token."""

    code = "GatedRepo"

    def do_GET(self) -> None:
        status = 403 if self.code == "GatedRepo" else 401
        body = json.dumps({"error": "Access to this dataset is restricted."}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", self.code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Hub]]:
    import huggingface_hub.constants as c

    handler = type("Hub", (_Hub,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(c, "ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_gated_or_missing_token_is_one_line_saying_how_to_get_access(
    fake_hub: type[_Hub], tmp_path: Path
) -> None:
    ref = HubRef("Srikant86/MVTamperBench")
    with pytest.raises(DatasetError) as gated:
        snapshot(ref, cache_dir=tmp_path)
    msg = str(gated.value)
    assert "\n" not in msg and "is gated: request access at" in msg
    assert "https://huggingface.co/datasets/Srikant86/MVTamperBench" in msg and "HF_TOKEN" in msg
    fake_hub.code = "RepoNotFound"
    with pytest.raises(DatasetError, match="was not found, or it needs a token: log in"):
        snapshot(ref, cache_dir=tmp_path)
