"""What a tamper build makes: ``BuildConfig`` and its defaults (MVTamperBench sections 3.2-3.3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mmrobust.media.writer import DEFAULT_CRF, ENCODER_THREADS
from mmrobust.schema import TAMPER_ORIGINAL
from mmrobust.schema.window import Position
from mmrobust.tamper.effects import PAPER_EFFECTS, Effect, make_effect
from mmrobust.tamper.layout import Layout

Style = Literal["mmrobust", "released"]
MIN_SIDE = 16
"""Smallest accepted frame side in pixels: below it effects are meaningless (a 1x1 frame rotated is itself)."""
TAMPER_CODEC = "mpeg4"
"""Default encoder of tamper builds: MPEG-4 Part 2, the codec of the released
MVTamperBench clips (OpenCV ``mp4v``), here at the exact fps with a fixed
quantiser (``TAMPER_QSCALE``) and every output re-encoded (codec control).
On the sample clips (``benchmarks/tamper_throughput.py``, docs/tamper.md) it
gives 1-3 dB higher PSNR than the released generator's ``mp4v`` with files no
larger, and a build about 3x faster than the released generator's; x264
(``codec="libx264"``, crf 18, ``veryfast``) gives about 2 dB more and
similar sizes but costs 2-4x more per frame."""
TAMPER_QSCALE = 3
"""Default fixed quantiser for ``mpeg4``/``mpeg2video``: the largest at least as
good (PSNR) as OpenCV's ``mp4v`` on every sample clip (q4 fell short on bigbuckbunny)."""
QSCALE_CODECS = frozenset({"mpeg4", "mpeg2video", "mpeg1video"})
"""Encoders without a crf, rate-controlled by a fixed quantiser."""
TAMPER_PRESET = "veryfast"
"""Default x264 preset (when ``codec="libx264"``). At crf 18 on the sample clips
1.2-1.5 dB lower PSNR than ``fast`` (35.7-41.8 dB), files no larger, encoding about
1.6-2x faster. ``ultrafast`` is about 2x faster again with 2-3.5x larger files."""
TAMPER_THREADS = ENCODER_THREADS
"""Encoder threads of every PyAV encode of a build, fixed so that a build's bytes do not
depend on the machine's (or Ray node's) core count (see ``media.encoder.ENCODER_THREADS``)."""


@dataclass(frozen=True)
class BuildConfig:
    """Everything that determines the outputs of a build.

    Attributes:
        effects: effect instances, names unique (default: the paper's five).
        duration: window length in seconds (paper: 1.0).
        position: ``start``/``middle``/``end`` or a fraction in [0, 1] (paper: middle).
        seed: seeds every random choice (donor, offset, noise, shuffle order).
        official_fps: window length ``int(fps) * duration`` as the released
            generator (implied by ``style="released"``).
        codec_control: re-encode originals with the same encoder and fps as the
            tampered clips (default) so container/codec/fps cannot give the label away.
        style: ``mmrobust`` (PyAV, exact fps) or ``released`` (OpenCV ``mp4v`` at
            ``int(fps)``, originals copied as-is -- reproduces the released dataset's leak).
        codec, crf, preset: PyAV encoder settings (``mmrobust`` style; default
            ``mpeg4``, see ``TAMPER_CODEC``; crf and preset apply to x264/x265/vpx).
        qscale: fixed quantiser 1-31 for codecs without a crf (``mpeg4``; FFmpeg
            ``-qscale:v``); ``None`` (default): ``TAMPER_QSCALE`` for those codecs,
            unused for the others.
        threads: encoder threads (slices per frame), at least 1; default
            ``TAMPER_THREADS``. Part of the resume key and the manifest's ``encoder``:
            another count gives other bytes, the same count the same bytes on any machine.
        segments: encode the frames all variants share once and mux their packets
            into every output (``mmrobust`` style; default; ``tamper/segments.py``). ``False``: one full encode
            per output (about 5x slower; same keyframe set, forced).
        layout: file naming; ``mvtamperbench`` also writes ``json/<task>.json``.
        task: task name recorded in the manifest (and the json file name).
        donors: explicit substitution donor pool; empty = the other sources of the build.
        min_side: smallest accepted frame side in pixels.
    """

    effects: tuple[Effect, ...] = field(
        default_factory=lambda: tuple(make_effect(n) for n in PAPER_EFFECTS)
    )
    duration: float = 1.0
    position: Position = "middle"
    seed: int = 0
    official_fps: bool = False
    codec_control: bool = True
    style: Style = "mmrobust"
    codec: str = TAMPER_CODEC
    crf: int = DEFAULT_CRF
    preset: str = TAMPER_PRESET
    qscale: int | None = None
    threads: int = TAMPER_THREADS
    segments: bool = True
    layout: Layout = "native"
    task: str | None = None
    donors: tuple[Path, ...] = ()
    min_side: int = MIN_SIDE

    def __post_init__(self) -> None:
        names = [e.name for e in self.effects]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"effects must be unique; repeated: {', '.join(dupes)}")
        if TAMPER_ORIGINAL in names:
            raise ValueError("'original' is not an effect")
        if self.qscale is not None and not 1 <= self.qscale <= 31:
            raise ValueError(f"qscale must be in 1-31, got {self.qscale}")
        if self.threads < 1:
            raise ValueError(
                f"threads must be at least 1 (a fixed count keeps builds reproducible), "
                f"got {self.threads}"
            )
        if self.qscale is None and self.codec in QSCALE_CODECS:
            object.__setattr__(self, "qscale", TAMPER_QSCALE)

    @property
    def truncate_fps(self) -> bool:
        """Whether the window uses the released ``int(fps)`` truncation."""
        return self.official_fps or self.style == "released"

    @property
    def copy_originals(self) -> bool:
        """Whether originals are copied byte for byte instead of re-encoded."""
        return self.style == "released" or not self.codec_control


__all__ = [
    "MIN_SIDE",
    "QSCALE_CODECS",
    "TAMPER_CODEC",
    "TAMPER_PRESET",
    "TAMPER_QSCALE",
    "TAMPER_THREADS",
    "BuildConfig",
    "Style",
]
