"""``tamper`` on a full disk stops at the first ``ENOSPC`` with exit 3, as ``eval`` does, keeping
what was built (it exited 0 with most of the build missing, one "No space left on device" line
per source). The full disk is injected: a clip's encode, or the manifest's progress write, fails
with ``OSError(ENOSPC)`` from the second of three sources on (``--jobs 1``, in source order)."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mmrobust.tamper.builder as builder
import mmrobust.tamper.source as source
from mmrobust.cli import app
from tests.synth import make_synthetic_video


@pytest.fixture
def three(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3):
        make_synthetic_video(src / f"c{i}.mp4", 40, 25, (64, 48), seed=i)
    return src


def _tamper(src: Path, out: Path) -> Any:
    args = ["tamper", str(src), "--out", str(out), "--effects", "masking", "--jobs", "1", "-q"]
    return CliRunner().invoke(app, args)


def _fail_from(n: int, real: Any) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) >= n:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    return call, calls


def test_a_clip_that_hits_a_full_disk_stops_the_build(
    three: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, calls = _fail_from(2, source.segment_variants)
    monkeypatch.setattr(source, "segment_variants", fake)
    out = tmp_path / "o"
    result = _tamper(three, out)
    assert result.exit_code == 3, result.output
    assert len(calls) == 2  # the third source was never started
    assert result.stderr.splitlines()[-1].startswith(
        f"error: stopped at a full disk: {three / 'c1.mp4'}: "
    )
    assert "No space left on device; the 2 clips built so far are kept" in result.stderr
    manifest = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert sorted(Path(e["source"]).name for e in manifest) == ["c0.mp4", "c0.mp4"]
    assert all((out / e["video"]).is_file() for e in manifest)
    monkeypatch.undo()
    again = _tamper(three, out)  # space freed: the same command resumes
    assert again.exit_code == 0, again.output
    assert "6 clips (4 built, 2 already done), 0 errors" in again.output


def test_a_manifest_write_that_hits_a_full_disk_stops_the_build(
    three: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, _ = _fail_from(2, builder.write_jsonl_atomic)
    monkeypatch.setattr(builder, "write_jsonl_atomic", fake)
    out = tmp_path / "o"
    result = _tamper(three, out)
    assert result.exit_code == 3, result.output
    assert (
        f"stopped at a full disk: {out / 'manifest.jsonl'}: No space left on device"
        in result.stderr
    )
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["id"].startswith("c0") for x in lines)
    assert not list(out.glob(".*.tmp")) and not (out / "videos" / "c2").exists()
