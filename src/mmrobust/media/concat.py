"""Writing several clips at once from shared pieces of encoded packets (no re-encode, no re-read).

The tamper builder encodes the frames every variant shares (before and after
the window) once, each variant's window separately, in pieces: one piece is
the output of one encoder (``FrameEncoder``), starting with a keyframe and
referencing nothing outside it. ``JoinedClips`` keeps every output clip open
(mp4 written under a temporary name) and appends a piece to any subset of
them as its packets come out of the encoder: a shared piece is muxed into
every output that plays it, each with its own timestamp offset (the frames
that output already holds), so an output is its pieces played one after
another. Nothing is written to intermediate files or read back; a piece's
packets are muxed as they arrive and not kept (the caller keeps the ones it
plays again, e.g. repetition's window).

All pieces must come from encoders with identical settings: the outputs have
one codec header (``extradata``: H.264 SPS/PPS), taken from an encoder opened
with the same ``EncoderSettings``, and every piece's encoder must report the
same bytes. This is checked, as is the number of packets of each piece.

Decode timestamps: an encoder with B-frames starts its dts ``d`` frames
before its first pts (x264: ``d = 2``), but a piece of one or two frames has
no B-frame and starts at ``d = 0``. Joined as they are, such a short piece
(the last of the frames before a window, when the window does not start on
the GOP grid) followed by a full one gives two packets the same dts, which
the muxer rejects. Every piece is therefore re-timed to one decode delay
``D`` for the whole clip (measured once from an encoder with the same
settings): ``dts' = dts - (D - d)``. That keeps ``dts' <= pts`` and makes
the dts of every output strictly increasing across pieces.

Each encoder also writes in-band data at its start: x264 puts an SEI message
(NAL type 6, its version and options) into its first packet. Kept in every
piece, the count of those messages would tell how many pieces a clip was
joined from. For H.264, the SEI units of a piece's first packet are removed
(FFmpeg ``filter_units`` bitstream filter) in every output that already holds
a packet, so each output carries exactly one, in its first packet, as a
single encode does.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import av
import av.error
import numpy as np
from av.bitstream import BitStreamFilterContext
from av.container import OutputContainer
from av.packet import Packet
from av.video.stream import VideoStream

from mmrobust.media._open import describe_av_error
from mmrobust.media.encoder import EncoderSettings, FrameEncoder
from mmrobust.media.errors import MediaError
from mmrobust.media.writer import temp_path_for

_SEI_FILTER = {"h264": "filter_units=remove_types=6"}
"""Bitstream filter removing an encoder's start-of-stream SEI, per codec (descriptor name)."""


