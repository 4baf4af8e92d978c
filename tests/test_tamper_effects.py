"""Effects (pure functions on frames) and the tamper window: exact values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mmrobust.schema.window import parse_position, source_window, window_length
from mmrobust.tamper import EffectContext, EffectParamError, WindowError, make_effect
from mmrobust.tamper.effects import EFFECTS, parse_param_specs
from tests.synth import synthetic_frames

FRAMES = list(synthetic_frames(6, (32, 24)))


def _ctx(seed: int = 0, donor: list[np.ndarray] | None = None) -> EffectContext:
    return EffectContext(rng=np.random.default_rng(seed), donor=donor)


def test_registry_holds_paper_and_extra_effects() -> None:
    assert EFFECTS.names() == [
        "blur", "dropping", "flip", "masking", "noise", "partial_mask",
        "repetition", "rotation", "shuffle", "speed", "substitution",
    ]  # fmt: skip
    assert make_effect("rotation").official_token == "rotate"
    assert make_effect("noise").official_token is None


def test_dropping_and_repetition() -> None:
    assert make_effect("dropping").apply(FRAMES, _ctx()) == []
    rep = make_effect("repetition").apply(FRAMES, _ctx())
    assert len(rep) == 12
    assert all(np.array_equal(rep[6 + i], FRAMES[i]) for i in range(6))
    assert len(make_effect("repetition", times=3).apply(FRAMES, _ctx())) == 18


def test_masking_whole_frame_and_box() -> None:
    out = make_effect("masking").apply(FRAMES, _ctx())
    assert all(f.max() == 0 and f.shape == (24, 32, 3) for f in out)
    boxed = make_effect("masking", box=(0.25, 0.5, 0.75, 1.0)).apply(FRAMES, _ctx())[0]
    assert boxed[12:24, 8:24].max() == 0
    assert np.array_equal(boxed[:12], FRAMES[0][:12])
    assert np.array_equal(boxed[:, :8], FRAMES[0][:, :8])
    part = make_effect("partial_mask", size=0.5, x=0.5, y=0.5).apply(FRAMES, _ctx())[0]
    assert part[6:18, 8:24].max() == 0 and np.array_equal(part[:6], FRAMES[0][:6])


def test_rotation_180_exact_and_90_letterboxed() -> None:
    out = make_effect("rotation").apply(FRAMES, _ctx())
    assert all(np.array_equal(o, f[::-1, ::-1]) for o, f in zip(out, FRAMES, strict=True))
    r90 = make_effect("rotation", degrees=90).apply(FRAMES, _ctx())[0]
    assert r90.shape == (24, 32, 3)
    # 24x32 turned is 32 wide x 24 high... scaled into 32x24: 18 wide, 24 high, centred
    assert r90[:, :7].max() == 0 and r90[:, 25:].max() == 0 and r90[:, 8:24].max() > 0


def test_substitution_uses_donor_frames_exactly() -> None:
    donor = list(synthetic_frames(6, (32, 24), seed=5))
    out = make_effect("substitution").apply(FRAMES, _ctx(donor=donor))
    assert all(np.array_equal(o, d) for o, d in zip(out, donor, strict=True))
    with pytest.raises(ValueError, match="needs 6 donor frames, got none"):
        make_effect("substitution").apply(FRAMES, _ctx())


def test_noise_is_seeded_with_given_sigma() -> None:
    flat = [np.full((64, 64, 3), 128, np.uint8)] * 2
    a = make_effect("noise", sigma=10).apply(flat, _ctx(1))
    b = make_effect("noise", sigma=10).apply(flat, _ctx(1))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert float(np.std(a[0].astype(float))) == pytest.approx(10, abs=0.5)


def test_shuffle_speed_flip_blur() -> None:
    shuffled = make_effect("shuffle").apply(FRAMES, _ctx(3))
    order = [next(i for i, f in enumerate(FRAMES) if np.array_equal(f, s)) for s in shuffled]
    assert sorted(order) == list(range(6)) and order != list(range(6))
    fast = make_effect("speed", factor=2).apply(FRAMES, _ctx())
    assert [next(i for i, f in enumerate(FRAMES) if f is s) for s in fast] == [0, 2, 4]
    slow = make_effect("speed", factor=0.5).apply(FRAMES, _ctx())
    assert [next(i for i, f in enumerate(FRAMES) if f is s) for s in slow] == [
        0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5,
    ]  # fmt: skip
    flipped = make_effect("flip").apply(FRAMES, _ctx())[0]
    assert np.array_equal(flipped[:, ::-1], FRAMES[0])
    blurred = make_effect("blur", sigma=2).apply(FRAMES, _ctx())[0]
    assert blurred.shape == FRAMES[0].shape
    assert (
        np.abs(np.diff(blurred.astype(int), axis=1)).mean()
        < np.abs(np.diff(FRAMES[0].astype(int), axis=1)).mean()
    )


@pytest.mark.parametrize(
    ("name", "params", "msg"),
    [
        ("rotation", {"degrees": 45}, "degrees"),
        ("masking", {"box": (0.5, 0.0, 0.2, 1.0)}, "box must be fractions"),
        ("speed", {"factor": 1}, "unchanged"),
        ("noise", {"sigma": -1}, "sigma"),
        ("noise", {"sgima": 3}, r"unknown parameter noise\.sgima \(did you mean noise\.sigma\?\)"),
        ("rotation", {"degree": 90}, r"did you mean rotation\.degrees\?\); rotation takes degrees"),
        ("droping", {}, "Did you mean: dropping"),
    ],
)
def test_bad_params_are_rejected(name: str, params: dict[str, object], msg: str) -> None:
    with pytest.raises(EffectParamError, match=msg):
        make_effect(name, **params)


def test_parse_param_specs() -> None:
    assert parse_param_specs(
        ["rotation.degrees=90", "masking.box=0,0,0.5,0.5", "noise.sigma=4.5"]
    ) == {
        "rotation": {"degrees": 90},
        "masking": {"box": [0, 0, 0.5, 0.5]},
        "noise": {"sigma": 4.5},
    }
    with pytest.raises(EffectParamError):
        parse_param_specs(["degrees=90"])


def test_window_length_and_positions() -> None:
    ntsc = Fraction(30000, 1001)
    assert window_length(ntsc, 1.0) == 30
    assert window_length(ntsc, 1.0, official_fps=True) == 29  # released int(fps) truncation
    assert window_length(25, 0.5) == 12  # round half to even of 12.5
    w = source_window(132, 25)  # bigbuckbunny: 132 // 2 - 25 // 2
    assert (w.start_frame, w.end_frame) == (54, 79)
    assert (w.start_s, w.end_s) == (2.16, 3.16)
    assert source_window(120, ntsc, position="start").start_frame == 0
    assert source_window(120, ntsc, position="end").start_frame == 90
    assert source_window(120, ntsc, position=0.5).start_frame == 45
    assert source_window(120, ntsc).start_frame == 45
    with pytest.raises(WindowError, match="clip has 20 frames, not longer than the 25-frame"):
        source_window(20, 25)
    with pytest.raises(WindowError):
        parse_position("centre")
    assert parse_position("0.25") == 0.25
