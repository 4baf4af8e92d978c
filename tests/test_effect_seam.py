"""docs/extending.md "Add a tamper effect": the worked example (``posterize``) defined in this
file, registered with one ``EFFECTS.register`` call, built by ``mmrobust tamper`` on a real clip
and listed by ``mmrobust list effects``, with no change under ``src/`` (issue 26).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import Field
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import read_frames
from mmrobust.tamper.effects import EFFECTS, Effect, EffectContext, EffectParamError, make_effect


class Posterize(Effect):
    """Quantise every channel of the window's frames to ``levels`` levels (a banding artefact).

    Args:
        levels: intensity levels per channel, 2-128 (default 4): ``v -> (v // step) * step``
            with ``step = 256 // levels``.
    """

    name = "posterize"
    levels: int = Field(default=4, ge=2, le=128)

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        step = 256 // self.levels
        return [(f // step * step).astype(np.uint8) for f in window]


@pytest.fixture
def posterize() -> Iterator[type[Posterize]]:
    """Registered for one test only (the catalog tests count the built-in effects)."""
    EFFECTS.register("posterize", Posterize)
    yield Posterize
    EFFECTS.unregister("posterize")


def test_apply_is_frame_exact(posterize: type[Posterize]) -> None:
    frame = np.array([[[0, 63, 64], [200, 255, 128]]], dtype=np.uint8)  # (1, 2, 3)
    out = make_effect("posterize").apply([frame], EffectContext(rng=np.random.default_rng(0)))
    assert out[0].tolist() == [[[0, 0, 64], [192, 192, 128]]]
    two = make_effect("posterize", levels=2).apply([frame], EffectContext(np.random.default_rng()))
    assert two[0].tolist() == [[[0, 0, 0], [128, 128, 128]]]
    with pytest.raises(EffectParamError, match=r"unknown parameter posterize\.level "):
        make_effect("posterize", level=3)


def test_tamper_builds_it_and_list_shows_it(
    posterize: type[Posterize], real_clips: dict[str, Path], tmp_path: Path
) -> None:
    clip = (
        real_clips["bigbuckbunny"]
        if "bigbuckbunny" in real_clips
        else next(iter(real_clips.values()))
    )
    out = tmp_path / "set"
    res = CliRunner().invoke(
        app,
        ["tamper", str(clip), "--out", str(out), "--effects", "posterize", "-p", "posterize.levels=2",
         "--codec", "libx264", "--crf", "0", "--preset", "ultrafast", "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    entry = next(r for r in rows if r["tamper_type"] == "posterize")
    assert entry["params"] == {"levels": 2}
    w = entry["window_output"]
    inside = read_frames(out / entry["video"], [w["start_frame"], w["end_frame"] - 1])
    outside = read_frames(out / entry["video"], [w["start_frame"] - 1, w["end_frame"]])

    def off_levels(frames: np.ndarray) -> float:
        """Mean distance of each channel value to the nearer of the two levels, 0 and 128."""
        v = frames.astype(np.int16)
        return float(np.minimum(np.abs(v), np.abs(v - 128)).mean())

    # lossless x264 in yuv420p: the posterized window stays near its two levels; the frames
    # just outside it (the source's) do not
    assert off_levels(inside) < 5 < 20 < off_levels(outside)  # measured: 2.6 and 43.4

    listed = CliRunner().invoke(app, ["list", "effects", "--json"])
    assert listed.exit_code == 0, listed.output
    (entry,) = [e for e in json.loads(listed.output)["effects"] if e["name"] == "posterize"]
    assert entry["summary"].startswith("Quantise every channel of the window's frames")
    assert [(p["name"], p["type"], p["default"], p["bounds"]) for p in entry["params"]] == [
        ("levels", "int", 4, ">= 2, <= 128")
    ]
