"""Ground truth of the tasks, derived from what the manifest records (pure functions).

``type``: the clip's ``tamper_type`` (``"none"`` for an original).

``when``: the third of the clip that holds the centre of its tamper window, in
the clip's own (output) timeline of ``N`` frames. Frame ``f`` covers the time
``[f, f + 1)``, so a window ``[s, e)`` covers ``[s, e)`` and its centre is
``c = (s + e) / 2``; an empty window (a ``dropping`` seam at ``s``) has centre
``s``. The thirds are half-open: beginning ``[0, N/3)``, middle
``[N/3, 2N/3)``, end ``[2N/3, N]``. So a window that straddles a border belongs
to the side that holds its centre (for a window shorter than a third: the side
holding more of its frames), and a centre exactly on a border belongs to the
later third. Arithmetic is exact (integers: ``3 (s + e)`` against ``2N`` and
``4N``). Originals are ``"nowhere"``.

Released MVTamperBench clips record no window, only the position in their file
name (``meta["position"]``): their truth is that position's third (the released
rule starts a window at frame 0, at ``N // 2 - F // 2`` or at ``N - F``, so the
named third holds its centre in every clip longer than two windows).
"""

from __future__ import annotations

from mmrobust.schema import TAMPER_ORIGINAL, Sample, Window, normalise_type

NONE = "none"
"""``type`` key of an untampered clip."""

PARTS: tuple[str, str, str] = ("beginning", "middle", "end")
"""``when`` keys of the three thirds, in time order."""

NOWHERE = "nowhere"
"""``when`` key of an untampered clip."""

WHEN_KEYS: tuple[str, ...] = (*PARTS, NOWHERE)

RELEASED_THIRDS: dict[str, str] = {"start": "beginning", "middle": "middle", "end": "end"}
"""Third of a released clip's window, from the position its file name records."""

REJECT = "reject"
"""``leading`` key of the option that rejects the premise (the correct answer)."""


def clip_type(sample: Sample) -> str:
    """The ``type`` truth: the effect name (``rotate`` -> ``rotation``), ``none`` for an original.

    Raises:
        ValueError: the sample has no ``tamper_type``.
    """
    ttype = normalise_type(sample.tamper_type)
    if ttype is None:
        raise ValueError("the sample records no tamper_type")
    return NONE if ttype == TAMPER_ORIGINAL else ttype


def third_of(start: int, end: int, n_frames: int) -> str:
    """The third (``beginning`` / ``middle`` / ``end``) holding the centre of frames ``[start, end)``.

    See the module docstring for the rule at the borders.

    Raises:
        ValueError: ``n_frames`` < 1, or the window is not inside ``[0, n_frames]``.
    """
    if n_frames < 1:
        raise ValueError(f"a clip of {n_frames} frames has no thirds")
    if not 0 <= start <= end <= n_frames:
        raise ValueError(f"window [{start}, {end}) is not inside a clip of {n_frames} frames")
    twice_centre = start + end
    if 3 * twice_centre < 2 * n_frames:
        return "beginning"
    if 3 * twice_centre < 4 * n_frames:
        return "middle"
    return "end"


def straddles(start: int, end: int, n_frames: int) -> bool:
    """Whether frames ``[start, end)`` cross a border between thirds (or an empty window
    sits exactly on one): the windows where "which third" is a judgement call."""
    for k in (1, 2):
        border3 = k * n_frames  # the border times 3
        if 3 * start < border3 < 3 * end or (start == end and 3 * start == border3):
            return True
    return False


def frames_output(sample: Sample) -> int | None:
    """The clip's frame count from the manifest (``frames_output``, else ``n_frames``)."""
    for key in ("frames_output", "n_frames", "frame_count"):
        value = sample.meta.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def when_truth(sample: Sample) -> str:
    """The ``when`` truth of a clip: a third, or ``nowhere`` for an original.

    Raises:
        ValueError: a tampered clip without a recorded window or frame count
            (one line saying what is missing).
    """
    if clip_type(sample) == NONE:
        return NOWHERE
    window: Window | None = sample.window
    n = frames_output(sample)
    position = sample.meta.get("position")
    if window is None and position in RELEASED_THIRDS:  # a released clip: its file name's
        return RELEASED_THIRDS[str(position)]
    if window is None:
        raise ValueError("no tamper window recorded: `when` needs the manifest's window_output")
    if n is None:
        raise ValueError("no frame count recorded: `when` needs the manifest's frames_output")
    return third_of(window.start_frame, window.end_frame, n)


__all__ = [
    "NONE",
    "NOWHERE",
    "PARTS",
    "REJECT",
    "WHEN_KEYS",
    "clip_type",
    "frames_output",
    "straddles",
    "third_of",
    "when_truth",
]
