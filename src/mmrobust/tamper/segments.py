"""One decode, shared segments: how the builder encodes every variant of a source.

Every variant (the original and each effect) shares the frames before the
window ``[0, s)`` and after it ``[e, N)``. Those are encoded once each; each
distinct window is encoded once; each output clip is then joined by copying
packets (``mmrobust.media.concat``):

* original = prefix + window + suffix
* an effect = prefix + effect(window) + suffix (dropping: prefix + suffix)
* an effect whose output is the source window played ``k`` times
  (repetition) reuses the original's window ``k`` times: no encode.

One GOP, one encoder. Every run of frames (prefix, window, suffix) is cut into
pieces of ``F`` frames (the window length; the last piece of a run may be
shorter), and each piece is its own segment file from its own encoder: a
closed GOP that starts with a keyframe and references nothing outside it.
The prefix's pieces start at ``0, F, 2F, ...``; a window of ``F`` frames (or a
multiple) keeps what follows on the grid ``s + kF``; so every output of a
source, whatever its effect, has keyframes exactly at ``{kF < s} | {s + kF}``
and every one of its GOPs is an independent encode (no keyframe is "the first
of an encoder" in one variant and "mid-stream" in another, which would show
in frame sizes). Only the length differs between variants, as it must for
dropping/repetition. A variant whose window became a length that is not a
multiple of ``F`` (``speed``) would shift the suffix off the grid: it gets its
own *tail* instead (its window frames followed by the suffix frames, cut into
``F``-frame pieces from ``s``), at the cost of encoding the suffix once more.
Writers should also use ``gop=F`` (no scene-cut keyframes inside a piece).

Prefix and suffix frames go from the decoder to the encoder without an RGB
round trip when the decoded frame already has the encoder's pixel format and
size and no rotation; window frames are converted to ``(H, W, 3) uint8 RGB``
for the effects, and every window segment (the original's too) is encoded
from RGB, so original and tampered clips are made the same way.

Segments are files in a work folder (deleted by the caller), so memory holds
only the window's frames and the open encoders (one, plus one per tail),
whatever the clip length.
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
        prefix, suffix: pieces of frames ``[0, s)`` and ``[e, N)`` (empty when none).
        plans: ``{variant: window pieces in playing order}`` (empty for dropping;
            for a variant in ``tails``, the pieces of window + suffix).
        out_len: ``{variant: frames its window became}``.
        tails: variants whose pieces already hold the suffix frames.
        gop: frames per piece (``F``).
        decoded: frames the decode produced (``N``).
        settings, padded: the encoder's manifest settings and odd-size padding flag.
    """

    prefix: list[Segment] = field(default_factory=list)
    suffix: list[Segment] = field(default_factory=list)
    plans: dict[str, list[Segment]] = field(default_factory=dict)
    out_len: dict[str, int] = field(default_factory=dict)
    tails: set[str] = field(default_factory=set)
    gop: int = 0
    decoded: int = 0
    settings: dict[str, object] = field(default_factory=dict)
    padded: bool = False

    def segments(self, variant: str) -> list[Segment]:
        """Prefix + the variant's window pieces + suffix, in playing order."""
        tail = [] if variant in self.tails else self.suffix
        return [*self.prefix, *self.plans[variant], *tail]


