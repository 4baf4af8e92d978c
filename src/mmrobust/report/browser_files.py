"""The sample browser's files beside ``index.html``: chunks of samples and a filter index.

The page stays small at any number of rows: it carries only a short manifest (the runs,
the types, the counts; ``<script type="application/json" id="browser-data">``). The
samples are in ``samples/`` beside it, as JavaScript files the page adds as
``<script src>`` elements when it needs them (a browser refuses ``fetch`` of a
``file://`` URL but runs a script from one, so the report still opens offline from disk
with no server). Each file calls ``mmrobustChunk(kind, number, data)``:

* ``samples/chunk-NNNNNN.js`` (kind ``"chunk"``): :data:`CHUNK_SAMPLES` samples in browser
  order, ``{"prompts": [...], "samples": [...]}`` (:mod:`mmrobust.report.browser`'s sample
  layout; an answer's prompt is an index into the chunk's ``prompts``). A page of cards
  with no filter needs one or two of them.
* ``samples/index-NNNN.js`` (kind ``"index"``): the filter columns of :data:`BLOCK_SAMPLES`
  samples: ``{"t": [type index, ...], "c": "..."}``; ``c`` holds one character per
  (sample, run), ``"0"`` for no answer, else ``"1"`` + 2 x status group (0 ok,
  1 parse_fail, 2 an error) + correct (0 or 1). A filter loads every index block (about
  2 bytes per sample and run), selects the matching samples, then loads the chunks of the
  page it shows.
* ``samples/ids-NNNN.js`` (kind ``"ids"``): the sample ids of the same block, loaded only
  for the id search.

Writing streams: one chunk and one index block are in memory at a time, so writing the
browser of a million rows takes the memory of a few thousand. The files are written into
a temporary folder that replaces ``samples/`` by a rename only when complete (a reader
never sees half of them, and a link planted at ``samples`` is replaced, never followed);
``index.html`` is written after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.report.browser import (
    MAX_THUMBS,
    THUMB_SECONDS,
    draw_thumbs,
    index_prompts,
    iter_samples,
    raw_limit_for,
    run_entries,
    script_json,
)
from mmrobust.report.view import RunView

SAMPLES_DIR = "samples"
"""The folder of the browser's files, beside ``index.html``."""

CHUNK_SAMPLES = 500
"""Samples per chunk file."""

BLOCK_SAMPLES = 50_000
"""Samples per index (and ids) file; a multiple of :data:`CHUNK_SAMPLES`."""

CALLBACK = "mmrobustChunk"
"""The function each file calls (the page defines it)."""


def chunk_name(kind: str, k: int) -> str:
    """``chunk-000007.js`` / ``index-0007.js`` / ``ids-0007.js``."""
    return f"{kind}-{k:06d}.js" if kind == "chunk" else f"{kind}-{k:04d}.js"


def status_group(status: str) -> int:
    """0 ``ok``, 1 ``parse_fail``, 2 any error (the page's Status filter)."""
    return 0 if status == "ok" else 1 if status == "parse_fail" else 2


@dataclass
class BrowserFiles:
    """What :func:`write_browser` wrote: the page's manifest and its counts.

    Attributes:
        manifest: the JSON the page carries (``runs``, ``types``, ``n``, chunk sizes ...).
        n_samples: samples in the browser.
        n_thumbs: samples with a thumbnail strip.
        has_video: some sample is a clip (the page shows the timeline legend).
    """

    manifest: dict[str, Any] = field(default_factory=dict)
    n_samples: int = 0
    n_thumbs: int = 0
    has_video: bool = False


class _Writer:
    """Writes chunks and index blocks into ``folder`` as samples come (see module docstring)."""

    def __init__(self, folder: Path, n_runs: int) -> None:
        self.folder, self.n_runs = folder, n_runs
        self.types: dict[str, int] = {}
        self.n = 0
        self.chunk: list[dict[str, Any]] = []
        self.prompts: dict[str, int] = {}
        self.block_t: list[int] = []
        self.block_c: list[str] = []
        self.block_ids: list[str] = []
        self.n_thumbs = 0
        self.has_video = False

    def _write(self, kind: str, k: int, data: Mapping[str, Any] | Sequence[Any]) -> None:
        text = f"{CALLBACK}({script_json(kind)},{k},{script_json(data)});\n"
        write_text(self.folder / chunk_name(kind, k), text)

    def add(self, sample: dict[str, Any]) -> None:
        codes = ["0"] * self.n_runs
        for a in sample["r"]:
            codes[a[0]] = str(1 + 2 * status_group(a[3]) + int(a[4]))
        self.block_t.append(self.types.setdefault(sample["t"], len(self.types)))
        self.block_c.append("".join(codes))
        self.block_ids.append(sample["id"])
        self.n_thumbs += bool(sample["th"])
        self.has_video = self.has_video or bool(sample["v"])
        self.chunk.append(index_prompts(sample, self.prompts))
        self.n += 1
        if len(self.chunk) == CHUNK_SAMPLES:
            self._flush_chunk()
        if len(self.block_t) == BLOCK_SAMPLES:
            self._flush_block()

    def _flush_chunk(self) -> None:
        if self.chunk:
            k = (self.n - 1) // CHUNK_SAMPLES
            self._write("chunk", k, {"prompts": list(self.prompts), "samples": self.chunk})
        self.chunk, self.prompts = [], {}

    def _flush_block(self) -> None:
        if self.block_t:
            k = (self.n - 1) // BLOCK_SAMPLES
            self._write("index", k, {"t": self.block_t, "c": "".join(self.block_c)})
            self._write("ids", k, self.block_ids)
        self.block_t, self.block_c, self.block_ids = [], [], []

    def close(self) -> None:
        self._flush_chunk()
        self._flush_block()


