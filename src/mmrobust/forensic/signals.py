"""Per-frame forensic signals, extracted from a downscaled luma stream in one pass.

Every signal is a scalar per frame, computed from the current frame and a ring
buffer of tiny thumbnails of the previous ``max_lag`` frames. The extractor
keeps the per-frame scalars (20 float32, 80 bytes a frame) only until the
caller ``trim``s them: the streaming detector analyses the clip in bounded,
overlapping chunks and keeps only candidate events, so its memory is
O(``max_lag`` + chunk) whatever the clip length. At
frames where the picture changes abruptly (an *event*: a cut, a seam, the edge
of a black run) a small snapshot is kept: the two thumbnails around the event
and the distance of the event frame to every frame in the ring (its *lag
profile*), which is what the structure analysis needs to test whether the two
sides of a segment continue each other (MVTamperBench section 3.2: the five
tamper types all break temporal or spatial coherence at the window's edges).

Units: luma values are 0-255; distances are mean absolute differences of
thumbnails in luma units; frame indices count decoded frames from 0.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable

import cv2
import numpy as np

from mmrobust.forensic.trace import Event, SignalTrace

ANALYSIS_WIDTH = 160
"""Width in pixels of the luma stream the signals are computed on."""

THUMB_SIZE = (32, 18)
"""``(W, H)`` of the thumbnails compared across frames (rotation, lags, continuity)."""

FINE_SIZE = (64, 36)
"""``(W, H)`` of the event snapshots used for phase correlation (shot continuity)."""

DARK_LEVEL = 24
"""Luma at or below which a pixel counts as black (masking)."""

HIST_BINS = 16

LOCAL_FRACTION = 0.1
"""Share of thumbnail pixels (the most changed) averaged into ``d1loc``."""
_LOCAL_K = max(1, round(LOCAL_FRACTION * THUMB_SIZE[0] * THUMB_SIZE[1]))

D1_HIST_BINS = 1000
"""Bins (0.1 luma units wide) of the running histogram of ``d1``."""

_NOISE_KERNEL = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)


def analysis_size(width: int, height: int, target_width: int = ANALYSIS_WIDTH) -> tuple[int, int]:
    """``(W, H)`` of the analysis stream: ``target_width`` wide, aspect kept, H even and >= 8.

    Raises:
        ValueError: non-positive input size.
    """
    if width <= 0 or height <= 0:
        raise ValueError(f"bad frame size {width}x{height}")
    w = min(target_width, width)
    h = max(8, round(height * w / width / 2) * 2)
    return w, h


_SIGNAL_NAMES = (
    "mean",
    "dark",
    "d1",
    "d1loc",
    "hist",
    "drot",
    "dhflip",
    "dvflip",
    "rep_d",
    "rep_lag",
    "noise",
    "dx",
    "dy",
    "resp",
    "lag_fit",
    "lag_fit0",
    "lag_jump",
    "far",
)

LAG_FIT_SPAN = 12
"""Lags ``1..LAG_FIT_SPAN`` of a frame's profile that ``lag_profile_fit`` compares."""

LAG_FIT_MAX = 50
"""Largest shift in frames ``lag_profile_fit`` tries (``LAG_FIT_MAX + LAG_FIT_SPAN <= max_lag``)."""

_HANN_FINE = cv2.createHanningWindow(FINE_SIZE, cv2.CV_32F)