class _Pieces:
    """Frames of one run into files of at most ``gop`` frames, one encoder each."""

    def __init__(
        self,
        stem: str,
        gop: int,
        work: Path,
        open_writer: Callable[[Path], VideoWriter],
        res: SegmentSet,
    ) -> None:
        self.stem, self.gop, self.work, self.open_writer, self.res = (
            stem,
            gop,
            work,
            open_writer,
            res,
        )
        self.segments: list[Segment] = []
        self._w: VideoWriter | None = None

    def writer(self) -> VideoWriter:
        """The encoder that takes the next frame (a new one every ``gop`` frames)."""
        if self._w is not None and self._w.frames_written >= self.gop:
            self._finish()
        if self._w is None:
            self._w = self.open_writer(self.work / f"{self.stem}-{len(self.segments):04d}.mp4")
        return self._w

    def write(self, frames: Sequence[np.ndarray]) -> None:
        """Encode ``(H, W, 3) uint8 RGB`` frames."""
        for f in frames:
            self.writer().write(f)

    def _finish(self) -> None:
        w, self._w = self._w, None
        assert w is not None
        w.close()
        self.res.settings, self.res.padded = dict(w.settings), w.padded
        self.segments.append(Segment(w.path, w.frames_written))

    def close(self) -> list[Segment]:
        """Finish the last piece; returns all pieces in order."""
        if self._w is not None:
            self._finish()
        return self.segments

    def abort(self) -> None:
        """Discard the piece being written."""
        if self._w is not None:
            self._w.abort()
            self._w = None


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
    """Decode ``source`` once and encode its shared and per-variant pieces into ``work``.

    Args:
        source: the video.
        window: the source window ``[s, e)`` (frames); its length ``F`` is the piece length.
        variants: names to produce; ``original`` among them or not.
        apply: turns the held window into each effect variant's frames (not
            called for ``original``, whose window is the held frames).
        work: folder for the segment files (created; the caller deletes it).
        open_writer: opens an encoder for one piece; all pieces must get
            identical settings so they can be joined (use ``gop=F``).
        original: the name of the untampered variant.

    Returns:
        The ``SegmentSet``; ``decoded`` may differ from the planned count
        (the caller re-plans the window and calls again).

    Raises:
        MediaError: decode or encode failure.
    """
    work.mkdir(parents=True, exist_ok=True)
    s, e = window.start_frame, window.end_frame
    res = SegmentSet(gop=window.n_frames)
    prefix = _Pieces("prefix", res.gop, work, open_writer, res)
    suffix = _Pieces("suffix", res.gop, work, open_writer, res)
    tails: dict[str, _Pieces] = {}
    held: list[np.ndarray] = []
    try:
        for i, frame in enumerate(_decode(source)):
            res.decoded = i + 1
            if i < s:
                _feed(prefix.writer(), frame)
            elif i < e:
                held.append(_to_array(frame, None, False, True))
                if i == e - 1:
                    tails = _encode_windows(res, held, variants, apply, original, work, open_writer)
                    held = []
            else:
                _feed(suffix.writer(), frame)
                for tail in tails.values():
                    _feed(tail.writer(), frame)
        res.prefix, res.suffix = prefix.close(), suffix.close()
        for name, tail in tails.items():
            res.plans[name] = tail.close()
    finally:
        for pieces in (prefix, suffix, *tails.values()):
            pieces.abort()
    return res


def _encode_windows(
    res: SegmentSet,
    held: list[np.ndarray],
    variants: Sequence[str],
    apply: WindowFn,
    original: str,
    work: Path,
    open_writer: Callable[[Path], VideoWriter],
) -> dict[str, _Pieces]:
    """Encode each distinct window; returns the open tails (window length off the ``F`` grid)."""
    outputs = apply(held)
    orig_segs: list[Segment] | None = None
    tails: dict[str, _Pieces] = {}

    def _encode(stem: str, frames: list[np.ndarray]) -> list[Segment]:
        pieces = _Pieces(stem, res.gop, work, open_writer, res)
        try:
            pieces.write(frames)
            return pieces.close()
        finally:
            pieces.abort()

    try:
        for k, name in enumerate(variants):
            out = held if name == original else list(outputs[name])
            res.out_len[name] = len(out)
            reps = _repeats_of(out, held)
            if not out:
                res.plans[name] = []
            elif reps:
                if orig_segs is None:
                    orig_segs = _encode("window-original", held)
                res.plans[name] = orig_segs * reps
            elif len(out) % len(held):
                tails[name] = _Pieces(f"tail-{k}", res.gop, work, open_writer, res)
                tails[name].write(out)
                res.tails.add(name)
            else:
                res.plans[name] = _encode(f"window-{k}", out)
    except BaseException:
        for pieces in tails.values():
            pieces.abort()
        raise
    return tails


def join(res: SegmentSet, variant: str, out: Path, fps: Fraction) -> int:
    """Write ``variant``'s clip to ``out`` from the pieces; returns its frame count.

    Raises:
        MediaError: the pieces cannot be joined.
    """
    return concat_segments(res.segments(variant), out, fps)


__all__ = ["SegmentSet", "WindowFn", "encode_segments", "join"]