def _replace_dir(new: Path, target: Path) -> None:
    """Put the folder ``new`` at ``target`` by renames: whatever is at ``target`` (an older
    folder, a file, a link) is moved aside first, then removed (a link itself, never what it
    points at)."""
    old: Path | None = None
    if target.is_symlink() or target.exists():
        old = Path(
            tempfile.mkdtemp(prefix=f".{target.name}.old.", suffix=".tmp", dir=target.parent)
        )
        os.rename(target, old / "x")
    os.rename(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_browser(
    runs: Sequence[RunView],
    out_dir: Path,
    *,
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
) -> BrowserFiles:
    """Draw the thumbnails and write ``out_dir/samples/`` for ``runs``, streaming their rows.

    Args:
        runs: the runs (labels as the page shows them).
        out_dir: the report folder (exists).
        max_thumbs: at most this many samples get a thumbnail.
        thumb_seconds: time budget for drawing thumbnails (``None``: none).

    Returns:
        The manifest for the page and the counts (:class:`BrowserFiles`).
    """
    strips = draw_thumbs(runs, out_dir, max_thumbs=max_thumbs, thumb_seconds=thumb_seconds)
    raw_limit = raw_limit_for(sum(len(r.rows) for r in runs))
    tmp = Path(tempfile.mkdtemp(prefix=f".{SAMPLES_DIR}.", suffix=".tmp", dir=out_dir))
    try:
        w = _Writer(tmp, len(runs))
        for sample in iter_samples(runs, strips, raw_limit):
            w.add(sample)
        w.close()
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700: the folder is read like the page
        _replace_dir(tmp, out_dir / SAMPLES_DIR)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
    types = sorted(w.types, key=w.types.__getitem__)
    manifest = {
        "runs": run_entries(runs),
        "types": types,
        "n": w.n,
        "dir": SAMPLES_DIR,
        "chunk": CHUNK_SAMPLES,
        "block": BLOCK_SAMPLES,
        "max_thumbs": max_thumbs,
        "thumb_seconds": thumb_seconds,
        "raw_limit": raw_limit,
    }
    return BrowserFiles(manifest, w.n, w.n_thumbs, w.has_video)


def _calls(path: Path) -> tuple[str, int, Any]:
    """``(kind, number, data)`` of one file (it is one ``mmrobustChunk(...)`` call)."""

    text = path.read_text(encoding="utf-8").strip()
    if not (text.startswith(CALLBACK + "(") and text.endswith(");")):
        raise ValueError(f"{path} is not a sample browser file")
    kind, k, data = json.loads("[" + text[len(CALLBACK) + 1 : -2] + "]")
    return str(kind), int(k), data


def read_browser(out_dir: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The browser's files of a report folder as one document, like
    :func:`mmrobust.report.browser.build_payload`'s (``runs``, ``prompts``, ``samples``),
    plus ``index`` (each sample's ``(type, codes)``) and ``ids``: for tests and scripts.

    Args:
        out_dir: the report folder.
        manifest: the page's manifest (``index.html``'s ``browser-data``).
    """
    folder = Path(out_dir) / str(manifest["dir"])
    prompts: dict[str, int] = {}
    samples: list[dict[str, Any]] = []
    index: list[tuple[str, str]] = []
    ids: list[str] = []
    n, chunk, block = int(manifest["n"]), int(manifest["chunk"]), int(manifest["block"])
    for k in range((n + chunk - 1) // chunk):
        _, _, data = _calls(folder / chunk_name("chunk", k))
        for s in data["samples"]:
            for a in s["r"]:
                a[10] = data["prompts"][a[10]]
            samples.append(index_prompts(s, prompts))
    r = len(manifest["runs"])
    for k in range((n + block - 1) // block):
        _, _, data = _calls(folder / chunk_name("index", k))
        codes = data["c"]
        index += [
            (manifest["types"][t], codes[i * r : (i + 1) * r]) for i, t in enumerate(data["t"])
        ]
        ids += _calls(folder / chunk_name("ids", k))[2]
    return {
        "runs": manifest["runs"],
        "prompts": list(prompts),
        "samples": samples,
        "index": index,
        "ids": ids,
    }


__all__ = [
    "BLOCK_SAMPLES",
    "CALLBACK",
    "CHUNK_SAMPLES",
    "SAMPLES_DIR",
    "BrowserFiles",
    "chunk_name",
    "read_browser",
    "status_group",
    "write_browser",
]
