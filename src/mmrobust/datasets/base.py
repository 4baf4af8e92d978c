"""``Dataset``, the loader registry (``FORMATS``) and ``load_dataset`` with format detection.

A loader is ``load(path, *, images=None, text_only=False, **options) -> Dataset``.
Loaders never raise for one bad record: a malformed line becomes an entry
of ``Dataset.defects`` (skipped), a missing or ambiguous media file becomes
a ``Sample`` with ``error`` set (recorded as ``data_error`` by the runner).
They raise only when the dataset as a whole cannot be read.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.datasets.checks import missing_local_path, special_kind
from mmrobust.registry import Registry
from mmrobust.schema import TAMPER_QUESTION, YES_NO, Benchmark, Sample

RELEASED_ROW_KEYS = frozenset({"video", "candidates", "answer"})
"""Keys every released annotation row has (``json/<task>.json``); used to recognise the files."""


HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
"""A hub dataset id (``owner/name``): read by the MMR loader when no such local path exists."""


def _is_video_name(path: Path) -> bool:
    """Whether the file name says video (``video/*`` MIME type: .mp4, .avi, .mov, .webm ...)."""
    kind = mimetypes.guess_type(path.name)[0] or ""
    return kind.startswith("video/")


class DatasetError(ValueError):
    """The dataset as a whole cannot be loaded (unreadable file, unknown layout)."""


@dataclass
class Dataset:
    """A loaded dataset.

    Attributes:
        name: short name (file or folder stem).
        benchmark: metric family of its samples ("tamper", "mmr", "generic").
        samples: the samples, in file order; ids are unique. A list, or for a JSONL file a
            :class:`mmrobust.datasets.stream.SampleRows` (read from the file on each pass:
            iterate it rather than index it).
        defects: one line per data problem found while loading (skipped
            records, duplicate ids, missing media); shown in ``metrics.json``.
        data_hash: sha256 of the annotation bytes (the run fingerprint's data part).
        source: the path that was loaded.
        info: what the loader wants recorded in ``run.json`` (hub revision,
            how media paths were resolved); JSON-serialisable.
    """

    name: str
    benchmark: Benchmark
    samples: Sequence[Sample]
    defects: list[str] = field(default_factory=list)
    data_hash: str = ""
    source: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.samples)


Loader = Callable[..., Dataset]
FORMATS: Registry[Loader] = Registry(
    "dataset format", plugins=True, fill="mmrobust.families:register_all_loaders"
)
FORMATS.register("manifest", "mmrobust.datasets.manifest:load_manifest")
FORMATS.register("mvtamperbench", "mmrobust.datasets.mvtamperbench:load_mvtamperbench")
FORMATS.register("vlmevalkit-tsv", "mmrobust.datasets.mvtamperbench:load_vlmevalkit_tsv")
FORMATS.register("jsonl", "mmrobust.datasets.jsonl:load_jsonl")
FORMATS.register("mmr", "mmrobust.datasets.mmr:load_mmr")
FORMATS.register("hub", "mmrobust.datasets.hub:load_hub")
FORMATS.register("perturb", "mmrobust.datasets.perturbed:load_perturbed")

HUB_PREFIX = "hf:"
"""``--data hf:<owner>/<name>[@revision]``: a dataset on the Hugging Face hub."""


def skip_reason(exc: BaseException) -> str:
    """One line saying why a record was skipped; pydantic errors name the field.

    ``ValidationError`` -> ``"answer: Field required; options: ..."``; anything
    else -> ``"<ExceptionType>: <first line of its message>"``.
    """
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        parts = [
            f"{'.'.join(str(x) for x in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()
        ]
        return "; ".join(parts)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def sha256_files(paths: Iterable[Path]) -> str:
    """sha256 over the bytes of several files, in the order given."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def finalize_samples(samples: list[Sample], defects: list[str]) -> list[Sample]:
    """The last step of every loader: drop samples whose id repeats an earlier one, then list
    each remaining sample's loader error (missing media, ...); both are appended to ``defects``."""
    seen: set[str] = set()
    out = []
    for s in samples:
        if s.id in seen:
            defects.append(f"duplicate sample id {s.id!r}: later record dropped")
            continue
        seen.add(s.id)
        out.append(s)
    defects += [f"{s.id}: {s.error}" for s in out if s.error]
    return out


MAX_JSON_DEPTH = 64
"""Deepest nesting (objects/arrays) a dataset record may have; deeper ones are defects.

Python's ``json`` parser raises ``RecursionError`` past about 1000 levels, and
pydantic refuses to serialise a sample whose ``meta`` nests past a few hundred,
so a hostile record would end a load, or a run at the moment its row is stored.
No real annotation nests more than a handful of levels."""


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that raises only ``ValueError`` (also for nesting Python cannot parse).

    Raises:
        ValueError: invalid JSON, or nested too deeply to parse (never ``RecursionError``).
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def check_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> Any:
    """Return ``value`` if its objects/arrays nest at most ``limit`` levels.

    Iterative (no recursion, whatever the depth).

    Raises:
        ValueError: nested deeper than ``limit``.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                raise ValueError(f"nested deeper than {limit} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return value


def _first_json_value(path: Path) -> Any:
    if special_kind(path):
        return None  # never open a pipe or a device (it may block or never end)
    with path.open("rb") as fh:
        head = fh.read(1 << 16).decode("utf-8-sig", errors="replace").lstrip()
    if head.startswith("["):
        try:
            data = loads_json(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            return None
        return data[0] if isinstance(data, list) and data else None
    line = head.splitlines()[0] if head else ""
    try:
        return loads_json(line)
    except ValueError:
        return None


def is_released_rows(first: Any) -> bool:
    """Whether a JSON value's first record looks like a released MVTamperBench annotation row."""
    return isinstance(first, dict) and set(first) >= RELEASED_ROW_KEYS and "options" not in first


def check_data_path(path: Path) -> None:
    """Refuse a ``--data`` path that is neither a regular file nor a folder, before opening it.

    Raises:
        DatasetError: a named pipe (FIFO), a device (``/dev/zero``) or a socket: reading it
            would block for ever or never end.
    """
    kind = special_kind(path)
    if kind:
        raise DatasetError(
            f"{path} is {kind}, not a dataset file or folder (mmrobust reads a file or a "
            "folder; copy the data to a file first)"
        )


def _tamper_set_of(folder: Path) -> Path | None:
    """The tamper set (folder with ``manifest.jsonl``) whose ``videos/`` holds ``folder``."""
    for up in (folder.parent, folder.parent.parent):
        if up != folder and (up / "manifest.jsonl").is_file():
            return up
    return None


def detect_format(path: str | Path) -> str:
    """Pick a loader from the path (override with ``--format``).

    Rules: ``"mmr-demo"`` or a hub id ``owner/name`` that is not a local path -> mmr;
    ``hf:<owner>/<name>`` -> hub (downloaded, then its own format); a folder with
    ``manifest.jsonl`` -> manifest; a folder ``mmrobust perturb`` wrote -> perturb; a folder with ``json/*.json``, or a ``json/`` folder
    of released task files -> mvtamperbench; a folder holding an MMR annotation file ->
    mmr; ``*.tsv`` -> vlmevalkit-tsv; a JSON array whose records have ``question_type``
    -> mmr; a released task file (records with ``video``, ``candidates``, ``answer``) ->
    mvtamperbench; a JSONL whose records have ``video_sha256`` and ``tamper_type`` ->
    manifest; other ``.json``/``.jsonl`` -> jsonl. A video file, or a folder of videos with
    no dataset file, is refused with the command that makes a dataset of it
    (``mmrobust tamper``).

    Raises:
        FileNotFoundError: the path does not exist.
        DatasetError: no rule matched.
    """
    if str(path) == "mmr-demo":
        return "mmr"
    if str(path).startswith(HUB_PREFIX):
        return "hub"
    p = Path(path).expanduser()
    if not p.exists():
        annotation = p.suffix.lower() in (".json", ".jsonl", ".tsv", ".csv")
        local = missing_local_path(str(path))
        if local:  # a mistyped local path (its folder exists), not a hub id
            raise FileNotFoundError(f"dataset not found: {local}")
        if HUB_ID.fullmatch(str(path)) and not annotation and not _is_video_name(p):
            return "mmr"  # the MMR loader downloads a hub dataset id (owner/name)
        raise FileNotFoundError(f"dataset not found: {p}")
    check_data_path(p)
    if p.is_dir():
        if (p / "manifest.jsonl").is_file():
            return "manifest"
        if (p / "perturb.json").is_file() and (p / "questions.jsonl").is_file():
            return "perturb"
        if (p / "json").is_dir() and any((p / "json").glob("*.json")):
            return "mvtamperbench"
        for j in sorted(p.glob("*.json")):
            first = _first_json_value(j)
            if isinstance(first, dict) and "question_type" in first:
                return "mmr"
            if p.name == "json" and is_released_rows(first):
                return "mvtamperbench"
        owner = _tamper_set_of(p)
        if owner is not None:
            raise DatasetError(
                f"{p} holds the videos of a tamper set; the manifest is in {owner}: "
                f"pass --data {owner}"
            )
        if _is_video_name(p):
            raise DatasetError(
                f"{p} is a folder named like a video file, not a video or a dataset; "
                f"pass --format ({', '.join(FORMATS.names())}) if it holds a dataset"
            )
        if any(_is_video_name(f) for f in p.iterdir() if f.is_file()):
            raise DatasetError(
                f"folder {p} holds videos but no dataset file; make a dataset from them with "
                f"`mmrobust tamper {p} --out my-set`, then `mmrobust eval --data my-set` (or "
                f"pass --format ({', '.join(FORMATS.names())}) for a dataset laid out otherwise)"
            )
        raise DatasetError(
            f"cannot tell the format of folder {p}; pass --format ({', '.join(FORMATS.names())})"
        )
    suffix = p.suffix.lower()
    if suffix == ".tsv":
        return "vlmevalkit-tsv"
    if suffix in (".json", ".jsonl"):
        first = _first_json_value(p)
        if isinstance(first, dict) and "question_type" in first:
            return "mmr"
        if suffix == ".json" and is_released_rows(first):
            return "mvtamperbench"
        if isinstance(first, dict) and {"video_sha256", "tamper_type"} <= set(first):
            return "manifest"
        return "jsonl"
    if suffix[1:] and suffix[1:] in FORMATS:  # a file named for its format (a family's: .pope)
        return suffix[1:]
    if _is_video_name(p):
        raise DatasetError(
            f"{p} is a video, not a dataset; make a dataset from videos with "
            f"`mmrobust tamper {p} --out my-set`, then `mmrobust eval --data my-set`"
        )
    raise DatasetError(
        f"cannot tell the format of {p}; pass --format ({', '.join(FORMATS.names())})"
    )


def load_dataset(path: str | Path, format: str | None = None, **options: Any) -> Dataset:
    """Load a dataset, detecting its format unless given.

    Args:
        path: a file or folder (or ``"mmr-demo"``).
        format: one of ``FORMATS`` ("manifest", "mvtamperbench", "vlmevalkit-tsv",
            "jsonl", "mmr", "hub"), or ``None`` to detect.
        **options: ``images`` (media folder), ``text_only`` (drop media), loader-specific.

    Raises:
        FileNotFoundError: the path does not exist.
        UnknownNameError: unknown format (with "did you mean").
        DatasetError: the dataset cannot be read as that format.
    """
    if not str(path).startswith(HUB_PREFIX) and str(path) != "mmr-demo":
        check_data_path(Path(path).expanduser())
    fmt = format or detect_format(path)
    loader = FORMATS.get(fmt)
    return loader(path, **options)


__all__ = [
    "FORMATS",
    "HUB_PREFIX",
    "MAX_JSON_DEPTH",
    "RELEASED_ROW_KEYS",
    "TAMPER_QUESTION",
    "YES_NO",
    "Dataset",
    "DatasetError",
    "Loader",
    "check_data_path",
    "check_depth",
    "detect_format",
    "finalize_samples",
    "is_released_rows",
    "load_dataset",
    "loads_json",
    "sha256_files",
    "skip_reason",
]
