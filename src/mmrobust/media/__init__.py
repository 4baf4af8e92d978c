"""Video I/O: probe, streaming decode and encode (PyAV), and the bundled sample clips.

Frames are ``(H, W, 3) uint8 RGB`` numpy arrays throughout. See
``docs/CONTRACTS.md`` ("media") for the interface other packages rely on.
"""

from __future__ import annotations

from mmrobust.media.decode import iter_frames, read_frames
from mmrobust.media.errors import MediaError
from mmrobust.media.probe import VideoInfo, probe
from mmrobust.media.samples import sample_clips
from mmrobust.media.writer import OpenCVWriter, VideoWriter

__all__ = [
    "MediaError",
    "OpenCVWriter",
    "VideoInfo",
    "VideoWriter",
    "iter_frames",
    "probe",
    "read_frames",
    "sample_clips",
]
