"""The resumable per-image generation pipeline (MMR paper, section 4).

For each image: read it, ask the model for the information (stage 1), ask
for paired questions from that information (stage 2), parse, filter. Each
image's outcome, with both prompts and both raw replies, is written to
``OUT/items/<key>.json`` as soon as it is known (atomic rename), so a crash or
Ctrl-C loses only images in flight. On a rerun an image whose item file has a
final status (anything but a transient model error) and the same image hash,
prompt version and pairs-per-image is skipped; transient failures
(``api_error``, ``timeout``, ``rate_limited``, ``model_error``) are retried.
After the loop the outputs are rebuilt from all item files:
``llava.json``, ``mmr.json``, ``prompts.json``, ``summary.json``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.mmrdata import prompts
from mmrobust.mmrdata.filters import check_pair, find_keyword
from mmrobust.mmrdata.parse import GeneratedPair, GenerationParseError, parse_generation
from mmrobust.mmrdata.writers import concat, llava_records, mmr_records, write_json
from mmrobust.models.base import Model, Request, Response
from mmrobust.status import Status


class ItemStatus(str, Enum):
    """Outcome of one image."""

    OK = "ok"
    """At least one turn survived filtering."""
    MEDIA_ERROR = "media_error"
    """The image could not be read."""
    API_ERROR = "api_error"
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    MODEL_ERROR = "model_error"
    REJECTED = "rejected"
    """The server refused the request for good (a 4xx such as context too long); final."""
    EXTRACTION_REFUSED = "extraction_refused"
    """Stage 1 was empty or a refusal (a filter keyword matched)."""
    PARSE_FAIL = "parse_fail"
    """Stage 2 held no JSON list of pairs."""
    ALL_FILTERED = "all_filtered"
    """Stage 2 parsed, but every turn was malformed or uncertain."""

    @property
    def transient(self) -> bool:
        """True for model/server failures that a rerun retries."""
        return self in (
            ItemStatus.API_ERROR,
            ItemStatus.TIMEOUT,
            ItemStatus.RATE_LIMITED,
            ItemStatus.MODEL_ERROR,
        )


_MODEL_STATUS = {
    Status.API_ERROR: ItemStatus.API_ERROR,
    Status.TIMEOUT: ItemStatus.TIMEOUT,
    Status.RATE_LIMITED: ItemStatus.RATE_LIMITED,
    Status.MEDIA_ERROR: ItemStatus.MEDIA_ERROR,
    Status.REJECTED: ItemStatus.REJECTED,
}


@dataclass
class ItemResult:
    """Everything known about one image (the content of ``items/<key>.json``).

    Attributes:
        key: file-name-safe unique key (``<stem>-<sha8 of the path>``).
        image: the image path as given.
        image_sha256: hash of the image bytes (``None`` when unreadable).
        status: the outcome.
        error: one-line reason when ``status`` is not ``ok``.
        prompt_version: :data:`~mmrobust.mmrdata.prompts.PROMPT_VERSION`.
        n_pairs: pairs asked for.
        extraction_prompt, extraction_reply: stage 1 text in and out.
        generation_prompt, generation_reply: stage 2 text in and out.
        pairs: the schema-valid pairs (JSON form), in reply order; pair indices in
            ``dropped``, ``kept`` and output ids count these (a schema-invalid pair is
            reported with its index in the reply and ``"pair": None``).
        dropped: ``{"pair": i, "side": "positive"|"negative"|"pair", "reasons": [...]}`` each.
        kept: per pair, ``{"positive": bool, "negative": bool}``.
    """

    key: str
    image: str
    image_sha256: str | None = None
    status: ItemStatus = ItemStatus.OK
    error: str | None = None
    prompt_version: str = prompts.PROMPT_VERSION
    n_pairs: int = 0
    extraction_prompt: str = ""
    extraction_reply: str = ""
    generation_prompt: str = ""
    generation_reply: str = ""
    pairs: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    kept: list[dict[str, bool]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        data = dict(self.__dict__)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        """Inverse of :meth:`to_json`."""
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        values["status"] = ItemStatus(values.get("status", "ok"))
        return cls(**values)

    def parsed_pairs(self) -> list[GeneratedPair]:
        """``pairs`` as typed values."""
        return [GeneratedPair.model_validate(p) for p in self.pairs]


@dataclass(frozen=True)
class MMRDataSummary:
    """What a run produced (also written to ``summary.json``).

    Attributes:
        out_dir: the output folder.
        images: images given.
        statuses: image count per :class:`ItemStatus` value.
        pairs_parsed: schema-valid pairs over all images.
        pairs_kept: pairs with both sides kept (the ``mmr.json`` pairs).
        turns_kept: LLaVA samples written.
        dropped: count per drop reason (``"uncertain: 'sorry'"``, ``"malformed: ..."``).
        skipped: images reused from a previous run.
    """

    out_dir: Path
    images: int
    statuses: dict[str, int]
    pairs_parsed: int
    pairs_kept: int
    turns_kept: int
    dropped: dict[str, int]
    skipped: int

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        data = dict(self.__dict__)
        data["out_dir"] = str(self.out_dir)
        return data


ImageMap = Callable[[Sequence[Path], int], Iterable[tuple[Path, ItemResult]]]
"""``(images, n_pairs) -> (image, result)`` pairs as each image finishes (``distributed/mmrdata.py``)."""


def item_key(image: Path) -> str:
    """``<safe stem>-<first 8 hex of sha256(resolved path)>``: unique per path, readable."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", image.stem)[:60] or "image"
    digest = hashlib.sha256(str(image.resolve()).encode()).hexdigest()[:8]
    return f"{stem}-{digest}"


