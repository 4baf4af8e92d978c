"""``mmrobust tamper-data``'s leak audit and held-out chance levels (issue 31).

Real builds of two bundled clips (``bikes`` for training, ``carphone_pristine`` held out;
both H.264): with codec control (the default) originals are re-encoded like the tampered
clips and the audit finds nothing; with ``--no-codec-control`` the originals keep their
H.264 beside MPEG-4 Part 2 tampered clips, the audit finds the codec leak and the command
exits 2 unless ``--allow-leak``. The pure parts (:func:`separation`, the chance levels)
are checked on hand-computed values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.audit_builds import LEAK_ABOVE, separation
from mmrobust.cli import app
from mmrobust.finetune.tamper_chance import chance_levels, detect_chance, options_chance
from mmrobust.media import sample_clips

pytestmark = pytest.mark.slow


def _tamper_data(out: Path, *extra: str) -> Any:
    clips = sample_clips()
    args = ["tamper-data", str(clips["bikes"]), str(clips["carphone_pristine"]), "--out", str(out)]
    args += ["--effects", "rotation,masking", "--eval-fraction", "0.5", "--tasks", "detect,when"]
    return CliRunner().invoke(app, [*args, *extra])


def _manifest(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "tamper_data.json").read_text(encoding="utf-8")))


def test_a_codec_controlled_build_audits_clean_with_chance_levels(tmp_path: Path) -> None:
    result = _tamper_data(tmp_path / "td")
    assert result.exit_code == 0, result.output
    for name in ("train/clips-middle-1s", "eval"):
        line = f"leak audit {name} (1 original, 2 tampered clips): no leak; codec/container/fps "
        assert line + "tell originals from tampered clips at 50.0/50.0/50.0%" in result.output
    audit = _manifest(tmp_path / "td")["audit"]
    assert audit["leak_above"] == LEAK_ABOVE and audit["fields"] == ["codec", "container", "fps"]
    assert list(audit["builds"]) == ["train/clips-middle-1s", "eval"]
    for build in audit["builds"].values():
        assert build["status"] == "clean" and build["separating"] == []
        codec = build["encoder_fields"]["codec"]
        assert codec == {"balanced_accuracy": 0.5, "original": {"mpeg4": 1},
                         "tampered": {"mpeg4": 2}}  # fmt: skip
        figures = build["figures"]  # mmrobust audit's own result, one source: no CV
        assert (figures["n_original"], figures["n_tampered"], figures["n_groups"]) == (1, 2, 1)
        assert figures["always_yes"]["f1"] == pytest.approx(2 / 3)
    assert audit["builds"]["eval"]["encoder_fields"]["fps"]["original"] == {"30000/1001": 1}
    # chance on the held-out clips (original, rotation, masking; middle 1 s): hand-checked
    chance = _manifest(tmp_path / "td")["chance"]
    # per type (1 clip beside the 1 original): always Yes 2/3, a coin 2/(3+1) = 1/2
    assert chance["detect"] == {"n": 3, "always_yes_f1": pytest.approx(2 / 3),
                                "coin_flip_f1": pytest.approx(1 / 2),
                                "always_yes_accuracy": pytest.approx(2 / 3),
                                "majority_accuracy": pytest.approx(2 / 3), "majority": "Yes"}  # fmt: skip
    assert chance["when"] == {"n": 3, "n_options": [4], "uniform_accuracy": 0.25,
                              "majority_accuracy": pytest.approx(2 / 3), "majority": "middle",
                              "majority_tied": 1}  # fmt: skip
    assert (
        "held-out chance, %, detect (3 questions): always-Yes F1 66.7, accuracy 66.7; "
        "coin-flip F1 50.0; majority (Yes) accuracy 66.7" in result.output
    )
    assert (
        "held-out chance, %, when (3 questions): uniform guess (1/4 options) 25.0; "
        "majority option (middle) 66.7" in result.output
    )


def test_without_codec_control_the_audit_finds_the_leak_and_exits_2(tmp_path: Path) -> None:
    out = tmp_path / "leaky"
    result = _tamper_data(out, "--no-codec-control")
    assert result.exit_code == 2, result.output
    assert (
        "leak audit train/clips-middle-1s (1 original, 2 tampered clips): LEAK, separated by "
        "codec 100.0% (original h264 | tampered mpeg4)" in result.output
    )
    assert (
        "error: leak audit: in train/clips-middle-1s the codec alone tells originals"
        in result.output
    )
    assert "warning: leak audit: the held-out clips' encoding" in result.output
    manifest = _manifest(out)  # written before the exit: the verdicts are there to read
    assert manifest["settings"]["codec_control"] is False
    for build in manifest["audit"]["builds"].values():
        assert build["status"] == "leak" and build["separating"] == ["codec"]
        assert build["encoder_fields"]["codec"]["balanced_accuracy"] == 1.0
        assert build["encoder_fields"]["container"]["balanced_accuracy"] == 0.5
    # --allow-leak: the same verdicts, exit 0 (the build resumes); --no-audit: no audit at all
    allowed = _tamper_data(out, "--no-codec-control", "--allow-leak")
    assert allowed.exit_code == 0, allowed.output
    assert "LEAK, separated by codec 100.0%" in allowed.output
    skipped = _tamper_data(out, "--no-codec-control", "--no-audit")
    assert skipped.exit_code == 0 and "leak audit" not in skipped.output
    assert "audit" not in _manifest(out)


def test_separation_is_the_per_value_majority_rule() -> None:
    yes, no = True, False
    assert separation(["mpeg4"] * 6, [no, yes, yes, no, yes, yes]) == 0.5  # codec control
    assert separation(["h264", "mpeg4", "mpeg4"], [no, yes, yes]) == 1.0  # released style
    # half the originals share the tampered clips' codec: originals 1/2 right, tampered 4/4
    assert separation(["h264", "mpeg4", "mpeg4", "mpeg4", "mpeg4", "mpeg4"],
                      [no, no, yes, yes, yes, yes]) == 0.75  # fmt: skip
    # a tie says "tampered" (always Yes): 25 fps has one of each, 30 an original only
    assert separation(["25", "25", "30"], [no, yes, no]) == pytest.approx((1 / 2 + 1) / 2)
    assert separation(["a", "b"], [yes, yes]) is None
    with pytest.raises(ValueError):
        separation(["a"], [yes, no])


def test_chance_levels_by_hand() -> None:
    # detect: 2 originals, 2 dropping, 1 masking -> F1 per type 2t/(2t+o): 4/6 and 2/4
    d = detect_chance(["original", "original", "dropping", "dropping", "masking"])
    assert d["always_yes_f1"] == pytest.approx((4 / 6 + 2 / 4) / 2)
    assert d["coin_flip_f1"] == pytest.approx((4 / 8 + 2 / 5) / 2)  # 2t/(3t+o) per type
    assert (d["always_yes_accuracy"], d["majority_accuracy"], d["majority"]) == (0.6, 0.6, "Yes")
    more_originals = detect_chance(["original"] * 3 + ["rotation"])
    assert (more_originals["majority"], more_originals["majority_accuracy"]) == ("No", 0.75)
    assert more_originals["always_yes_f1"] == pytest.approx(2 / 5)
    # type: 6 options, truths none x2, rotation x1: uniform 1/6, majority none 2/3
    t = options_chance(["none", "none", "rotation"], [6, 6, 6])
    assert t == {"n": 3, "n_options": [6], "uniform_accuracy": pytest.approx(1 / 6),
                 "majority_accuracy": pytest.approx(2 / 3), "majority": "none",
                 "majority_tied": 1}  # fmt: skip
    # leading: positives (3 options) and negatives (4, truth reject): mean of 1/K
    lead = options_chance(["none", "masking", "reject", "reject"], [3, 3, 4, 4])
    assert lead["uniform_accuracy"] == pytest.approx((1 / 3 + 1 / 3 + 1 / 4 + 1 / 4) / 4)
    assert (lead["n_options"], lead["majority"], lead["majority_accuracy"]) == ([3, 4], "reject",
                                                                              0.5)  # fmt: skip
    tied = options_chance(["middle", "nowhere"], [4, 4])
    assert (tied["majority"], tied["majority_tied"], tied["majority_accuracy"]) == ("middle", 2,
                                                                                   0.5)  # fmt: skip
    levels = chance_levels(
        [{"task": "when", "effect": "original", "truth": "nowhere", "n_options": 4},
         {"task": "detect", "effect": "original", "truth": "No", "n_options": 2},
         {"task": "detect", "effect": "rotation", "truth": "Yes", "n_options": 2},
         {"task": "when", "effect": "rotation", "truth": None, "n_options": 4}]
    )  # fmt: skip
    assert list(levels) == ["when", "detect"] and levels["when"]["n"] == 1
    assert levels["detect"]["always_yes_f1"] == pytest.approx(2 / 3)
