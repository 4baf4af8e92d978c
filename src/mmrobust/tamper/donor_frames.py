"""A substitution donor's frames ``[start, stop)``, decoded from the IDR keyframe before ``start``.

``iter_frames`` decodes every frame from the first (frame-exact, no seeking).
A donor's ``F`` frames often lie far into it, so for a small source most of
its build went to decoding donor frames it never used (176x144 carphone with
the 640x272 bikes as donor: about 40% of the build's CPU). An H.264/HEVC
IDR picture resets the decoder completely (no later picture references one
before it), so decoding from the last IDR at or before ``start`` gives the
same pixels as decoding from frame 0.

The fast path is taken only when it provably picks the same frames as the
sequential decode, and otherwise falls back to ``iter_frames``:

* an mp4/mov (its index gives every packet's timestamps without decoding) of
  H.264 or HEVC with length-prefixed NAL units (``avcC``/``hvcC``);
* every packet has a pts and a dts, dts strictly increasing, none is marked
  discard (an edit list), and pts are distinct, so frame ``i`` in
  presentation order is the packet with the ``i``-th smallest pts;
* the keyframe is an IDR (NAL types 5; 19, 20) with every packet before it
  in decode order presented before it and every packet after it presented
  after it (no leading pictures);
* after the seek, the first packet is that keyframe and the decoded frames'
  pts are exactly the expected presentation sequence from it.

Any decode error on the fast path also falls back, so errors are reported
as before (``iter_frames``' ``MediaError``).
"""

from __future__ import annotations

from pathlib import Path

import av.error
import numpy as np

from mmrobust.media import iter_frames
from mmrobust.media._open import is_mp4_family, open_video
from mmrobust.media.decode import _to_array

_IDR_TYPES = {"h264": frozenset({5}), "hevc": frozenset({19, 20})}
"""NAL unit types of an IDR picture: H.264 (Rec. ITU-T H.264 table 7-1), HEVC (H.265 table 7-1)."""


def _nal_length_size(codec: str, extradata: bytes) -> int | None:
    """Bytes of each NAL unit's length prefix (``avcC``/``hvcC``); ``None``: Annex B or unknown."""
    if codec == "h264" and len(extradata) >= 7 and extradata[0] == 1:
        return (extradata[4] & 3) + 1
    if codec == "hevc" and len(extradata) >= 23 and extradata[0] == 1:
        return (extradata[21] & 3) + 1
    return None


def _is_idr(data: bytes, length_size: int, codec: str) -> bool:
    """Whether a length-prefixed access unit holds an IDR slice."""
    idr = _IDR_TYPES[codec]
    i = 0
    while i + length_size < len(data):
        n = int.from_bytes(data[i : i + length_size], "big")
        head = data[i + length_size]
        nal_type = head & 0x1F if codec == "h264" else (head >> 1) & 0x3F
        if nal_type in idr:
            return True
        i += length_size + n
    return False


def donor_frames(path: Path, start: int, stop: int, size: tuple[int, int]) -> list[np.ndarray]:
    """Frames ``[start, stop)`` of ``path`` as ``(H, W, 3) uint8 RGB`` resized to ``size`` ``(W, H)``.

    The same arrays as ``list(iter_frames(path, start=start, stop=stop, size=size))``,
    decoded from the last IDR keyframe at or before ``start`` where that is provably
    the same (module docstring), else by ``iter_frames``.

    Raises:
        MediaError: as ``iter_frames`` (fewer frames than ``stop`` come back, not an error).
    """
    try:
        fast = _from_keyframe(path, start, stop, size)
    except av.error.FFmpegError:
        fast = None
    if fast is not None:
        return fast
    return list(iter_frames(path, start=start, stop=stop, size=size))


def _from_keyframe(
    path: Path, start: int, stop: int, size: tuple[int, int]
) -> list[np.ndarray] | None:
    """The fast path of ``donor_frames``; ``None`` where it does not apply or does not verify."""
    if start <= 0 or stop <= start:
        return None
    with open_video(path) as (container, stream):
        codec = stream.codec_context.name
        if not is_mp4_family(container.format.name) or codec not in _IDR_TYPES:
            return None
        length_size = _nal_length_size(codec, bytes(stream.codec_context.extradata or b""))
        if length_size is None:
            return None
        packets: list[tuple[int, int, bool]] = []  # (dts, pts, keyframe is an IDR), decode order
        for pkt in container.demux(stream):
            if pkt.size == 0:
                if pkt.dts is None:  # the end-of-stream packet
                    continue
                return None  # an empty packet with a timestamp: let iter_frames handle it
            if pkt.pts is None or pkt.dts is None or pkt.is_discard:
                return None
            if packets and pkt.dts <= packets[-1][0]:
                return None
            idr = pkt.is_keyframe and _is_idr(bytes(pkt), length_size, codec)
            packets.append((int(pkt.dts), int(pkt.pts), idr))
        shown = sorted(p[1] for p in packets)
        if stop > len(shown) or len(set(shown)) != len(shown):
            return None
        target = shown[start]
        # an IDR with no leading or trailing pictures: every packet before it in decode
        # order is shown before it, every packet after it is shown after it
        before_max = [-(2**63)] * len(packets)
        for j in range(1, len(packets)):
            before_max[j] = max(before_max[j - 1], packets[j - 1][1])
        after_min = [2**63] * len(packets)
        for j in range(len(packets) - 2, -1, -1):
            after_min[j] = min(after_min[j + 1], packets[j + 1][1])
        key = 0  # decode index of the IDR to start from (0: no gain, decode from the start)
        for j, (_, pts, idr) in enumerate(packets):
            if idr and pts <= target and before_max[j] < pts < after_min[j]:
                key = j
        if key == 0:
            return None
        key_dts, key_pts = packets[key][0], packets[key][1]
        first = shown.index(key_pts)
        expect = shown[first:stop]  # the pts of every frame decoded from the IDR on
        skip = start - first
        # mov seeks by presentation time (a dts lands on the keyframe before)
        container.seek(key_pts, backward=True, any_frame=False, stream=stream)
        out: list[np.ndarray] = []
        got = 0
        seen_first = False
        for pkt in container.demux(stream):
            if pkt.size > 0 and not seen_first:
                if pkt.dts != key_dts:
                    return None  # the seek landed elsewhere
                seen_first = True
            elif pkt.size == 0 and pkt.dts is not None:
                return None
            for frame in pkt.decode():
                if frame.pts != expect[got]:
                    return None
                if got >= skip:
                    out.append(_to_array(frame, size, False, True))
                got += 1
                if got == len(expect):
                    return out
        return None


__all__ = ["donor_frames"]
