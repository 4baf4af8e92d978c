"""Forensic detector: each signal and each tamper structure on synthetic clips with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmrobust.forensic.detector import scan
from mmrobust.forensic.footage import Shot, apply_effect, render
from mmrobust.forensic.signals import SignalExtractor, extract_signals, lag_profile_fit
from mmrobust.forensic.structure import (
    blackness,
    displacement_jumps,
    dropping_candidates,
    flat_black,
    lag_seams,
    local_seams,
    motion_baseline,
    repetition_candidates,
    seam_repetition_candidates,
    spike_strength,
)
from mmrobust.models.base import Request
from mmrobust.models.forensic import ForensicDetector, decide, make
from mmrobust.status import Status

SIZE = (192, 108)
S, L = 60, 25  # window start and length in frames


@pytest.fixture(scope="module")
def pan() -> np.ndarray:
    """One continuous 140-frame pan over a photo: (140, 108, 192, 3) uint8 RGB."""
    return render([Shot("astronaut", 140, "pan", speed=0.006, noise=1.0)], size=SIZE, seed=1)


@pytest.fixture(scope="module")
def donor() -> np.ndarray:
    return render([Shot("coffee", 40, "pan", speed=0.006, noise=1.0)], size=SIZE, seed=2)


def _verdict(frames: np.ndarray):  # type: ignore[no-untyped-def]
    return decide(extract_signals(list(frames)))


def test_identical_frames_have_zero_distance_and_rotation_is_exact() -> None:
    rng = np.random.default_rng(0)
    f = rng.integers(0, 256, (36, 64), dtype=np.uint8)
    tr = extract_signals([f, f, np.ascontiguousarray(f[::-1, ::-1])])
    assert tr.d1[1] == 0.0
    assert tr.drot[2] == pytest.approx(0.0, abs=1e-4)  # frame 2 is frame 1 rotated 180 degrees
    assert tr.d1[2] > 20.0
    assert tr.dark[0] < 0.2


def test_repetition_lag_is_found(pan: np.ndarray) -> None:
    tr = extract_signals(list(apply_effect(pan, "repetition", S, L)))
    seg = slice(S + L, S + 2 * L)
    assert set(tr.rep_lag[seg].astype(int)) == {L}
    assert float(tr.rep_d[seg].max()) < 0.1


def test_black_run_measured(pan: np.ndarray) -> None:
    tr = extract_signals(list(apply_effect(pan, "masking", S, L)))
    assert np.all(tr.dark[S : S + L] == 1.0)
    assert tr.dark[S - 1] < 0.5 and tr.dark[S + L] < 0.5


def test_original_pan_is_not_tampered(pan: np.ndarray) -> None:
    v = _verdict(pan)
    assert not v.tampered and v.pred_type is None and v.start_frame is None


@pytest.mark.parametrize(
    ("effect", "window"),
    [
        ("masking", (S, S + L)),
        ("rotation", (S, S + L)),
        ("substitution", (S, S + L)),
        ("repetition", (S, S + 2 * L)),
        ("dropping", (S, S)),
    ],
)
def test_each_paper_effect_is_found_with_its_exact_window(
    pan: np.ndarray, donor: np.ndarray, effect: str, window: tuple[int, int]
) -> None:
    v = _verdict(apply_effect(pan, effect, S, L, donor))
    assert v.tampered
    assert v.pred_type == effect
    assert (v.start_frame, v.end_frame) == window


def test_natural_hard_cuts_are_not_tampering() -> None:
    clip = render(
        [
            Shot("astronaut", 50, "pan", speed=0.006),
            Shot("coffee", 40, "zoom", speed=0.003),
            Shot("rocket", 50, "pan", speed=0.004),
        ],
        size=SIZE,
        seed=3,
    )
    assert not _verdict(clip).tampered


def test_fade_to_black_and_back_is_not_masking() -> None:
    clip = render(
        [
            Shot("chelsea", 60, "pan", speed=0.005, fade_out=12),
            Shot("rocket", 60, "pan", speed=0.005, fade_in=12),
        ],
        size=SIZE,
        seed=4,
    )
    assert not _verdict(clip).tampered


def test_held_frame_animation_is_not_repetition() -> None:
    clip = render([Shot("coins", 120, "pan", speed=0.006, hold=2, noise=0.5)], size=SIZE, seed=5)
    assert not _verdict(clip).tampered


def test_displacement_is_the_pan_step_and_jumps_at_a_dropping_seam(pan: np.ndarray) -> None:
    tr = extract_signals(list(pan))
    # the pan moves 0.006 of the crop width a frame: a steady, same-sign shift
    steady = tr.dx[5:-5]
    assert np.all(tr.resp[5:-5] > 0.5)
    assert float(np.ptp(steady)) < 0.5 and abs(float(np.median(steady))) > 0.1
    dropped = extract_signals(list(apply_effect(pan, "dropping", S, L)))
    jumps = displacement_jumps(dropped)
    assert int(np.argmax(jumps)) == S and jumps[S] == 1.0
    # the seam moved the camera about L + 1 frames' worth of motion
    assert abs(dropped.dx[S]) == pytest.approx((L + 1) * abs(float(np.median(steady))), rel=0.2)
    assert float(np.delete(jumps, S).max()) == 0.0


def test_cut_to_a_similar_shot_in_another_tone_is_not_a_dropping_seam(pan: np.ndarray) -> None:
    # a montage cut between two shots of the same structure (city by day, then
    # by night): the camera shift extrapolates like a dropped second, the tones don't
    dropped = apply_effect(pan, "dropping", S, L)
    assert decide(extract_signals(list(dropped))).pred_type == "dropping"
    retoned = dropped.copy()
    retoned[S:] = (retoned[S:].astype(np.float32) * 0.45).astype(np.uint8)
    tr = extract_signals(list(retoned))
    assert displacement_jumps(tr)[S] == 1.0  # the shift alone would call it a seam
    assert tr.hist[S] > 0.45
    assert not decide(tr).tampered


def test_repetition_seam_is_a_copy_at_its_own_lag(pan: np.ndarray) -> None:
    tr = extract_signals(list(apply_effect(pan, "repetition", S, L)))
    base = motion_baseline(tr)
    (c,) = seam_repetition_candidates(tr, base, spike_strength(tr, base))
    assert (c.kind, c.start, c.end, c.evidence["lag"]) == ("repetition", S, S + 2 * L, L)
    assert c.score == 1.0


def test_substitution_from_the_same_scene_pairs_its_two_seams(pan: np.ndarray) -> None:
    # the insert is the same pan 50 frames later (forward then backward jump):
    # both edges look like in-shot seams, the outer sides continue each other
    v = _verdict(apply_effect(pan, "substitution", S, L, pan[S + 50 :]))
    assert v.tampered and v.start_frame == S
    pair = [c for c in v.candidates if c.kind == "substitution" and c.evidence.get("paired")]
    assert [(c.start, c.end) for c in pair][:1] == [(S, S + L)] and pair[0].score >= 0.5
    # the insert's frames are shown again 50 frames later (same clip), so a
    # repetition at lag 50 explains the clip as well; either type is a right answer
    assert v.pred_type in ("substitution", "repetition")


@pytest.mark.parametrize("effect", ["dropping", "masking", "repetition", "rotation"])
def test_chunked_stream_equals_whole_clip_analysis(pan: np.ndarray, effect: str) -> None:
    long = np.concatenate([pan, pan[::-1], pan])  # 420 frames, ping-pong pan
    clip = apply_effect(long, effect, 300, L)
    whole = decide(extract_signals(list(clip)))
    cands, info, n = scan(list(clip), chunk=40)  # many chunks, each with its margin
    assert n == clip.shape[0] == info["frames"]
    assert whole.tampered and cands[0].score == pytest.approx(whole.score)
    assert (cands[0].kind, cands[0].start, cands[0].end) == (
        whole.candidates[0].kind,
        whole.start_frame,
        whole.end_frame,
    )


def test_extractor_trim_keeps_memory_bounded() -> None:
    rng = np.random.default_rng(0)
    ex = SignalExtractor(max_lag=16, half_window=4)
    for _ in range(300):
        ex.push(rng.integers(0, 256, (18, 32), dtype=np.uint8))
        ex.trim(ex.n - 50)
    tr = ex.finish()
    assert ex.offset == 250 and tr.offset == 250 and tr.n == 50
    assert all(ev.frame >= 250 for ev in tr.events)
    assert not tr.clip_start and tr.clip_end


def test_extractor_rejects_bad_frames() -> None:
    ex = SignalExtractor()
    with pytest.raises(ValueError, match="uint8"):
        ex.push(np.zeros((10, 10), np.float32))
    ex.push(np.zeros((10, 10), np.uint8))
    with pytest.raises(ValueError, match="size changed"):
        ex.push(np.zeros((12, 10), np.uint8))


def _write(path: Path, frames: np.ndarray, fps: int = 25) -> Path:
    from mmrobust.media import VideoWriter

    with VideoWriter(path, fps, frames.shape[2], frames.shape[1]) as w:
        for f in frames:
            w.write(f)
    return path


def _req(video: Path | None, options: dict[str, str] | None = None) -> Request:
    return Request(
        sample_id="s",
        prompt="p",
        question="q",
        options=options or {"A": "Yes", "B": "No"},
        video=video,
    )


def test_model_answers_by_option_text_and_reports_window(tmp_path: Path, pan: np.ndarray) -> None:
    path = _write(tmp_path / "rot.mp4", apply_effect(pan, "rotation", S, L))
    det = ForensicDetector()
    (r,) = det.generate([_req(path, {"A": "No", "B": "Yes"})])  # permuted options
    assert r.status is Status.OK and r.text == "B"
    assert r.extra["pred_type"] == "rotation"
    w = r.extra["pred_window"]
    assert (w["start_frame"], w["end_frame"]) == (S, S + L)
    assert w["start_s"] == pytest.approx(S / 25) and w["end_s"] == pytest.approx((S + L) / 25)
    assert 0.5 <= r.extra["score"] <= 1.0


def test_unreadable_and_too_short_videos_are_media_errors(tmp_path: Path, pan: np.ndarray) -> None:
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all")
    short = _write(tmp_path / "short.mp4", pan[:3])
    det = ForensicDetector()
    r_bad, r_short, r_missing = det.generate([_req(bad), _req(short), _req(tmp_path / "nope.mp4")])
    for r in (r_bad, r_short, r_missing):
        assert r.status is Status.MEDIA_ERROR and r.text == ""
        assert r.error and "\n" not in r.error
    assert "decodable frames" in (r_short.error or "")


def test_factory_and_fingerprint() -> None:
    m = make(None, {"prior": "middle"})
    fp = m.fingerprint()
    assert fp["prior"] == "middle" and len(fp["thresholds_sha"]) == 12
    assert make(None, {}).fingerprint()["prior"] == "none"
    with pytest.raises(ValueError, match="prior"):
        make(None, {"prior": "left"})
    with pytest.raises(ValueError, match="unknown"):
        make(None, {"colour": "red"})
    with pytest.raises(ValueError):
        make("x", {})


def test_the_media_kinds_a_backend_declares_are_its_models(tmp_path: Path) -> None:
    """``forensic`` answers videos only, and says so both on its backend (known before a model
    is loaded: ``mmrobust run`` plans with it) and on its model (``eval`` refuses with it);
    the other built-in backends take every kind. A Ray replica's stand-in carries the kinds."""
    from mmrobust.distributed.eval import RemoteModel
    from mmrobust.models.base import MEDIA_KINDS, media_refusal
    from mmrobust.models.spec import load_model, media_kinds_of, parse_spec

    assert media_kinds_of("forensic") == make(None, {}).media_kinds == ("video",)
    for spec in ("constant:A", "random:0", "blind-overlap"):
        assert media_kinds_of(parse_spec(spec).name) == load_model(spec).media_kinds == MEDIA_KINDS
    for name in ("openai", "anthropic", "hf"):
        assert media_kinds_of(name) == MEDIA_KINDS
    m = make(None, {})
    assert m.cannot_take({"video"}) is None and m.cannot_take(set()) is None
    assert m.cannot_take({"image", "text"}) == (
        "forensic takes video only; the samples have images, no media"
    )
    assert (
        media_refusal("x", ("image",), {"video"}, of="set") == "x takes image only; set has videos"
    )
    info = {"name": "forensic", "batch_size": 1, "max_concurrency": 1, "fingerprint": {}}
    remote = RemoteModel.from_info({**info, "media_input": "path", "media_kinds": ["video"]})
    assert remote.media_kinds == ("video",) and remote.cannot_take({"image"})
    old = RemoteModel.from_info({**info, "media_input": "path"})  # a replica of before
    assert old.media_kinds == MEDIA_KINDS


