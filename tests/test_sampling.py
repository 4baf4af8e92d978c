"""Frame sampling policy: VLMEvalKit segment centres, fps mode, window coverage."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mmrobust.media.sampling import FramePolicy, frame_indices, segment_centres, window_coverage
from mmrobust.schema import Window


def test_segment_centres_match_reference_formula() -> None:
    # n = 300: seg = 299/8 = 37.375 -> int(18.6875 + round(37.375 i))
    assert segment_centres(300, 8) == [18, 55, 93, 130, 168, 205, 242, 280]
    assert segment_centres(9, 8) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert segment_centres(1, 8) == [0] * 8


def test_fps_mode_and_cap() -> None:
    fps = Fraction(30000, 1001)
    idx = frame_indices(300, fps, FramePolicy(mode="fps", fps=1.0))
    assert idx[:3] == [0, 29, 59] and len(idx) == 11
    capped = frame_indices(300, fps, FramePolicy(mode="fps", fps=1.0, max_frames=4))
    assert len(capped) == 4 and capped[0] == 0 and capped[-1] == idx[-1]
    assert frame_indices(5, 25, FramePolicy(mode="dense")) == [0, 1, 2, 3, 4]
    assert frame_indices(0, 25, FramePolicy()) == []


def test_bad_policy_values() -> None:
    with pytest.raises(ValueError):
        FramePolicy(mode="fps")
    with pytest.raises(ValueError):
        FramePolicy(n_frames=0)


def win(a: int, b: int) -> Window:
    return Window(start_frame=a, end_frame=b, start_s=a / 30, end_s=b / 30)


def test_window_coverage_eight_frames_long_clip_misses_one_second() -> None:
    # 10 s at 30 fps, middle 1-s window [135, 165): 8 centres are 37 frames apart around it.
    idx = frame_indices(300, 30, FramePolicy())
    assert window_coverage(idx, win(135, 165)) is False
    # 5 s clip, middle window [60, 90): seg = 18.6 -> index 74 falls inside.
    assert window_coverage(frame_indices(150, 30, FramePolicy()), win(60, 90)) is True
    assert window_coverage(idx, None) is None


def test_window_coverage_of_a_seam() -> None:
    assert window_coverage([9, 10], win(10, 10)) is True
    assert window_coverage([8, 10], win(10, 10)) is False
    # with the dropped length known: the nearest samples around the seam at most F apart
    eight_of_300 = frame_indices(300, 30, FramePolicy())  # 10 s at 30 fps: step ~37 frames
    eight_of_150 = frame_indices(150, 30, FramePolicy())  # 5 s: step ~19 frames
    assert window_coverage(eight_of_300, win(135, 135), dropped=30) is False
    assert window_coverage(eight_of_150, win(60, 60), dropped=30) is True
    assert window_coverage([50, 60], win(61, 61), dropped=30) is False  # nothing after the seam
    # one rule: an unknown F counts as 1 (s - 1 and s both sampled)
    for idx in ([9, 10], [8, 10], [9, 11], [9], [10, 12], [3, 9, 10, 20]):
        assert window_coverage(idx, win(10, 10)) is window_coverage(idx, win(10, 10), dropped=1)
    assert window_coverage([8, 11], win(10, 10), dropped=3) is True  # 11 - 8 <= 3
    assert window_coverage([8, 12], win(10, 10), dropped=3) is False


def test_short_clips_each_frame_once_unless_the_reference_is_asked_for() -> None:
    """VLMEvalKit get_index (tamperbench.py, eb58e9e and e8e78f0) repeats frames on short clips."""
    assert frame_indices(5, 25, FramePolicy(n_frames=8)) == [0, 1, 2, 3, 4]
    ref = FramePolicy(n_frames=8, short_clips="repeat")
    assert frame_indices(5, 25, ref) == [0, 0, 1, 2, 2, 2, 3, 4]  # seg 0.5: int(0.25 + round(i/2))
    assert frame_indices(8, 25, FramePolicy(n_frames=8)) == list(range(8))
    assert frame_indices(8, 25, ref) == [0, 1, 2, 3, 4, 4, 5, 6]  # frame 7 never shown
    # longer clips: the same segment centres either way, all distinct
    for n in (9, 10, 57, 300):
        assert (
            frame_indices(n, 25, FramePolicy())
            == frame_indices(n, 25, ref)
            == sorted(set(segment_centres(n, 8)))
        )
    assert FramePolicy().fingerprint() != ref.fingerprint()
    with pytest.raises(ValueError, match="short_clips"):
        FramePolicy(short_clips="twice")  # type: ignore[arg-type]
