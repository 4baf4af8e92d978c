"""The frames a model is shown: sampled, resized and JPEG-encoded in one decoding pass.

:func:`sample_clip` decodes a clip once from its first frame (frame-exact,
no keyframe seeking), counts its frames and keeps only the frames the
policy picks, converted to RGB at the size used (an area downscale inside
FFmpeg's swscale step) and JPEG-encoded as :class:`~mmrobust.media.jpeg.FrameEncoding`
says. The frame count the policy needs is taken from the container as a
hint (or by counting packets when the container has none, as webm) and
checked against the decoded count at the end; when the two differ, the
frames are picked again from the exact count with a second pass (rare: an
mp4 whose edit list hides frames, a variable-frame-rate clip).

A clip is thus decoded once, not twice (a counting pass, then a picking
pass), and only the picked frames are converted from YUV.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av.error
import numpy as np

from mmrobust.media import limits
from mmrobust.media._open import decode_video, describe_av_error, open_video
from mmrobust.media.decode import _to_array, read_frames
from mmrobust.media.errors import MediaError
from mmrobust.media.jpeg import FrameEncoding, cap_size, decode_jpeg, encode_jpeg
from mmrobust.media.probe import count_in_new_container, normalise_rotation, stream_fps, truncation
from mmrobust.media.sampling import FramePolicy, frame_indices


@dataclass(frozen=True)
class SampledClip:
    """The frames of one clip under one policy and encoding.

    Attributes:
        jpegs: the picked frames, JPEG bytes, in ``indices`` order.
        indices: their frame indices (0-based, decode order; repeats possible).
        n_frames: frames in the clip (counted by decoding).
        fps: the clip's frame rate (frames per second).
        size: ``(W, H)`` of the encoded frames.
    """

    jpegs: tuple[bytes, ...]
    indices: tuple[int, ...]
    n_frames: int
    fps: Fraction
    size: tuple[int, int]

    @property
    def nbytes(self) -> int:
        """Bytes of JPEG data."""
        return sum(len(j) for j in self.jpegs)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The frames decoded from their JPEGs: each ``(H, W, 3) uint8 RGB``.

        Raises:
            ValueError: a JPEG does not decode (a corrupt cache entry).
        """
        return tuple(decode_jpeg(j) for j in self.jpegs)


def _target_size(
    width: int, height: int, policy: FramePolicy, encoding: FrameEncoding
) -> tuple[int, int] | None:
    """``(W, H)`` to convert to, or ``None`` for the decoded size: ``policy.size``, then the
    encoding's cap, then ``limits.MAX_FRAME_SIDE`` (17's cap on what any model is shown)."""
    w, h = policy.size if policy.size is not None else (width, height)
    w, h = cap_size(w, h, encoding.max_side)
    w, h = limits.fit_within(w, h) or (w, h)  # never more than MAX_FRAME_SIDE (3584 px)
    return None if (w, h) == (width, height) else (w, h)


def sample_clip(path: str | Path, policy: FramePolicy, encoding: FrameEncoding) -> SampledClip:
    """Decode ``path`` once; return the policy's frames, resized and JPEG-encoded.

    Args:
        path: a video file.
        policy: which frames (and optional fixed size ``policy.size``).
        encoding: JPEG quality and the cap on the longer side.

    Raises:
        MediaError: unreadable, undecodable or empty clip, no usable frame
            rate, a truncated mp4/mov, or a decode error (with the frame count).
    """
    p = Path(path)
    with open_video(p) as (container, stream):
        fps = stream_fps(p, stream)
        listed = int(stream.frames or 0)
        hint = listed
        if hint <= 0:
            try:  # counted in a container of its own: a raw stream (.h264) cannot seek back
                hint = count_in_new_container(p)
            except av.error.FFmpegError:
                hint = 0
        wanted = set(frame_indices(hint, fps, policy)) if hint > 0 else set()
        kept: dict[int, np.ndarray] = {}
        size: tuple[int, int] | None = None
        display = (0, 0)
        n = 0
        try:
            for frame in decode_video(container, stream):
                if n == 0:
                    width, height = frame.width, frame.height
                    if normalise_rotation(frame.rotation) in (90, 270):
                        width, height = height, width
                    display = (width, height)
                    size = _target_size(width, height, policy, encoding)
                if n in wanted:
                    kept[n] = _to_array(frame, size, False, True)
                n += 1
        except av.error.FFmpegError as exc:
            raise MediaError(
                p, f"decode failed after {n} frames: {describe_av_error(exc)}"
            ) from exc
        if n == 0:
            raise MediaError(p, "no decodable video frame")
        truncated = truncation(p, container.format.name, listed, n)
        if truncated:
            raise MediaError(p, truncated)
    indices = frame_indices(n, fps, policy)
    missing = sorted(set(indices) - set(kept))
    if missing:  # the hint was wrong: pick the frames the exact count asks for
        for i, frame in zip(missing, read_frames(p, missing, size=size), strict=True):
            kept[i] = frame
    out_size = size or display
    jpegs = tuple(encode_jpeg(kept[i], quality=encoding.quality) for i in indices)
    return SampledClip(
        jpegs=jpegs, indices=tuple(indices), n_frames=n, fps=fps, size=(out_size[0], out_size[1])
    )


__all__ = ["SampledClip", "sample_clip"]