def read_image(path: Path) -> np.ndarray:
    """The image as ``(H, W, 3) uint8 RGB``.

    Raises:
        OSError: missing or undecodable file.
    """
    import cv2

    if not path.is_file():
        raise OSError(f"image not found: {path}")
    data = np.fromfile(str(path), dtype=np.uint8)
    pixels = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if pixels is None:
        raise OSError(f"not a readable image: {path}")
    return np.ascontiguousarray(cv2.cvtColor(pixels, cv2.COLOR_BGR2RGB))


IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff")
"""File suffixes :func:`collect_images` picks up inside a folder."""


def collect_images(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given, folders expanded to their images (recursively, sorted), duplicates removed.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            out += sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
            )
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"no such image or folder: {path}")
    return list(dict.fromkeys(out))


def normalise_category(category: str) -> str:
    """Map a generated category to an MMR ``id`` prefix; unknown ones become ``other/other``."""
    value = category.strip().lower()
    if value in prompts.CATEGORY_KEYS:
        return value
    for key in prompts.CATEGORY_KEYS:
        if key.split("/")[1] == value:
            return key
    return "other/other"


def _ask(model: Model, key: str, prompt: str, image: Path, pixels: np.ndarray) -> Response:
    request = Request(
        sample_id=key, prompt=prompt, question=prompt, options={}, frames=(pixels,), image=image
    )
    try:
        return model.generate([request])[0]
    except Exception as exc:  # a backend bug must not end the run
        return Response("", Status.MODEL_ERROR, error=f"{type(exc).__name__}: {exc}")


def _model_failure(result: ItemResult, response: Response, stage: str) -> bool:
    if response.status in (Status.OK, Status.EMPTY_REPLY):  # empty: judged by the stage itself
        return False
    result.status = _MODEL_STATUS.get(response.status, ItemStatus.MODEL_ERROR)
    result.error = f"{stage}: {response.error or response.status.value}"
    return True