def frame_shift(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Global displacement of ``b`` relative to ``a`` (both ``FINE_SIZE`` ``(36, 64) float32``).

    Deterministic: the Hanning window is applied to the inputs before
    ``cv2.phaseCorrelate`` rather than passed to it.

    Returns ``(dx, dy, peak)``: the shift in pixels (``cv2.phaseCorrelate``
    with a Hanning window) and the correlation peak (about 1 for a pure shift,
    under 0.3 between unrelated pictures); ``(0, 0, 0)`` when either frame is flat.
    """
    if float(a.std()) < 1.0 or float(b.std()) < 1.0:
        return 0.0, 0.0, 0.0
    # the window is applied here: cv2.phaseCorrelate's own window argument gave
    # run-to-run different peaks in OpenCV 4.x (observed; the product is the same maths)
    (dx, dy), peak = cv2.phaseCorrelate(a * _HANN_FINE, b * _HANN_FINE)
    return float(dx), float(dy), float(peak)


def lag_profile_fit(profile: np.ndarray, prev_profile: np.ndarray) -> tuple[float, float, int]:
    """Fit frame ``t``'s lag profile as frame ``t - 1``'s shifted by ``F`` frames.

    Args:
        profile, prev_profile: ``(max_lag,) float32`` distances of frames ``t``
            and ``t - 1`` to the frames ``1..max_lag`` before them (NaN unknown);
            shifts reach ``min(LAG_FIT_MAX, max_lag - LAG_FIT_SPAN)``.

    Returns ``(fit, fit0, jump)``: the smallest relative mismatch
    ``mean|profile[L] - prev_profile[L + F]| / mean(profile[L])`` over
    ``L = 1..LAG_FIT_SPAN`` and ``F = 1..LAG_FIT_MAX`` (at least half the lags
    known), the mismatch at ``F = 0``, and the best ``F``; ``(nan, nan, 0)``
    when too little is known. Under a stationary shot the distance depends on
    the lag only, so a seam after ``F`` dropped frames fits at about ``F``
    (MVTamperBench section 3.2, dropping).
    """
    m = LAG_FIT_SPAN
    if prev_profile.shape[0] < m + 1:
        return float("nan"), float("nan"), 0
    a = profile[:m].astype(np.float64)
    wins = np.lib.stride_tricks.sliding_window_view(
        prev_profile[: LAG_FIT_MAX + m].astype(np.float64), m
    )  # wins[F] = prev_profile lags F+1 .. F+m
    ok = np.isfinite(wins) & np.isfinite(a)
    cnt = ok.sum(axis=1)
    scale = float(np.nanmean(a)) if np.isfinite(a).any() else float("nan")
    if not np.isfinite(scale) or cnt[0] < m // 2:
        return float("nan"), float("nan"), 0
    err = np.where(ok, np.abs(wins - a), 0.0).sum(axis=1) / np.maximum(cnt, 1)
    err = np.where(cnt >= m // 2, err / (scale + 1e-3), np.inf)
    best = int(np.argmin(err[1:])) + 1
    if not np.isfinite(err[best]):
        return float("nan"), float(err[0]), 0
    return float(err[best]), float(err[0]), best


class SignalExtractor:
    """Streaming extractor: ``push`` luma frames in order, then ``finish``.

    Args:
        max_lag: ring length in frames: the longest repetition lag and the
            longest segment whose two sides can be compared (default 64: a
            1-second window at up to 60 fps).
        half_window: half-width in frames of the local motion baseline.
        event_ratio, event_floor, event_abs: when a frame's snapshot is kept
            (see ``_decide_events``; liberal on purpose: the structure
            analysis decides).
        max_events: at most this many snapshots are kept (the oldest are
            dropped); ``trim`` also drops the snapshots before its frame.
    """

    def __init__(
        self,
        max_lag: int = 64,
        *,
        half_window: int = 12,
        event_ratio: float = 2.0,
        event_floor: float = 1.5,
        event_abs: float = 4.0,
        max_events: int = 1024,
    ) -> None:
        if max_lag < 2:
            raise ValueError("max_lag must be >= 2")
        self.max_lag = max_lag
        self.half_window = half_window
        self.event_ratio = event_ratio
        self.event_floor = event_floor
        self.event_abs = event_abs
        # frames whose event decision waits for ``half_window`` later frames
        self._pending: deque[
            tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]
        ] = deque()
        self._prev_fine: np.ndarray | None = None
        self._ring = np.zeros((max_lag, THUMB_SIZE[1] * THUMB_SIZE[0]), dtype=np.float32)
        self._filled = 0
        self._head = 0  # slot of the next write
        self._cols: dict[str, array[float]] = {k: array("f") for k in _SIGNAL_NAMES}
        self._prev_thumb: np.ndarray | None = None
        self._prev_hist: np.ndarray | None = None
        self._prev_profile = np.full(max_lag, np.nan, dtype=np.float32)
        self._prev_dark = 0.0
        self.events: deque[Event] = deque(maxlen=max_events)
        self._size: tuple[int, int] | None = None
        self._offset = 0  # clip index of element 0 of the columns
        self.d1_hist = np.zeros(D1_HIST_BINS, dtype=np.int64)
        """Counts of ``d1`` in bins of 0.1 luma units (last bin open): the clip's motion
        distribution in O(1) memory."""
        self.n = 0

    def push(self, frame: np.ndarray) -> None:
        """Add the next frame: ``(H, W) uint8`` luma (or ``(H, W, 3) uint8 RGB``).

        Frames wider than ``ANALYSIS_WIDTH`` are downscaled (area filter).

        Raises:
            ValueError: a frame that is not 2-D/3-D uint8, or whose size changes mid-stream.
        """
        if frame.dtype != np.uint8 or frame.ndim not in (2, 3):
            raise ValueError(
                f"expected a uint8 (H, W) or (H, W, 3) frame, got {frame.dtype} {frame.shape}"
            )
        if frame.ndim == 3:
            frame = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
        h, w = frame.shape
        if self._size is None:
            self._size = (w, h)
        elif self._size != (w, h):
            raise ValueError(f"frame size changed from {self._size} to {(w, h)} at frame {self.n}")
        aw, ah = analysis_size(w, h)
        g = (
            frame
            if (aw, ah) == (w, h)
            else cv2.resize(frame, (aw, ah), interpolation=cv2.INTER_AREA)
        )
        self._push_analysis(g)

    def _push_analysis(self, g: np.ndarray) -> None:
        cols = self._cols
        cols["mean"].append(float(g.mean()))
        dark = float(np.count_nonzero(g <= DARK_LEVEL)) / g.size
        cols["dark"].append(dark)
        nz = cv2.filter2D(g, cv2.CV_32F, _NOISE_KERNEL)[1:-1, 1:-1]
        cols["noise"].append(float(np.abs(nz).mean()) * float(np.sqrt(np.pi / 2.0)) / 6.0)
        hist = cv2.calcHist([g], [0], None, [HIST_BINS], [0, 256]).ravel() / g.size
        fine = cv2.resize(g, FINE_SIZE, interpolation=cv2.INTER_AREA).astype(np.float32)
        thumb = cv2.resize(fine, THUMB_SIZE, interpolation=cv2.INTER_AREA)
        flat = thumb.ravel()

        profile = np.full(self.max_lag, np.nan, dtype=np.float32)
        if self._filled:
            # ring slot of lag L is (head - L) mod max_lag
            lags = np.arange(1, self._filled + 1)
            slots = (self._head - lags) % self.max_lag
            profile[: self._filled] = np.abs(self._ring[slots] - flat).mean(axis=1)
        prev = self._prev_thumb
        if prev is None:
            for k in ("d1", "d1loc", "hist", "drot", "dhflip", "dvflip", "dx", "dy", "resp"):
                cols[k].append(0.0)
        else:
            d1 = float(profile[0])
            cols["d1"].append(d1)
            diff = np.abs(flat - prev.ravel())
            cols["d1loc"].append(float(np.partition(diff, diff.size - _LOCAL_K)[-_LOCAL_K:].mean()))
            self.d1_hist[min(int(d1 * 10), D1_HIST_BINS - 1)] += 1
            assert self._prev_fine is not None
            dx, dy, peak = frame_shift(self._prev_fine, fine)
            cols["dx"].append(dx)
            cols["dy"].append(dy)
            cols["resp"].append(peak)
            assert self._prev_hist is not None
            cols["hist"].append(float(np.abs(hist - self._prev_hist).sum()) / 2.0)
            cols["drot"].append(float(np.abs(thumb - prev[::-1, ::-1]).mean()))
            cols["dhflip"].append(float(np.abs(thumb - prev[:, ::-1]).mean()))
            cols["dvflip"].append(float(np.abs(thumb - prev[::-1, :]).mean()))
        fit, fit0, jump = lag_profile_fit(profile, self._prev_profile)
        cols["lag_fit"].append(fit)
        cols["lag_fit0"].append(fit0)
        cols["lag_jump"].append(float(jump))
        cols["far"].append(
            float(np.nanmedian(profile[31:64])) if self._filled >= 40 else float("nan")
        )
        if self._filled >= 2:
            tail = profile[1 : self._filled]
            best = int(np.argmin(tail))
            cols["rep_d"].append(float(tail[best]))
            cols["rep_lag"].append(float(best + 2))
        else:
            cols["rep_d"].append(float("nan"))
            cols["rep_lag"].append(0.0)

        if prev is not None:
            dark_jump = abs(dark - self._prev_dark) >= 0.2
            assert self._prev_fine is not None
            self._pending.append(
                (self.n, prev, thumb, profile, self._prev_profile, self._prev_fine, fine, dark_jump)
            )
        self._decide_events(final=False)

        self._ring[self._head] = flat
        self._head = (self._head + 1) % self.max_lag
        self._filled = min(self._filled + 1, self.max_lag)
        self._prev_thumb = thumb
        self._prev_fine = fine
        self._prev_hist = hist
        self._prev_profile = profile
        self._prev_dark = dark
        self.n += 1

    def _decide_events(self, *, final: bool) -> None:
        """Keep a snapshot for each pending frame that changed abruptly.

        A frame ``t`` is decided once frame ``t + half_window`` has arrived (or
        at the end): it is an event when its ``d1`` is at least ``event_abs``
        and ``event_ratio`` times (the median of the non-held ``d1`` over
        ``[t - half_window, t + half_window]`` plus ``event_floor``), or when
        the black fraction jumped. This is a superset of the frames the
        structure analysis treats as discontinuities.
        """
        d1 = self._cols["d1"]
        k = self.half_window
        off = self._offset
        while self._pending and (final or self._pending[0][0] + k < off + len(d1)):
            t, prev, thumb, profile, prev_profile, prev_fine, fine, dark_jump = (
                self._pending.popleft()
            )
            lo, hi = max(1, t - k), min(off + len(d1), t + k + 1)
            win = [x for x in d1[lo - off : hi - off] if x >= 0.3]  # held frames ignored
            base = float(np.median(win)) if win else 0.0
            dt = d1[t - off]
            if dark_jump or (
                dt >= self.event_abs and dt >= self.event_ratio * (base + self.event_floor)
            ):
                self.events.append(Event(t, prev, thumb, profile, prev_profile, prev_fine, fine))

    @property
    def offset(self) -> int:
        """Clip index of the oldest frame whose scalars are still kept."""
        return self._offset

    @property
    def decided(self) -> int:
        """Frames ``[0, decided)`` have had their event decision made."""
        return self._pending[0][0] if self._pending else self.n

    def trim(self, keep_from: int) -> None:
        """Forget the scalars and snapshots of frames before clip index ``keep_from``.

        Frames still waiting for their event decision (the last
        ``half_window``) and their baseline window are always kept.
        """
        keep_from = min(keep_from, self.decided - self.half_window - 1)
        drop = keep_from - self._offset
        if drop <= 0:
            return
        for col in self._cols.values():
            del col[:drop]
        self._offset = keep_from
        while self.events and self.events[0].frame < keep_from:
            self.events.popleft()

    def view(self, lo: int, hi: int, *, final: bool = False) -> SignalTrace:
        """The trace of clip frames ``[lo, hi)`` (clipped to what is kept).

        ``final`` marks that ``hi`` is the clip's end (call ``finish`` first).
        """
        lo = max(lo, self._offset)
        hi = min(hi, self.n)
        a, b = lo - self._offset, max(lo, hi) - self._offset
        arrays = {k: np.frombuffer(v, dtype=np.float32)[a:b].copy() for k, v in self._cols.items()}
        events = [ev for ev in self.events if lo <= ev.frame < hi]
        return SignalTrace(
            n=b - a,
            events=events,
            max_lag=self.max_lag,
            offset=lo,
            clip_start=lo == 0,
            clip_end=final and hi == self.n,
            **arrays,
        )

    def finish(self) -> SignalTrace:
        """Decide the pending frames; the trace of every frame still kept."""
        self._decide_events(final=True)
        return self.view(self._offset, self.n, final=True)


def extract_signals(
    frames: Iterable[np.ndarray], *, max_lag: int = 64, half_window: int = 12
) -> SignalTrace:
    """Run ``SignalExtractor`` over ``frames`` (each ``(H, W) uint8`` luma or ``(H, W, 3) uint8 RGB``).

    Raises:
        ValueError: a malformed frame (see ``SignalExtractor.push``).
    """
    ex = SignalExtractor(max_lag=max_lag, half_window=half_window)
    for f in frames:
        ex.push(f)
    return ex.finish()


__all__ = [
    "ANALYSIS_WIDTH",
    "DARK_LEVEL",
    "LAG_FIT_MAX",
    "LAG_FIT_SPAN",
    "THUMB_SIZE",
    "Event",
    "SignalExtractor",
    "SignalTrace",
    "analysis_size",
    "extract_signals",
    "frame_shift",
    "lag_profile_fit",
]
