"""The tamper manifest's one entry model: written by ``mmrobust tamper``, read by every loader.

``DIR/manifest.jsonl`` holds one :class:`ManifestEntry` per output clip
(originals included); ``DIR/errors.jsonl`` one :class:`BuildError` per failed
source or variant (docs/CONTRACTS.md, "tamper manifest"). The builder
(``mmrobust.tamper``) writes entries with every field set; the loader
(``mmrobust.datasets.manifest``) validates each line with this same model, so
a field means the same on both sides. Only ``id`` and ``tamper_type`` are
required to read a line: the rest have defaults, so hand-written or older
manifests load (a field a line does not give stays unset, see
``model_fields_set``, and never reaches a sample's ``meta``).

Windows are frames ``[start_frame, end_frame)`` and seconds, in the source
timeline (``window_source``) and in the output clip's own timeline
(``window_output``, which becomes ``Sample.window``); both are ``null`` for originals.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mmrobust.schema.sample import Window

MANIFEST_NAME = "manifest.jsonl"
"""File name of the manifest inside a build folder."""

ERRORS_NAME = "errors.jsonl"
"""File name of the builder's failures inside a build folder."""


class Donor(BaseModel):
    """Where substituted frames came from: ``offset`` is the donor's first frame index."""

    model_config = ConfigDict(frozen=True)

    source: str
    sha256: str
    offset: int


class ManifestEntry(BaseModel):
    """One output clip.

    Attributes:
        id: ``<source uid>__<variant>``, unique in the build.
        source: absolute path of the source video; ``source_sha256`` its hash.
        video: output path relative to the build folder (posix); ``video_sha256`` its hash.
            Empty when a hand-written line lacks it (the loader then records a data error).
        tamper_type: ``"original"`` or the effect name (``"rotation"``, not the
            released token ``"rotate"``; see ``official_token``).
        params: the effect's validated parameters (``{}`` for originals).
        position, duration_s: the window request (``"middle"``, 1.0).
        window_source, window_output: tamper window in the source and output
            timelines (``null`` for originals). ``window_output`` spans the frames
            the effect wrote: empty ``[s, s)`` for dropping, ``2F`` frames for repetition.
        fps: output frame rate as a fraction string (``"30000/1001"``, ``"25"``).
        source_fps: the source's frame rate, same format.
        frames_source, frames_output: frame counts of source and output clip.
        width, height: encoded frame size of the output; ``padded`` when one
            pixel was added to reach even sizes (content is top-left
            ``source_width x source_height``).
        encoder: writer settings (``{"writer": "pyav", "codec": "libx264", "crf": 18, ...}``,
            ``{"writer": "opencv", "fourcc": "mp4v", ...}`` or ``{"writer": "copy"}``;
            a hand-written manifest may give a plain string).
        seed: the build seed; donor: substitution's donor, else ``null``.
        task: task name given to the build, else ``null``.
        official_token: released-dataset ``tamper_type`` token (``"rotate"``), or ``null``.
        style: the output layout (``"native"`` or ``"mvtamperbench"``).
        key: resume key: hash of everything that determines this output.
        mmrobust_version: version that wrote the clip.
    """

    model_config = ConfigDict(extra="allow")

    id: str
    source: str = ""
    source_sha256: str = ""
    video: str = ""
    video_sha256: str = ""
    tamper_type: str
    params: dict[str, Any] = Field(default_factory=dict)
    position: str | float | None = None
    duration_s: float | None = None
    window_source: Window | None = None
    window_output: Window | None = None
    fps: str = ""
    source_fps: str = ""
    frames_source: int = 0
    frames_output: int = 0
    width: int = 0
    height: int = 0
    source_width: int = 0
    source_height: int = 0
    padded: bool = False
    encoder: dict[str, Any] | str = Field(default_factory=dict)
    seed: int = 0
    donor: Donor | None = None
    task: str | None = None
    official_token: str | None = None
    style: str = ""
    key: str = ""
    mmrobust_version: str = ""


SAMPLE_META_FIELDS: tuple[str, ...] = (
    "source", "source_sha256", "video_sha256", "params", "position", "duration_s", "fps",
    "frames_source", "frames_output", "width", "height", "padded", "encoder", "seed", "donor",
    "window_source", "mmrobust_version",
)  # fmt: skip
"""Entry fields a loaded tamper ``Sample`` keeps in its ``meta`` (those the line gives)."""


class BuildError(BaseModel):
    """One line of ``errors.jsonl``: a source (or one variant of it) that failed."""

    source: str
    reason: str
    variant: str | None = None


__all__ = [
    "ERRORS_NAME",
    "MANIFEST_NAME",
    "SAMPLE_META_FIELDS",
    "BuildError",
    "Donor",
    "ManifestEntry",
]