def process_image(model: Model, image: Path, *, n_pairs: int) -> ItemResult:
    """Run the three stages on one image; never raises for a per-image failure."""
    result = ItemResult(key=item_key(image), image=str(image), n_pairs=n_pairs)
    try:
        result.image_sha256 = hashlib.sha256(image.read_bytes()).hexdigest()
        pixels = read_image(image)
    except OSError as exc:
        result.status, result.error = ItemStatus.MEDIA_ERROR, str(exc).splitlines()[0]
        return result

    result.extraction_prompt = prompts.EXTRACTION_PROMPT
    response = _ask(model, result.key, result.extraction_prompt, image, pixels)
    result.extraction_reply = response.text
    if _model_failure(result, response, "extraction"):
        return result
    information = response.text.strip()
    refusal = find_keyword(information[:300]) if information else "empty reply"
    if refusal is not None:
        result.status = ItemStatus.EXTRACTION_REFUSED
        result.error = f"extraction: refused or empty ({refusal!r})"
        return result

    result.generation_prompt = prompts.generation_prompt(information, n_pairs)
    response = _ask(model, result.key, result.generation_prompt, image, pixels)
    result.generation_reply = response.text
    if _model_failure(result, response, "generation"):
        return result
    try:
        pairs, problems = parse_generation(response.text)
    except GenerationParseError as exc:
        result.status, result.error = ItemStatus.PARSE_FAIL, f"generation: {exc}"
        return result
    result.dropped = [{"pair": None, "side": "pair", "reasons": [p]} for p in problems]
    for index, pair in enumerate(pairs):
        pair = pair.model_copy(update={"category": normalise_category(pair.category)})
        reasons = check_pair(pair)
        result.pairs.append(pair.model_dump(mode="json"))
        result.kept.append({side: not reasons[side] for side in ("positive", "negative")})
        for side, why in reasons.items():
            if why:
                result.dropped.append({"pair": index, "side": side, "reasons": why})
    if not any(k["positive"] or k["negative"] for k in result.kept):
        result.status = ItemStatus.ALL_FILTERED
        result.error = "every generated turn was malformed or uncertain"
    return result


def _load_item(path: Path) -> ItemResult | None:
    import json

    try:
        return ItemResult.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # a corrupt item file is redone


def _reusable(previous: ItemResult | None, image: Path, n_pairs: int) -> bool:
    if previous is None or previous.status.transient:
        return False
    if previous.prompt_version != prompts.PROMPT_VERSION or previous.n_pairs != n_pairs:
        return False
    try:
        digest = hashlib.sha256(image.read_bytes()).hexdigest()
    except OSError:
        return previous.status is ItemStatus.MEDIA_ERROR
    return digest == previous.image_sha256


