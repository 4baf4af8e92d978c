"""Out-of-range counts are refused at the start, exit 2, nothing made: ``--bootstrap -5``
(was accepted: ``n_resamples: -5``, no CI) and ``--permute -1`` (was recorded as 0), on every
command that takes them, and in ``EvalConfig.validate`` for notebooks."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.run.config import EvalConfig

EVAL = ["eval", "--model", "constant:A", "--data", "mmr-demo", "--limit", "2", "-q"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        ([*EVAL, "--bootstrap", "-5"], "--bootstrap"),
        ([*EVAL, "--permute", "-1"], "--permute"),
        (["run", "--model", "constant:A", "--data", "mmr-demo", "-q", "--bootstrap", "-1"],
         "--bootstrap"),
        (["demo", "--bootstrap", "-1"], "--bootstrap"),
        (["rescore", "RUN", "--bootstrap", "-2"], "--bootstrap"),
    ],
)  # fmt: skip
def test_a_negative_count_is_refused_before_any_work(
    args: list[str], option: str, tmp_path: Path
) -> None:
    out = ["--out", str(tmp_path / "out")] if args[0] in ("eval", "run", "demo") else []
    args = [str(tmp_path / "run") if a == "RUN" else a for a in args]
    result = CliRunner().invoke(app, [*args, *out])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert "greater than or equal to 0" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("field", "option"), [("permute", "--permute"), ("n_resamples", "--bootstrap")]
)
def test_the_library_refuses_them_too(field: str, option: str) -> None:
    config = EvalConfig(data="mmr-demo", model="constant:A", out="x", **{field: -1})
    with pytest.raises(ValueError, match=f"^{option} must be 0 or more, not -1$"):
        config.validate()