class _Output:
    """One clip being written: container on a temporary name, its stream, frames so far."""

    def __init__(self, path: Path, template: VideoStream) -> None:
        self.path = path
        self.tmp = temp_path_for(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.container: OutputContainer = av.open(str(self.tmp), mode="w")
        try:
            self.stream = self.container.add_stream_from_template(template, opaque=True)
            tb = self.stream.time_base
            if tb is None:  # pragma: no cover - set by add_stream_from_template
                raise ValueError("output stream without a time base")
        except BaseException:
            self.discard()
            raise
        self.time_base = Fraction(tb)
        self.frames = 0
        self.packets = 0
        self.busy = False
        self.closed = False

    def discard(self) -> None:
        self.closed = True
        with contextlib.suppress(Exception):
            self.container.close()
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()


class JoinedClips:
    """Output clips written together from pieces of packets (see the module docstring).

    Args:
        paths: ``{name: output file}`` (mp4; written to a temporary name, renamed by ``finish``).
        settings: the settings every piece's encoder uses.

    Raises:
        MediaError: an output or the header encoder cannot be opened.

    Use ``piece`` to append a piece to some outputs, ``finish`` per output,
    ``abort`` to discard every unfinished one. A context manager: leaving the
    block discards what was not finished.
    """

    def __init__(self, paths: Mapping[str, Path], settings: EncoderSettings) -> None:
        self.settings = settings
        self._tick = 1 / settings.fps  # the pieces' time base (computed once, not per packet)
        self._outputs: dict[str, _Output] = {}
        self._step = 0
        first = next(iter(paths.values()), Path("joined.mp4"))
        try:
            # The outputs' codec header: one encoder opened with the same settings
            # (its container, in memory, only lends its stream as the template).
            with av.open(io.BytesIO(), mode="w", format="mp4") as header:
                stream = header.add_stream(
                    settings.codec, rate=settings.fps, options=settings.options()
                )
                if not isinstance(stream, VideoStream):
                    raise ValueError(f"{settings.codec} is not a video encoder")
                settings.configure(stream.codec_context)
                header.start_encoding()
                self.header = bytes(stream.codec_context.extradata or b"")
                self._codec = stream.codec_context.codec.canonical_name
                self._template = stream
                for name, path in paths.items():
                    out = _Output(Path(path), stream)
                    self._outputs[name] = out
                    step = 1 / (settings.fps * out.time_base)
                    if step.denominator != 1:
                        raise ValueError(f"frame duration 1/{settings.fps} s is not whole ticks")
                    self._step = int(step)
                    first = out.path
                self._sei = _SEI_FILTER.get(self._codec)
            self.delay = decode_delay(settings)
        except (av.error.FFmpegError, ValueError, OSError) as exc:
            self.abort()
            raise MediaError(
                first, f"cannot open outputs ({settings.codec}): {describe_av_error(exc)}"
            ) from exc

    def __enter__(self) -> JoinedClips:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()

    def frames(self, name: str) -> int:
        """Frames output ``name`` holds so far."""
        return self._outputs[name].frames

    def piece(self, names: Sequence[str], extradata: bytes) -> Piece:
        """Start a piece (one encoder's packets) appended to each output in ``names``.

        Args:
            names: outputs that play the piece next (unknown names: ``KeyError``).
            extradata: the piece encoder's codec header.

        Raises:
            MediaError: the header differs from the outputs' (the piece cannot be joined),
                or an output is already taking another piece.
        """
        outs = [self._outputs[n] for n in names]
        for out in outs:
            if out.busy or out.closed:
                raise MediaError(out.path, "output is taking another piece or is finished")
        if extradata != self.header:
            where = outs[0].path if outs else Path("?")
            raise MediaError(where, "piece has a different codec header; cannot join")
        for out in outs:
            out.busy = True
        return Piece(self, outs)

    def _strip_sei(self, packet: Packet, out: _Output) -> Packet:
        """``packet`` without its SEI NAL units (H.264); other codecs unchanged."""
        if self._sei is None:
            return packet
        copy = Packet(bytes(packet))  # the filter takes (empties) the packet it is given
        copy.pts, copy.dts, copy.time_base = packet.pts, packet.dts, packet.time_base
        copy.is_keyframe = packet.is_keyframe
        # codec name only: no extradata, so the filter reads the encoder's Annex B packets
        bsf = BitStreamFilterContext(self._sei, self._codec)
        filtered = [*bsf.filter(copy), *bsf.filter(None)]
        if len(filtered) != 1:
            raise MediaError(out.path, f"SEI filter returned {len(filtered)} packets for one")
        return filtered[0]

    def finish(self, name: str) -> int:
        """Close output ``name`` and move it into place; returns its frame count.

        Raises:
            MediaError: it holds no frames, a piece is unfinished, or writing failed
                (the temporary file is removed).
        """
        out = self._outputs[name]
        if out.closed:
            raise MediaError(out.path, "output already finished")
        try:
            if out.busy:
                raise MediaError(out.path, "a piece is still being written")
            if out.frames == 0:
                raise MediaError(out.path, "no frames to write")
            out.container.close()
        except av.error.FFmpegError as exc:
            out.discard()
            raise MediaError(out.path, f"writing failed: {describe_av_error(exc)}") from exc
        except BaseException:
            out.discard()
            raise
        out.closed = True
        os.replace(out.tmp, out.path)
        return out.frames

    def abort(self) -> None:
        """Discard every output not finished (temporary files removed)."""
        for out in self._outputs.values():
            if not out.closed:
                out.discard()


_DELAY_PROBE_FRAMES = 8
"""Frames encoded to measure an encoder's decode delay (more than any B-frame run)."""


def decode_delay(settings: EncoderSettings) -> int:
    """Frames by which ``settings``' encoder starts its dts before its first pts.

    Measured once per encoder configuration (the frame size left out: the
    delay comes from the B-frame settings, not the picture; the same at
    64x64, 176x144 and 1280x720 for x264 ``ultrafast``/``veryfast``/``medium``
    and ``mpeg4``) by encoding ``_DELAY_PROBE_FRAMES`` 64x64 frames of a moving
    gradient: 2 for x264 with B-frames and a pyramid, 0 for ``mpeg4``. At
    the clip's own size the probe cost up to 0.28 s per source at 720p.

    Raises:
        av.error.FFmpegError: the encoder cannot be opened.
    """
    return _probe_delay(replace(settings, width=_PROBE_SIDE, height=_PROBE_SIDE))


_PROBE_SIDE = 64


@functools.lru_cache(maxsize=32)
def _probe_delay(settings: EncoderSettings) -> int:
    enc = FrameEncoder(settings)
    w, h = settings.width, settings.height
    ramp = np.arange(w, dtype=np.uint16)[None, :] + np.arange(h, dtype=np.uint16)[:, None]
    packets = []
    for i in range(_DELAY_PROBE_FRAMES):
        rgb = np.repeat(((ramp + 7 * i) % 256).astype(np.uint8)[:, :, None], 3, axis=2)
        packets += enc.encode(settings.rgb_frame(rgb))
    packets += enc.flush()
    dts = [p.dts for p in packets if p.dts is not None]
    return max(0, -min(dts)) if dts else 0


class Piece:
    """Packets of one encoder, appended to some outputs of a ``JoinedClips``.

    Packets are in decode order with timestamps counted from the piece's first
    frame (time base ``1 / fps``); each output shifts them by the frames it
    held when the piece started. ``add`` leaves the packet's timestamps as
    they were, so the caller may add it again to a later piece.
    """

    def __init__(self, clips: JoinedClips, outputs: list[_Output]) -> None:
        self._clips, self._outputs = clips, outputs
        self.packets = 0
        self._dts_shift = 0

    def add(self, packet: Packet) -> None:
        """Mux one packet into every output of the piece.

        Raises:
            MediaError: muxing failed.
        """
        pts, dts, tb = packet.pts, packet.dts, packet.time_base
        if tb is None or tb != self._clips._tick:
            where = self._outputs[0].path if self._outputs else Path("?")
            raise MediaError(where, f"packet time base {tb}, expected 1/{self._clips.settings.fps}")
        first = self.packets == 0
        if first:
            d = 0 if dts is None else max(0, -int(dts))
            if d > self._clips.delay:
                where = self._outputs[0].path if self._outputs else Path("?")
                raise MediaError(
                    where, f"piece decode delay {d} exceeds the clip's {self._clips.delay} frames"
                )
            self._dts_shift = d - self._clips.delay  # dts' = dts - (D - d)
        stripped: Packet | None = None
        for out in self._outputs:
            p = packet
            if first and out.packets > 0:  # a later encoder's start: drop its SEI
                if stripped is None:
                    stripped = self._clips._strip_sei(packet, out)
                p = stripped
            shift = out.frames * self._clips._step  # in ticks of the output's time base
            try:
                p.stream = out.stream
                p.pts = None if pts is None else pts * self._clips._step + shift
                p.dts = None if dts is None else (dts + self._dts_shift) * self._clips._step + shift
                p.time_base = out.time_base
                out.container.mux(p)
            except av.error.FFmpegError as exc:
                raise MediaError(out.path, f"muxing failed: {describe_av_error(exc)}") from exc
            out.packets += 1
        packet.pts, packet.dts, packet.time_base = pts, dts, tb
        self.packets += 1

    def close(self, frames: int) -> None:
        """End the piece: it held ``frames`` frames (sets each output's next offset).

        Raises:
            MediaError: the packet count differs from ``frames``.
        """
        for out in self._outputs:
            out.busy = False
        if self.packets != frames:
            where = self._outputs[0].path if self._outputs else Path("?")
            raise MediaError(where, f"piece holds {self.packets} packets, expected {frames}")
        for out in self._outputs:
            out.frames += frames


__all__ = ["JoinedClips", "Piece"]
