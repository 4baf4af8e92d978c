"""Messages of the video fine-tuning recipe that name the right fix (a new user's run-through).

* ``finetune --max-steps 4``: the too-few-steps warning named ``--global-batch 32``, which
  changes nothing under ``--max-steps`` (it overrides epochs and batch); it names
  ``--max-steps`` now.
* ``tamper-data`` on 4 videos, one held out: the held-out side cannot build substitution
  (donors come from the same side); the command printed only ``1 problems``, and the
  stored reason named ``--donor PATH``, an option of ``tamper``, not of ``tamper-data``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.finetune.safeguards import schedule_warning
from mmrobust.finetune.tamper_data import EVAL, TRAIN, TamperDataReport, build_problem
from mmrobust.schema.window import WindowError
from mmrobust.tamper.plan import choose_donor


def test_max_steps_warning_names_max_steps_not_the_batch() -> None:
    # 324 samples at global batch 4 are 81 steps per epoch; --max-steps 4 caps them at 4
    line = schedule_warning(324, 4, 4, 1, max_steps=4)
    assert line == (
        "warning: --max-steps 4 gives 4 optimizer step(s), 1 of warm-up; its first step has "
        "learning rate 0: too few for the schedule; use --max-steps 10 or more"
    )
    assert schedule_warning(324, 4, 10, 1, max_steps=10) is None
    # without --max-steps the batch is the cause, and the old advice stands
    assert schedule_warning(16, 128, 1, 1) == (
        "warning: 16 samples at global batch 128 give 1 optimizer step(s) (all of it warm-up), "
        "1 of warm-up; its first step has learning rate 0: too few for the schedule; "
        "use --global-batch 1 (about 10 steps) or more --epochs"
    )


def _donor_reason() -> str:
    """The builder's own message for a source with no other video to draw a donor from."""
    plan: Any = SimpleNamespace(sha256="ab" * 32)
    with pytest.raises(WindowError) as info:
        choose_donor(plan, 25, [], seed=0)
    return str(info.value)


def test_missing_donor_names_tamper_data_fixes() -> None:
    reason = _donor_reason()
    assert "--donor" in reason  # tamper's hint, which tamper-data has no option for
    held = build_problem("/v/bikes.mp4", reason, EVAL)
    assert held == (
        "/v/bikes.mp4: no substitution donor: needs another video with at least 25 frames "
        "among the eval sources (donors come from the same side of the split; hold out 2 or "
        "more videos: a larger --eval-fraction or more videos; or leave it out: --effects)"
    )
    train = build_problem("/v/a.mp4", reason, TRAIN)
    assert "--donor" not in train and "a smaller --eval-fraction" in train
    assert build_problem("/v/x.mp4", "not a video", EVAL) == "/v/x.mp4: not a video"


def test_tamper_data_prints_each_problem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import mmrobust.finetune.tamper_data as td

    errors = [build_problem("/v/bikes.mp4", _donor_reason(), EVAL)]
    errors += [f"/v/bad{i}.mp4: unreadable" for i in range(6)]

    def fake_build(*_: Any, **__: Any) -> TamperDataReport:
        talks = {TRAIN: Counter(detect=6), EVAL: Counter(detect=5)}
        return TamperDataReport(tmp_path, ["a", "b", "c"], ["d"], talks, {}, errors)

    monkeypatch.setattr(td, "build_tamper_data", fake_build)
    result = CliRunner().invoke(
        app, ["tamper-data", str(tmp_path), "--out", str(tmp_path), "--no-audit"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        f"6 training conversations from 3 source(s), 5 held out from 1 (no source on both "
        f"sides); 7 problem(s); wrote {tmp_path}"
    ) in lines
    assert f"problem: {errors[0]}" in lines  # was only the count: "7 problems"
    assert sum(line.startswith("problem: ") for line in lines) == 5
    assert f"... and 2 more in {tmp_path / 'tamper_data.json'} (errors)" in lines


def test_data_folder_of_tamper_data_names_its_train_side(tmp_path: Path) -> None:
    from mmrobust.finetune.data import resolve_data_path

    (tmp_path / "td" / "train").mkdir(parents=True)
    (tmp_path / "td" / "train" / "llava.json").write_text("[]", encoding="utf-8")
    with pytest.raises(FileNotFoundError) as info:  # was "(an `mmrobust mmr-data` output?)"
        resolve_data_path(tmp_path / "td")
    assert str(info.value) == (
        f"no llava.json in {tmp_path / 'td'}: a `tamper-data` output? train on "
        f"{tmp_path / 'td' / 'train'} (--data), its eval/llava.json for --eval-data"
    )
    assert resolve_data_path(tmp_path / "td" / "train") == tmp_path / "td" / "train" / "llava.json"


def test_substitution_with_one_source_on_a_side_is_refused_before_building(
    tmp_path: Path,
) -> None:
    """4 videos, the default --eval-fraction 0.25: one held out, so the held-out side had no
    substitution clip and its ``type`` question offered 5 options against training's 6 (a
    new user's run-through). Refused now, before any clip is built, with the fixes."""
    from mmrobust.finetune.tamper_data import TamperDataConfig, donor_problem
    from mmrobust.media import sample_clips

    clips = sorted(sample_clips().values())
    out = tmp_path / "td"
    result = CliRunner().invoke(
        app, ["tamper-data", *map(str, clips), "--out", str(out), "--no-audit"]
    )
    assert result.exit_code == 2, result.output
    assert (
        "error: substitution needs 2 or more source videos on each side of the split (its "
        "donor is another video of the same side); the eval side has 1: hold out more videos "
        "(a larger --eval-fraction) or add videos, or leave it out: --effects "
        "dropping,masking,rotation,repetition"
    ) in " ".join(result.output.split())
    assert not (out / "train").exists() and not (out / "eval").exists()  # nothing built

    digest = {str(c): str(i) for i, c in enumerate(clips)}
    config = TamperDataConfig()
    assert donor_problem(clips[:2], clips[2:], digest, config) is None  # 2 on each side
    assert "the train side has 1" in str(donor_problem(clips[:1], clips[1:], digest, config))
    same = {str(c): "x" for c in clips[2:]} | digest  # two copies of one video are one source
    same[str(clips[3])] = same[str(clips[2])]
    assert "the eval side has 1" in str(donor_problem(clips[:2], clips[2:], same, config))
    no_sub = TamperDataConfig(effects=("dropping", "masking"))
    assert donor_problem(clips[:1], clips[1:2], digest, no_sub) is None