def _still_shot_with_walker(
    n: int, step: int = 1, size: tuple[int, int] = (24, 16), top: int = 56
) -> np.ndarray:
    """A locked-off shot (a still photo) where one figure (``size`` = (h, w) px,
    default 24x16) walks ``step`` px a frame."""
    from skimage import data

    bg = np.ascontiguousarray(data.astronaut()[100:208, 100:292])  # (108, 192, 3)
    frames = np.repeat(bg[None], n, axis=0).copy()
    h, w = size
    for i in range(n):
        x = 10 + step * i
        frames[i, top : top + h, x : x + w] = (20, 200, 30)
    return frames


def test_seam_in_a_still_shot_is_found_from_the_local_change() -> None:
    clip = _still_shot_with_walker(140)
    assert not _verdict(clip).tampered
    tr = extract_signals(list(apply_effect(clip, "dropping", S, L)))
    base = motion_baseline(tr)
    assert spike_strength(tr, base)[S] == 0.0  # the whole picture barely changes
    seams = local_seams(tr)
    assert seams[S] == 1.0 and float(np.delete(seams, S).max()) == 0.0
    v = decide(tr)
    assert (v.tampered, v.pred_type, v.start_frame) == (True, "dropping", S)


def test_jerky_held_frame_animation_is_not_a_still_shot_seam() -> None:
    # a cartoon on threes with uneven steps: the figure holds, then jumps 6, 12 or 18 px
    clip = _still_shot_with_walker(140, step=0)
    from skimage import data

    bg = np.ascontiguousarray(data.astronaut()[100:208, 100:292])
    x = 10
    for i in range(140):
        if i and i % 3 == 0:
            x = 10 + (x - 10 + 6 + 6 * ((i // 3) % 3)) % 160
        clip[i] = bg
        clip[i, 56:80, x : x + 16] = (20, 200, 30)
    assert float(local_seams(extract_signals(list(clip))).max()) == 0.0


def test_lag_profile_fit_recovers_an_exact_shift() -> None:
    g = 10.0 * (1.0 - np.exp(-np.arange(1, 65) / 15.0))  # distance growing with the lag
    prev = g.astype(np.float32)
    after = (10.0 * (1.0 - np.exp(-(np.arange(1, 65) + 20) / 15.0))).astype(np.float32)
    fit, fit0, jump = lag_profile_fit(after, prev)
    assert (jump, fit) == (20, pytest.approx(0.0, abs=1e-6)) and fit0 > 0.5
    unknown = np.full(64, np.nan, np.float32)
    assert lag_profile_fit(after, unknown)[2] == 0


def test_dropping_seam_fits_a_shifted_lag_profile_and_a_cut_does_not(pan: np.ndarray) -> None:
    tr = extract_signals(list(apply_effect(pan, "dropping", S, L)))
    # continuous frames fit at the smallest shift; the seam at about L (the pan's
    # change is not quite linear in the lag, so not exactly L)
    assert set(tr.lag_jump[S - 15 : S].astype(int)) == {1}
    assert 12 <= int(tr.lag_jump[S]) <= L + 5
    assert float(tr.lag_fit[S]) < 0.1 * float(tr.lag_fit0[S])
    seams = lag_seams(tr)
    assert seams[S] == 1.0 and float(np.delete(seams, S).max()) == 0.0
    cut = render(
        [Shot("astronaut", 60, "pan", speed=0.006), Shot("coffee", 60, "pan", speed=0.004)],
        size=SIZE,
        seed=3,
    )
    tc = extract_signals(list(cut))
    assert int(tc.lag_jump[60]) >= 36  # an unrelated picture fits only the oldest lags
    assert float(lag_seams(tc).max()) == 0.0


def test_rotation_in_a_still_shot_is_found() -> None:
    # a screen recording: most frames repeat exactly, so the held-frame rule
    # alone would measure the motion level on the two rotation edges themselves
    from skimage import data

    still = np.repeat(np.ascontiguousarray(data.astronaut()[100:208, 100:292])[None], 140, axis=0)
    tr = extract_signals(list(apply_effect(still, "rotation", S, L)))
    assert float(motion_baseline(tr)[S]) > 20.0  # the edges' own level
    assert float(motion_baseline(tr, still=True)[S]) == 0.0
    v = decide(tr)
    assert (v.tampered, v.pred_type, v.start_frame, v.end_frame) == (True, "rotation", S, S + L)
    assert not _verdict(still).tampered


def test_rotation_ending_on_a_natural_cut_is_found(pan: np.ndarray) -> None:
    other = render([Shot("coffee", 60, "pan", speed=0.004, noise=1.0)], size=SIZE, seed=2)
    natural = np.concatenate([pan[: S + L], other])
    assert not _verdict(natural).tampered
    rotated = natural.copy()
    rotated[S : S + L] = rotated[S : S + L, ::-1, ::-1]  # the window's end is the cut
    v = _verdict(rotated)
    assert (v.tampered, v.pred_type, v.start_frame, v.end_frame) == (True, "rotation", S, S + L)


def test_looped_animation_is_periodic_not_repetition() -> None:
    # a seamless 27-frame loop (a rendered animation cycle) with per-frame
    # noise: the best lag flips between 27 and 54, which split the run into
    # one-period pieces that each looked like a replayed window
    from skimage import data

    photo = np.ascontiguousarray(data.astronaut())
    rng = np.random.default_rng(0)
    frames = []
    for i in range(160):
        a = 2 * np.pi * (i % 27) / 27
        y, x = int(150 + 20 * np.sin(a)), int(150 + 20 * np.cos(a))
        f = photo[y : y + 108, x : x + 192].astype(np.int16) + rng.integers(-3, 4, (108, 192, 3))
        frames.append(np.clip(f, 0, 255).astype(np.uint8))
    tr = extract_signals(frames)
    assert {27, 54} <= set(tr.rep_lag[60:].astype(int))
    base = motion_baseline(tr)
    assert repetition_candidates(tr, base) == []
    assert not decide(tr).tampered


def test_masking_in_a_dark_scene_is_found(pan: np.ndarray) -> None:
    # a night scene: most pixels are already dark, so the black fraction barely
    # moves at the window's edges; the masked frames are flat black, the scene is not
    dark = (pan.astype(np.float32) * 0.12).astype(np.uint8)
    tr = extract_signals(list(apply_effect(dark, "masking", S, L)))
    assert float(np.median(tr.dark[:S])) > 0.75 and float(tr.dark[S] - tr.dark[S - 1]) < 0.25
    assert blackness(tr)[S - 1] == 0.5 and blackness(tr)[S] == 1.0
    v = decide(tr)
    assert (v.tampered, v.pred_type, v.start_frame, v.end_frame) == (True, "masking", S, S + L)
    assert not _verdict(dark).tampered


def test_masked_second_at_a_high_frame_rate_is_found() -> None:
    # a lab camera at 250 fps: one masked second is 250 black frames, beyond the
    # 64-frame ring the other structures use (version 9 never found it); the two
    # sides match by phase correlation. Streaming (the backend's path, chunks
    # of 512 frames) and whole-trace analysis agree.
    slow = render([Shot("astronaut", 700, "pan", speed=0.0004, noise=1.0)], size=SIZE, seed=7)
    clip = apply_effect(slow, "masking", 300, 250)
    v = decide(extract_signals(list(clip)))
    assert (v.tampered, v.pred_type, v.start_frame, v.end_frame) == (True, "masking", 300, 550)
    cands, _, n = scan(list(clip))
    assert n == 700 and (cands[0].kind, cands[0].start, cands[0].end) == ("masking", 300, 550)
    # a cut to black and, 250 frames later, to another scene is not masking
    other = render([Shot("coffee", 150, "pan", speed=0.0004, noise=1.0)], size=SIZE, seed=8)
    cut = np.concatenate([slow[:300], np.zeros_like(slow[:250]), other])
    assert not decide(extract_signals(list(cut))).tampered


def test_fade_to_black_then_hard_cut_back_is_not_masking() -> None:
    # a montage fades out in a ramp of luma steps, holds black, then cuts in:
    # only the cut back is abrupt, where masking has two abrupt edges
    fade = render([Shot("chelsea", 70, "pan", speed=0.005, fade_out=12)], size=SIZE, seed=4)
    back = render([Shot("chelsea", 60, "pan", speed=0.005)], size=SIZE, seed=4)
    clip = np.concatenate([fade, np.zeros((20, *fade.shape[1:]), np.uint8), back])
    tr = extract_signals(list(clip))
    assert tr.mean[69] - tr.mean[70] > 6.0  # the fade's last step is large, like a cut's
    assert not decide(tr).tampered


def test_dropping_in_a_dark_scene_is_found(pan: np.ndarray) -> None:
    # a night scene (most pixels under the black level) is no black run: only
    # flat black frames, what masking writes, keep dropping seams off their edges
    dark = (pan.astype(np.float32) * 0.12).astype(np.uint8)
    tr = extract_signals(list(apply_effect(dark, "dropping", S, L)))
    assert float(tr.dark[S - 1]) > 0.75 and float(tr.dark[S]) > 0.75
    assert not flat_black(tr).any()
    v = decide(tr)
    assert (v.tampered, v.pred_type, v.start_frame) == (True, "dropping", S)
    assert not _verdict(dark).tampered


def test_local_change_stands_in_for_a_weak_spike_in_a_still_shot() -> None:
    # a larger walker: the seam lifts the whole-picture change a little over
    # the cut floor (a weak discontinuity), the local change a lot; scored
    # without the lag seam, which also finds this clean synthetic seam
    clip = _still_shot_with_walker(140, size=(40, 24), top=40)
    assert not _verdict(clip).tampered
    tr = extract_signals(list(apply_effect(clip, "dropping", S, L)))
    spikes = spike_strength(tr, motion_baseline(tr, still=True))
    assert 0.0 < float(spikes[S]) < 0.5
    local = local_seams(tr)
    assert local[S] == 1.0
    drops = dropping_candidates(tr, spikes, set(), jumps=displacement_jumps(tr), local=local)
    assert [(c.start, c.score) for c in drops] == [(S, 1.0)]


def _still_picture_with_keyframe_pulses(n: int, gop: int) -> list[np.ndarray]:
    """A still photo with faint sensor noise whose level shifts by one luma
    step at every ``gop``-th frame, as a codec-controlled build's fixed
    keyframes do: (H, W, 3) uint8 RGB frames."""
    from skimage import data

    photo = np.ascontiguousarray(data.astronaut()[100:208, 100:292]).astype(np.int16)
    rng = np.random.default_rng(3)
    frames = []
    for i in range(n):
        f = photo + (i // gop) % 2 + rng.integers(0, 2, photo.shape)
        frames.append(np.clip(f, 0, 255).astype(np.uint8))
    return frames


def test_exact_copy_of_a_still_picture_is_not_repetition() -> None:
    """A replayed second of a still picture, copied exactly (x264 stores it so,
    mp4v re-encodes it with fresh noise), is invisible in pixels. Version 8
    took the picture's once-per-GOP quality pulses for motion and found the
    copy through its exactness, a codec artefact: most of the 0.052 score
    difference between the two builds of heldout5 was this."""
    clip = np.stack(_still_picture_with_keyframe_pulses(140, gop=24))
    tr = extract_signals(list(apply_effect(clip, "repetition", S, L)))
    # the copy is exact at lag L, the natural frames differ by their noise
    assert float(np.max(tr.rep_d[S + L + 1 : S + 2 * L - 1])) == 0.0
    assert set(tr.rep_lag[S + L + 1 : S + 2 * L - 1].astype(int)) == {L}
    # the pulses lift the moving-frames level over the repetition gate ...
    assert float(np.median(motion_baseline(tr)[S : S + 2 * L])) >= 0.288
    # ... but the still-shot level, which repetition now uses, stays still
    still = motion_baseline(tr, still=True)
    assert float(np.max(still[S : S + 2 * L])) < 0.288
    assert repetition_candidates(tr, still) == []
    assert repetition_candidates(tr, motion_baseline(tr)) != []  # version 8's reading
    assert not decide(tr).tampered
