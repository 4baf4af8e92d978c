"""One decode, shared segments: how the builder encodes every variant of a source.

Every variant (the original and each effect) shares the frames before the
window ``[0, s)`` and after it ``[e, N)``. Those are encoded once each, as
their own segments (own encoder, so each starts with a keyframe and no frame
references across a border); each variant's window frames are encoded as a
separate segment; each output clip is then joined by copying packets
(``mmrobust.media.concat``):

* original = prefix + window + suffix
* an effect = prefix + effect(window) + suffix (dropping: prefix + suffix)
* an effect whose output is the source window played ``k`` times
  (repetition) reuses the original's window segment ``k`` times: no encode.

Prefix and suffix frames go from the decoder to the encoder without an RGB
round trip when the decoded frame already has the encoder's pixel format and
size and no rotation; window frames are converted to ``(H, W, 3) uint8 RGB``
for the effects, and every window segment (the original's too) is encoded
from RGB, so original and tampered clips are made the same way.

Segments are files in a work folder (deleted by the caller), so memory holds
only the window's frames and one encoder at a time, whatever the clip length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av.error
import numpy as np
from av.video.frame import VideoFrame

from mmrobust.datasets.schema import Window
from mmrobust.media._open import describe_av_error, open_video
from mmrobust.media.concat import Segment, concat_segments
from mmrobust.media.decode import _to_array
from mmrobust.media.errors import MediaError
from mmrobust.media.probe import normalise_rotation
from mmrobust.media.writer import VideoWriter

WindowFn = Callable[[list[np.ndarray]], Mapping[str, list[np.ndarray]]]
"""Held window frames (``F`` x ``(H, W, 3) uint8 RGB``) -> ``{variant: output frames}``."""


@dataclass
class SegmentSet:
    """The encoded pieces of one source.

    Attributes:
        prefix, suffix: frames ``[0, s)`` and ``[e, N)``; ``None`` when empty.
        plans: ``{variant: window segments in order}`` (empty list for dropping).
        out_len: ``{variant: frames its window became}``.
        decoded: frames the decode produced (``N``).
        settings, padded: the encoder's manifest settings and odd-size padding flag.
    """

    prefix: Segment | None = None
    suffix: Segment | None = None
    plans: dict[str, list[Segment]] = field(default_factory=dict)
    out_len: dict[str, int] = field(default_factory=dict)
    decoded: int = 0
    settings: dict[str, object] = field(default_factory=dict)
    padded: bool = False

    def segments(self, variant: str) -> list[Segment]:
        """Prefix + the variant's window segments + suffix, in playing order."""
        head = [self.prefix] if self.prefix else []
        tail = [self.suffix] if self.suffix else []
        return [*head, *self.plans[variant], *tail]


def _decode(path: Path) -> Iterator[VideoFrame]:
    with open_video(path) as (container, stream):
        n = 0
        try:
            for frame in container.decode(stream):
                yield frame
                n += 1
        except av.error.FFmpegError as exc:
            raise MediaError(
                path, f"decode failed after {n} frames: {describe_av_error(exc)}"
            ) from exc


def _feed(writer: VideoWriter, frame: VideoFrame) -> None:
    """Encode a decoded frame: directly when it fits the encoder, else via RGB (rotation, padding)."""
    direct = (
        normalise_rotation(frame.rotation) == 0
        and (frame.width, frame.height) == (writer.enc_width, writer.enc_height)
        and frame.format.name == writer.pix_fmt
    )
    if direct:
        writer.write_frame(frame)
    else:
        writer.write(_to_array(frame, None, False, True))


def _repeats_of(out: list[np.ndarray], held: list[np.ndarray]) -> int:
    """``k`` when ``out`` is the very frame objects of ``held`` played ``k`` times, else 0."""
    f = len(held)
    if not out or len(out) % f:
        return 0
    return len(out) // f if all(x is held[i % f] for i, x in enumerate(out)) else 0


def encode_segments(
    source: Path,
    window: Window,
    variants: Sequence[str],
    apply: WindowFn,
    work: Path,
    open_writer: Callable[[Path], VideoWriter],
    original: str,
) -> SegmentSet:
    """Decode ``source`` once and encode its shared and per-variant segments into ``work``.

    Args:
        source: the video.
        window: the source window ``[s, e)`` (frames).
        variants: names to produce; ``original`` among them or not.
        apply: turns the held window into each effect variant's frames (not
            called for ``original``, whose window is the held frames).
        work: folder for the segment files (created; the caller deletes it).
        open_writer: opens an encoder for one segment file; all segments must
            get identical settings so they can be joined.
        original: the name of the untampered variant.

    Returns:
        The ``SegmentSet``; ``decoded`` may differ from the planned count
        (the caller re-plans the window and calls again).

    Raises:
        MediaError: decode or encode failure.
    """
    work.mkdir(parents=True, exist_ok=True)
    s, e = window.start_frame, window.end_frame
    res = SegmentSet()
    writer: VideoWriter | None = None
    held: list[np.ndarray] = []

    def _close(w: VideoWriter, name: str) -> Segment:
        w.close()
        res.settings, res.padded = dict(w.settings), w.padded
        return Segment(work / f"{name}.mp4", w.frames_written)

    def _encode_window(name: str, frames: list[np.ndarray]) -> Segment:
        w = open_writer(work / f"{name}.mp4")
        try:
            for f in frames:
                w.write(f)
        except BaseException:
            w.abort()
            raise
        return _close(w, name)

    try:
        for i, frame in enumerate(_decode(source)):
            res.decoded = i + 1
            if i < s:
                if writer is None:
                    writer = open_writer(work / "prefix.mp4")
                _feed(writer, frame)
                continue
            if i == s and writer is not None:
                res.prefix = _close(writer, "prefix")
                writer = None
            if i < e:
                held.append(_to_array(frame, None, False, True))
                if i == e - 1:
                    _encode_windows(res, held, variants, apply, original, _encode_window)
                    held = []
                continue
            if writer is None:
                writer = open_writer(work / "suffix.mp4")
            _feed(writer, frame)
        if writer is not None:
            seg = _close(writer, "suffix" if res.decoded > e else "prefix")
            writer = None
            if res.decoded > e:
                res.suffix = seg
            else:
                res.prefix = seg
    finally:
        if writer is not None:
            writer.abort()
    return res


def _encode_windows(
    res: SegmentSet,
    held: list[np.ndarray],
    variants: Sequence[str],
    apply: WindowFn,
    original: str,
    encode: Callable[[str, list[np.ndarray]], Segment],
) -> None:
    outputs = apply(held)
    orig_seg: Segment | None = None

    def _orig() -> Segment:
        nonlocal orig_seg
        if orig_seg is None:
            orig_seg = encode("window-original", held)
        return orig_seg

    for k, name in enumerate(variants):
        out = held if name == original else list(outputs[name])
        res.out_len[name] = len(out)
        reps = _repeats_of(out, held)
        if not out:
            res.plans[name] = []
        elif reps:
            res.plans[name] = [_orig()] * reps
        else:
            res.plans[name] = [encode(f"window-{k}", out)]


def join(res: SegmentSet, variant: str, out: Path, fps: Fraction) -> int:
    """Write ``variant``'s clip to ``out`` from the segments; returns its frame count.

    Raises:
        MediaError: the segments cannot be joined.
    """
    return concat_segments(res.segments(variant), out, fps)


__all__ = ["SegmentSet", "WindowFn", "encode_segments", "join"]
