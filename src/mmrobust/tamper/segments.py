"""One decode, shared pieces: how the builder encodes every variant of a source.

Every variant (the original and each effect) shares the frames before the
window ``[0, s)`` and after it ``[e, N)``. Those are encoded once each; each
distinct window is encoded once; every encoded packet goes straight into each
output clip that plays it (``mmrobust.media.concat.JoinedClips``: all outputs
are open at once, under temporary names):

* original = prefix + window + suffix
* an effect = prefix + effect(window) + suffix (dropping: prefix + suffix)
* an effect whose output is the source window played ``k`` times
  (repetition) reuses the original's window: its packets (``F``, the only
  packets held) are muxed ``k`` times, no encode.

One GOP, one encoder. Every run of frames (prefix, window, suffix) is cut into
pieces of ``F`` frames (the window length; the last piece of a run may be
shorter), and each piece comes from its own encoder (``FrameEncoder``): a
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

Prefix and suffix frames go from the decoder to the encoder without an RGB
round trip when the decoded frame already has the encoder's pixel format and
size and no rotation; window frames are converted to ``(H, W, 3) uint8 RGB``
for the effects, and every window piece (the original's too) is encoded
from RGB, so original and tampered clips are made the same way.

Memory holds the window's frames, the original window's packets, one
encoder per run being written (prefix or suffix, plus one per tail) and the
open outputs, whatever the clip length. Nothing is written but the outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import av.error
import numpy as np
from av.packet import Packet
from av.video.frame import VideoFrame

from mmrobust.media._open import decode_video, describe_av_error, open_video
from mmrobust.media.concat import JoinedClips, Piece
from mmrobust.media.decode import _to_array
from mmrobust.media.encoder import EncoderSettings, FrameEncoder
from mmrobust.media.errors import MediaError
from mmrobust.media.probe import normalise_rotation
from mmrobust.schema import Window

WindowFn = Callable[[list[np.ndarray]], Mapping[str, list[np.ndarray]]]
"""Held window frames (``F`` x ``(H, W, 3) uint8 RGB``) -> ``{variant: output frames}``."""


@dataclass(frozen=True)
class Encode:
    """One piece that was encoded: its run, the outputs it went to, its frames.

    ``run`` is ``prefix``, ``suffix``, ``window-<variant>`` (``window-original``
    also serves repetition) or ``tail-<variant>``.
    """

    run: str
    outputs: tuple[str, ...]
    frames: int


@dataclass
class Built:
    """What ``encode_variants`` made.

    Attributes:
        decoded: frames the decode produced (``N``); when it differs from the
            expected count nothing was written (the caller re-plans and calls again).
        frames: ``{variant: frames in its written clip}``.
        errors: ``{variant: reason}`` for outputs that could not be finished.
        out_len: ``{variant: frames its window became}``.
        encodes: every piece encoded, in order (its packets were muxed into
            ``outputs``; a repeated window is muxed again without an encode).
        settings, padded: the encoder's manifest settings and odd-size padding flag.
    """

    decoded: int = 0
    frames: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    out_len: dict[str, int] = field(default_factory=dict)
    encodes: list[Encode] = field(default_factory=list)
    settings: dict[str, object] = field(default_factory=dict)
    padded: bool = False


class _Run:
    """Frames of one run into pieces of at most ``gop`` frames, one encoder each, muxed as they come."""

    def __init__(
        self,
        label: str,
        names: Sequence[str],
        clips: JoinedClips,
        settings: EncoderSettings,
        built: Built,
        keep: bool = False,
    ) -> None:
        self.label, self.names, self.clips, self.settings, self.built = (
            label,
            tuple(names),
            clips,
            settings,
            built,
        )
        self.gop = settings.gop or 1
        self.kept: list[list[Packet]] | None = [] if keep else None
        self._enc: FrameEncoder | None = None
        self._piece: Piece | None = None

    def _send(self, packets: list[Packet]) -> None:
        assert self._piece is not None
        for p in packets:
            self._piece.add(p)
        if self.kept is not None:
            self.kept[-1].extend(packets)

    def write(self, frame: VideoFrame) -> None:
        """Encode one frame of the encoded size; a new encoder every ``gop`` frames.

        A run with no outputs encodes nothing.
        """
        if not self.names:
            return
        if self._enc is not None and self._enc.frames >= self.gop:
            self._end()
        if self._enc is None:
            self._enc = FrameEncoder(self.settings)
            self._piece = self.clips.piece(self.names, self._enc.extradata)
            if self.kept is not None:
                self.kept.append([])
        self._send(self._enc.encode(frame))

    def write_rgb(self, frames: Sequence[np.ndarray]) -> None:
        """Encode ``(H, W, 3) uint8 RGB`` frames."""
        for f in frames:
            self.write(self.settings.rgb_frame(f))

    def _end(self) -> None:
        enc, self._enc = self._enc, None
        if enc is None:
            return
        self._send(enc.flush())
        assert self._piece is not None
        self._piece.close(enc.frames)
        self._piece = None
        self.built.encodes.append(Encode(self.label, self.names, enc.frames))

    def close(self) -> None:
        """Finish the last piece."""
        self._end()


def _decode(path: Path) -> Iterator[VideoFrame]:
    with open_video(path) as (container, stream):
        n = 0
        try:
            for frame in decode_video(container, stream):
                yield frame
                n += 1
        except av.error.FFmpegError as exc:
            raise MediaError(
                path, f"decode failed after {n} frames: {describe_av_error(exc)}"
            ) from exc


def _feed(run: _Run, frame: VideoFrame) -> None:
    """Encode a decoded frame: directly when it fits the encoder, else via RGB (rotation, padding)."""
    if normalise_rotation(frame.rotation) == 0 and run.settings.fits(frame):
        run.write(frame)
    else:
        run.write(run.settings.rgb_frame(_to_array(frame, None, False, True, exact=True)))


def _repeats_of(out: list[np.ndarray], held: list[np.ndarray]) -> int:
    """``k`` when ``out`` is the very frame objects of ``held`` played ``k`` times, else 0."""
    f = len(held)
    if not out or len(out) % f:
        return 0
    return len(out) // f if all(x is held[i % f] for i, x in enumerate(out)) else 0


def encode_variants(
    source: Path,
    window: Window,
    outputs: Mapping[str, Path],
    apply: WindowFn,
    settings: EncoderSettings,
    original: str,
    expected: int | None = None,
) -> Built:
    """Decode ``source`` once and write every variant's clip from shared pieces.

    Args:
        source: the video.
        window: the source window ``[s, e)`` (frames); its length ``F`` is the piece length.
        outputs: ``{variant: output file}`` (mp4); ``original`` among them or not.
        apply: turns the held window into each effect variant's frames (not
            called for ``original``, whose window is the held frames).
        settings: the encoder of every piece; ``gop`` must be ``F``.
        original: the name of the untampered variant.
        expected: frame count the window was planned for; when the decode
            finds another, every output is discarded (see ``Built.decoded``).

    Returns:
        ``Built``; outputs listed in ``errors`` were not written.

    Raises:
        MediaError: decode or encode failure (no output is left behind).
        ValueError: ``settings.gop`` is not the window length.
    """
    if settings.gop != window.n_frames:
        raise ValueError(f"encoder gop {settings.gop} must be the window length {window.n_frames}")
    s, e = window.start_frame, window.end_frame
    built = Built(settings=settings.manifest("mp4"), padded=settings.padded)
    names = list(outputs)
    with JoinedClips(outputs, settings) as clips:
        try:
            prefix = _Run("prefix", names, clips, settings, built)
            suffix: _Run | None = None
            held: list[np.ndarray] = []
            tails: dict[str, _Run] = {}
            for i, frame in enumerate(_decode(source)):
                built.decoded = i + 1
                if i < s:
                    _feed(prefix, frame)
                elif i < e:
                    held.append(_to_array(frame, None, False, True, exact=True))
                    if i == e - 1:
                        prefix.close()
                        tails = _encode_windows(
                            clips, settings, built, held, names, apply, original
                        )
                        held = []
                        rest = [n for n in names if n not in tails]
                        suffix = _Run("suffix", rest, clips, settings, built)
                else:
                    assert suffix is not None
                    _feed(suffix, frame)
                    for tail in tails.values():
                        _feed(tail, frame)
            prefix.close()
            for run in (suffix, *tails.values()):
                if run is not None:
                    run.close()
        except av.error.FFmpegError as exc:
            raise MediaError(source, f"encoding failed: {describe_av_error(exc)}") from exc
        if expected is not None and built.decoded != expected:
            return built
        if built.decoded < e:
            raise MediaError(source, f"decoded {built.decoded} frames, window ends at {e}")
        for name in names:
            try:
                built.frames[name] = clips.finish(name)
            except MediaError as exc:
                built.errors[name] = str(exc)
    return built


def _encode_windows(
    clips: JoinedClips,
    settings: EncoderSettings,
    built: Built,
    held: list[np.ndarray],
    names: Sequence[str],
    apply: WindowFn,
    original: str,
) -> dict[str, _Run]:
    """Encode each distinct window into its outputs; returns the open tails (length off the grid)."""
    outputs = apply(held)
    plays: dict[str, int] = {}  # outputs of the original's window: times each plays it
    own: dict[str, list[np.ndarray]] = {}
    for name in names:
        out = held if name == original else list(outputs[name])
        built.out_len[name] = len(out)
        reps = _repeats_of(out, held)
        if reps:
            plays[name] = reps
        elif out:
            own[name] = out
    if plays:
        run = _Run("window-original", list(plays), clips, settings, built, keep=True)
        run.write_rgb(held)
        run.close()
        assert run.kept is not None
        for name, times in plays.items():
            for _ in range(times - 1):
                for packets in run.kept:
                    piece = clips.piece([name], clips.header)
                    for p in packets:
                        piece.add(p)
                    piece.close(len(packets))
    tails: dict[str, _Run] = {}
    for name, out in own.items():
        off_grid = len(out) % len(held) != 0
        run = _Run(f"{'tail' if off_grid else 'window'}-{name}", [name], clips, settings, built)
        run.write_rgb(out)
        if off_grid:
            tails[name] = run
        else:
            run.close()
    return tails


__all__ = ["Built", "Encode", "WindowFn", "encode_variants"]