def run_mmr_data(
    images: Sequence[str | Path],
    model: Model,
    out_dir: str | Path,
    *,
    n_pairs: int = 4,
    resume: bool = True,
    on_item: Callable[[ItemResult, bool], None] | None = None,
    map_images: ImageMap | None = None,
) -> MMRDataSummary:
    """Generate paired positive/negative samples for ``images`` with ``model``.

    Args:
        images: image files (any format OpenCV reads). Duplicates are processed once.
        model: any backend from :func:`mmrobust.models.load_model`; it gets each image as
            ``Request.frames=(pixels,)`` (``(H, W, 3) uint8 RGB``) and ``Request.image``.
        out_dir: output folder (created).
        n_pairs: pairs asked for per image.
        resume: reuse finished item files of an earlier run (see module docstring).
        on_item: called with ``(result, reused)`` after each image (progress display).
        map_images: processes the images still to do elsewhere (``--executor ray``:
            model replicas), yielding ``(image, result)`` as each finishes; the item
            files are still written here, and the outputs keep the order of ``images``.

    Returns:
        the run summary (also ``OUT/summary.json``).

    Raises:
        ValueError: ``n_pairs < 1``.
    """
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    out = Path(out_dir)
    items_dir = out / "items"
    items_dir.mkdir(parents=True, exist_ok=True)
    paths = list(dict.fromkeys(Path(p) for p in images))

    def reusable(image: Path) -> ItemResult | None:
        item_path = items_dir / f"{item_key(image)}.json"
        previous = _load_item(item_path) if resume and item_path.exists() else None
        return previous if previous is not None and _reusable(previous, image, n_pairs) else None

    def work(image: Path) -> tuple[ItemResult, bool]:
        previous = reusable(image)
        if previous is not None:
            return previous, True
        result = process_image(model, image, n_pairs=n_pairs)
        write_json(items_dir / f"{item_key(image)}.json", result.to_json())
        return result, False

    results: list[ItemResult] = []
    skipped = 0
    if map_images is not None:
        done: dict[Path, ItemResult] = {}
        todo = []
        for image in paths:
            previous = reusable(image)
            if previous is None:
                todo.append(image)
                continue
            done[image] = previous
            if on_item is not None:
                on_item(previous, True)
        skipped = len(done)
        for image, result in map_images(todo, n_pairs):
            write_json(items_dir / f"{item_key(image)}.json", result.to_json())
            done[image] = result
            if on_item is not None:
                on_item(result, False)
        return _write_outputs(out, [done[p] for p in paths], model, skipped)
    with ThreadPoolExecutor(max_workers=max(1, model.max_concurrency)) as pool:
        for result, reused in pool.map(work, paths):
            results.append(result)
            skipped += reused
            if on_item is not None:
                on_item(result, reused)
    return _write_outputs(out, results, model, skipped)


def _write_outputs(
    out: Path, results: Sequence[ItemResult], model: Model, skipped: int
) -> MMRDataSummary:
    llava: list[list[dict[str, Any]]] = []
    mmr: list[list[dict[str, Any]]] = []
    dropped: Counter[str] = Counter()
    pairs_parsed = pairs_kept = 0
    for result in results:
        for drop in result.dropped:
            for reason in drop["reasons"]:
                dropped[_reason_key(reason)] += 1
        if result.status is not ItemStatus.OK:
            continue
        pairs = result.parsed_pairs()
        pairs_parsed += len(pairs)
        pairs_kept += sum(k["positive"] and k["negative"] for k in result.kept)
        llava.append(llava_records(result.key, result.image, pairs, result.kept))
        mmr.append(mmr_records(result.key, result.image, pairs, result.kept))
    llava_all, mmr_all = concat(llava), concat(mmr)
    write_json(out / "llava.json", llava_all)
    write_json(out / "mmr.json", mmr_all)
    write_json(
        out / "prompts.json",
        {
            "version": prompts.PROMPT_VERSION,
            "extraction": prompts.EXTRACTION_PROMPT,
            "generation_template": prompts.GENERATION_TEMPLATE,
        },
    )
    summary = MMRDataSummary(
        out_dir=out,
        images=len(results),
        statuses=dict(Counter(r.status.value for r in results)),
        pairs_parsed=pairs_parsed,
        pairs_kept=pairs_kept,
        turns_kept=len(llava_all),
        dropped=dict(sorted(dropped.items())),
        skipped=skipped,
    )
    write_json(
        out / "summary.json",
        {
            **summary.to_json(),
            "model": model.fingerprint(),
            "prompt_version": prompts.PROMPT_VERSION,
        },
    )
    return summary


def _reason_key(reason: str) -> str:
    """``"malformed: pair 3: positive.options: ..."`` -> ``"malformed"``; keeps the keyword of
    ``"uncertain: 'sorry'"`` and the kind of other malformed reasons."""
    kind, _, rest = reason.partition(":")
    if kind == "malformed" and rest.strip().startswith("pair "):
        return "malformed: schema"
    return reason


__all__ = [
    "IMAGE_SUFFIXES",
    "ImageMap",
    "ItemResult",
    "ItemStatus",
    "MMRDataSummary",
    "collect_images",
    "item_key",
    "normalise_category",
    "process_image",
    "read_image",
    "run_mmr_data",
]
