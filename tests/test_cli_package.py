"""The ``mmrobust.cli`` package (issue 26): the old entry points still work, and what the
commands did inline is now a library call a notebook can make (each with a hand-checked value).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.audit import write_audit
from mmrobust.cli import app, main
from mmrobust.media.sampling import FramePolicy
from mmrobust.mmrdata.command import no_sample_error, summary_line
from mmrobust.mmrdata.pipeline import MMRDataSummary


def test_python_m_mmrobust_cli_runs_the_command() -> None:
    """``python -m mmrobust.cli`` (tests and docs use it) needs ``cli/__main__.py``."""
    out = subprocess.run(
        [sys.executable, "-m", "mmrobust.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("mmrobust ")
    assert callable(main)


def test_commands_in_help_order() -> None:
    """The command modules register in the order ``mmrobust --help`` listed before the split."""
    names = [c.name for c in app.registered_commands]
    assert names == [
        "tamper", "perturb", "eval", "rescore", "report", "compare", "export", "audit", "mmr-data", "list",
        "finetune", "tamper-data", "run", "demo",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((8, None, None), FramePolicy(mode="segments", n_frames=8)),
        ((4, 2.0, 10), FramePolicy(mode="fps", fps=2.0, max_frames=10)),
    ],
)
def test_frame_policy_choose(
    args: tuple[int, float | None, int | None], expected: FramePolicy
) -> None:
    assert FramePolicy.choose(*args) == expected


@pytest.mark.parametrize("fps", [math.inf, math.nan])
def test_frame_policy_choose_refuses_a_non_finite_fps(fps: float) -> None:
    with pytest.raises(ValueError, match="--fps must be a finite positive number"):
        FramePolicy.choose(8, fps)


def test_audit_fps_inf_is_one_line_exit_2(real_tamper_set: Path) -> None:
    """``audit --fps inf`` now gets eval's check (before: a policy that sends frame 0 only)."""
    res = CliRunner().invoke(app, ["audit", str(real_tamper_set), "--fps", "inf"])
    assert res.exit_code == 2, res.output
    assert "error: --fps must be a finite positive number, not inf" in res.output


def test_write_audit(tmp_path: Path) -> None:
    path = write_audit({"n_clips": 3}, tmp_path / "a")
    assert path == tmp_path / "a" / "audit.json"
    assert path.read_text(encoding="utf-8") == '{\n  "n_clips": 3\n}\n'
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"^cannot write .*audit\.json: "):
        write_audit({}, tmp_path / "file")  # a file where the folder should be


def _summary(turns: int, dropped: dict[str, int]) -> MMRDataSummary:
    return MMRDataSummary(
        out_dir=Path("o"), images=2, statuses={"ok": 2}, pairs_parsed=3, pairs_kept=1,
        turns_kept=turns, dropped=dropped, skipped=0,
    )  # fmt: skip


def test_mmr_data_summary_and_no_sample_error() -> None:
    s = _summary(2, {})
    assert summary_line(s) == (
        "2 images {'ok': 2}; pairs kept 1 of 3; LLaVA samples 2; dropped {}; outputs in o"
    )
    assert no_sample_error(s) is None
    empty = _summary(0, {"uncertain": 2})
    assert no_sample_error(empty) == (
        "generated no training sample from 2 images (statuses {'ok': 2}, dropped {'uncertain': 2})"
    )
    assert no_sample_error(empty, "a.png: boom") == (
        "generated no training sample from 2 images (a.png: boom)"
    )


def test_tamper_repeated_position_is_one_line_exit_2(
    real_clips: dict[str, Path], tmp_path: Path
) -> None:
    """``--position`` is parsed by the library (``run_tamper`` takes the comma list); a repeated
    position still stops before any build with one line."""
    clip = str(real_clips["bikes"])
    res = CliRunner().invoke(
        app, ["tamper", clip, "--out", str(tmp_path / "o"), "--position", "start,start"]
    )
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
