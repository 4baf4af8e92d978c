"""``mmrobust perturb``: write a perturbed copy of a question set, each question linked to its
clean sample, for the ``consistency`` family to score in pairs.

Output folder ``OUT``:

* ``questions.jsonl``: the clean questions (``effect`` ``clean``, media re-encoded as the
  perturbed ones are) and one question per (sample, effect, severity), same question and
  options, ``benchmark`` ``consistency``, ``meta.clean_id`` naming the clean one;
* ``media/<effect>/s<severity>/<key>.png`` (``.mp4`` for clips), ``media/clean/``;
* ``perturb.jsonl``: the manifest, one line per media file (effect, parameters, seed, the
  region, angle or text placed, the frames touched, sha256 of input and output);
* ``perturb.json``: what was asked and counted; ``errors.jsonl`` when a source failed.

Same on-disk rules as ``tamper``: every file is written whole (temporary file + rename, never
through a link), names and seeds depend on content, a re-run skips files whose sha256 the
manifest records (resume), and two builds of the same inputs are byte-identical.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.atomicfile import atomic_write
from mmrobust.perturb.image import IMAGE_EFFECTS, EffectContext, apply_image_effect
from mmrobust.perturb.plan import (
    CLEAN,
    ERRORS_NAME,
    FAMILY,
    MANIFEST_NAME,
    QUESTIONS_NAME,
    SUMMARY_NAME,
    MediaJob,
    PerturbError,
    answer_box,
    media_job,
    overlay_option,
    parse_effects,
    parse_severities,
)
from mmrobust.perturb.video import (
    EMPTY_WHEN_WHOLE,
    SPANS,
    VIDEO_EFFECTS,
    build_video,
    decode_clip,
)
from mmrobust.tamper.manifest import sha256_file


@dataclass(frozen=True)
class PerturbResult:
    """What one ``perturb`` call did.

    Attributes:
        out: the output folder.
        questions: question records written (clean and perturbed).
        built: media files made now; resumed: files kept from an earlier build;
        failed: media files that could not be made (``errors.jsonl``);
        skipped: samples without media (text-only questions), left out.
    """

    out: Path
    questions: int
    built: int
    resumed: int
    failed: int
    skipped: int


def _png(pixels: np.ndarray) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def build_image(job: MediaJob, target: Path) -> dict[str, Any]:
    """Read ``job.source`` as eval reads it, apply the effect, write a PNG at ``target``.

    Returns:
        the manifest details (``parameter``, ``value``, ``region`` ...; ``{}`` for clean).

    Raises:
        MediaError: the source cannot be read. OSError: the write failed.
    """
    from mmrobust.media.image import read_image

    pixels = read_image(job.source)
    details: dict[str, Any] = {}
    if job.effect != CLEAN:
        ctx = EffectContext(rng=np.random.default_rng(job.seed), text=job.text, avoid=job.avoid)
        pixels, details = apply_image_effect(job.effect, pixels, job.severity, ctx)
    details.update(width=int(pixels.shape[1]), height=int(pixels.shape[0]))
    with atomic_write(target, binary=True) as f:
        f.write(_png(pixels))
    return details


def _safe_folder(path: Path) -> None:
    """Make ``path`` (and parents) as folders; refuse a link anywhere under the output."""
    if path.is_symlink():
        raise PerturbError(f"{path} is a link; perturb does not write through links")
    path.mkdir(parents=True, exist_ok=True)


def _check_out(out: Path, data_hash: str) -> dict[str, Any]:
    """The earlier ``perturb.json`` of ``out`` (``{}`` when new).

    Raises:
        PerturbError: ``out`` is a link, a file, a non-empty folder of something else, or
            a perturbed set of another dataset.
    """
    if out.is_symlink():
        raise PerturbError(f"--out {out} is a link; choose a plain folder")
    if out.exists() and not out.is_dir():
        raise PerturbError(f"--out {out} is a file; choose a folder")
    summary = out / SUMMARY_NAME
    if summary.is_file():
        earlier = json.loads(summary.read_text(encoding="utf-8"))
        if earlier.get("data_hash") != data_hash:
            raise PerturbError(
                f"--out {out} holds a perturbed set of another dataset; choose another folder"
            )
        return dict(earlier)
    if out.is_dir() and any(out.iterdir()):
        raise PerturbError(f"--out {out} is a non-empty folder that perturb did not write")
    return {}


PROGRESS_NAME = ".perturb-progress.jsonl"
"""One manifest line per file as it is built; read by the next run when a build was cut short
(the manifest itself is written whole at the end), removed when the build ends."""


def _earlier_manifest(out: Path) -> dict[str, dict[str, Any]]:
    """Manifest lines of an earlier build: its manifest, then any progress log it left."""
    rows: dict[str, dict[str, Any]] = {}
    for name in (MANIFEST_NAME, PROGRESS_NAME):
        path = out / name
        if not path.is_file() or path.is_symlink():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:  # the last line of a log cut short
                continue
            if isinstance(row, dict) and "key" in row and row.get("sha256"):
                rows[row["key"]] = row
    return rows


def _plan(
    samples: Sequence[Any],
    effects: Sequence[str],
    severities: Sequence[int],
    seed: int,
    span: str = "window",
) -> tuple[list[MediaJob], list[tuple[Any, MediaJob, str | None]], int]:
    """Jobs (unique) and (sample, job, overlay letter) per question; samples skipped."""
    jobs: dict[str, MediaJob] = {}
    questions: list[tuple[Any, MediaJob, str | None]] = []
    digests: dict[Path, str] = {}
    skipped = 0
    for s in samples:
        media = s.image if s.image is not None else s.video
        if media is None or s.error:
            skipped += 1
            continue
        kind = "image" if s.image is not None else "video"
        source = Path(media).resolve()
        if source not in digests:
            try:
                digests[source] = sha256_file(source)
            except OSError:
                skipped += 1
                continue
        sha = digests[source]
        table = IMAGE_EFFECTS if kind == "image" else VIDEO_EFFECTS
        names = [e for e in effects if e in table]
        plan = [(CLEAN, 0)] + [(e, v) for e in names for v in severities]
        for effect, severity in plan:
            text, letter = "", None
            if effect == "typographic":
                letter = overlay_option(s.id, dict(s.options), s.answer, seed)
                if letter is None:
                    continue
                text = s.options[letter]
            avoid = answer_box(dict(s.meta)) if effect in ("typographic", "box_mask") else None
            whole = kind == "video" and span == "whole" and effect not in (CLEAN, "frame_rate")
            options = {"span": "whole"} if whole else None  # window: the names of before
            job = media_job(
                kind, source, sha, effect, severity, seed, text=text, avoid=avoid, options=options
            )
            jobs.setdefault(job.key, job)
            questions.append((s, jobs[job.key], letter))
    return list(jobs.values()), questions, skipped


def _question(sample: Any, job: MediaJob, letter: str | None, manifest: dict[str, Any]) -> dict:
    clean = job.effect == CLEAN
    meta = {
        **{k: v for k, v in sample.meta.items() if k not in ("clean_id", "effect", "severity")},
        "clean_id": sample.id,
        "effect": job.effect,
        "severity": job.severity,
        "media_key": job.key,
        "source_benchmark": sample.benchmark,
    }
    if sample.polarity:
        meta["source_polarity"] = sample.polarity
    if letter is not None:
        meta["overlay_option"] = letter
    if not clean:
        meta["params"] = {k: v for k, v in manifest.get("details", {}).items()}
    record: dict[str, Any] = {
        "id": sample.id if clean else f"{sample.id}~{job.effect}@{job.severity}",
        "benchmark": FAMILY,
        job.kind: job.output,
        "question": sample.question,
        "options": dict(sample.options),
        "answer": sample.answer,
        "group": sample.group or sample.id,
        "meta": meta,
    }
    for key in ("prompt", "category", "task"):
        if getattr(sample, key):
            record[key] = getattr(sample, key)
    if manifest.get("error"):
        record["error"] = manifest["error"]
    return record


def _run_job(out: Path, job: MediaJob, earlier: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Build one file (or keep it when the manifest vouches for it); its manifest line."""
    from mmrobust.media.errors import MediaError

    target = out / job.output
    row: dict[str, Any] = {
        "key": job.key,
        "media": job.output,
        "kind": job.kind,
        "effect": job.effect,
        "severity": job.severity,
        "seed": job.seed,
        "source": str(job.source),
        "source_sha256": job.source_sha256,
    }
    old = earlier.get(job.key)
    kept = old is not None and old.get("sha256") and target.is_file() and not target.is_symlink()
    if old is not None and kept and sha256_file(target) == old["sha256"]:
        return {**old, "resumed": True}
    try:
        _safe_folder(target.parent)
        details = build_image(job, target) if job.kind == "image" else build_video(job, target)
    except (MediaError, OSError, ValueError) as exc:
        return {**row, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    return {**row, "details": details, "sha256": sha256_file(target)}


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with atomic_write(path) as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True, ensure_ascii=False, default=str) + "\n")


def perturb(
    data: str | Path,
    effects: str | Sequence[str],
    out: str | Path,
    *,
    severities: str | Sequence[int] = (1, 3, 5),
    seed: int = 0,
    jobs: int = 1,
    span: str = "window",
    format: str | None = None,
    images: str | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PerturbResult:
    """Build the perturbed set of ``data`` under ``out`` (see the module docstring).

    Args:
        data: any dataset ``eval`` reads (``mmr-demo``, a JSONL with images or videos, an MMR
            file, a tamper set).
        effects: comma list or names (image and video effects; ``all``).
        out: output folder (new, or an earlier build of the same data: resumed).
        severities: levels 1-5. seed: build seed. jobs: files built at once.
        span: where a video effect applies: ``"window"`` (centred, sized by the severity) or
            ``"whole"`` (every frame); images ignore it.
        format, images: as ``eval --format / --images``. limit: the first N samples only.
        progress: ``(done, total)`` after each file.

    Raises:
        PerturbError: bad effects, severities or output folder (nothing is written).
        FileNotFoundError, DatasetError: the dataset cannot be read.
    """
    from mmrobust.datasets.base import load_dataset

    known = tuple(dict.fromkeys((*IMAGE_EFFECTS, *VIDEO_EFFECTS)))
    names = parse_effects(effects, known)
    levels = parse_severities(severities)
    if jobs < 1:
        raise PerturbError(f"--jobs must be at least 1, not {jobs}")
    if span not in SPANS:
        raise PerturbError(f"--span takes {' or '.join(SPANS)}, not {span!r}")
    if span == "whole":
        empty = [e for e in names if e in EMPTY_WHEN_WHOLE]
        if empty and names != known:
            raise PerturbError(
                f"{', '.join(empty)} over the whole clip leaves no frame; use --span window"
            )
        names = tuple(e for e in names if e not in EMPTY_WHEN_WHOLE)
    dataset = load_dataset(data, format, images=images)
    samples = dataset.samples[:limit] if limit else dataset.samples
    out = Path(out)
    _check_out(out, dataset.data_hash)
    media_jobs, questions, skipped = _plan(samples, names, levels, seed, span)
    if not questions:
        raise PerturbError(f"{data}: no sample has an image or a video to perturb")
    _safe_folder(out)
    if not (out / SUMMARY_NAME).is_file():  # marks the folder as ours before any media file
        with atomic_write(out / SUMMARY_NAME) as f:
            f.write(json.dumps({"data_hash": dataset.data_hash, "complete": False}) + "\n")
    earlier = _earlier_manifest(out)
    done = 0

    log_path = out / PROGRESS_NAME
    if log_path.is_symlink():
        raise PerturbError(f"{log_path} is a link; perturb does not write through links")
    log = log_path.open("a", encoding="utf-8")
    lock = threading.Lock()

    def one(job: MediaJob) -> dict[str, Any]:
        row = _run_job(out, job, earlier)
        if row.get("sha256") and not row.get("resumed"):
            with lock:
                log.write(json.dumps(row, sort_keys=True, default=str) + "\n")
                log.flush()
        return row

    rows: list[dict[str, Any]] = []
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for row in pool.map(one, media_jobs):
                rows.append(row)
                done += 1
                if progress:
                    progress(done, len(media_jobs))
    finally:
        decode_clip.cache_clear()
        log.close()
    by_key = {r["key"]: r for r in rows}
    records = [_question(s, job, letter, by_key[job.key]) for s, job, letter in questions]
    manifest = [{k: v for k, v in r.items() if k != "resumed"} for r in rows]
    errors = [r for r in rows if r.get("error")]
    _write_jsonl(out / MANIFEST_NAME, manifest)
    _write_jsonl(out / QUESTIONS_NAME, records)
    log_path.unlink(missing_ok=True)
    if errors:
        _write_jsonl(out / ERRORS_NAME, errors)
    elif (out / ERRORS_NAME).is_file():
        os.remove(out / ERRORS_NAME)
    result = PerturbResult(
        out=out,
        questions=len(records),
        built=sum(1 for r in rows if not r.get("resumed") and not r.get("error")),
        resumed=sum(1 for r in rows if r.get("resumed")),
        failed=len(errors),
        skipped=skipped,
    )
    summary = {
        "tool": "mmrobust perturb",
        "data": str(data),
        "dataset": dataset.name,
        "data_hash": dataset.data_hash,
        "effects": list(names),
        "severities": list(levels),
        "span": span,
        "seed": seed,
        "limit": limit,
        "samples": len({s.id for s, _, _ in questions}),
        "questions": result.questions,
        "media": len(rows),
        "failed": result.failed,
        "skipped_without_media": skipped,
        "complete": True,
    }
    with atomic_write(out / SUMMARY_NAME) as f:
        f.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return result


def image_effects() -> tuple[str, ...]:
    """The image effects' names (table order)."""
    from mmrobust.perturb.image import IMAGE_EFFECTS

    return tuple(IMAGE_EFFECTS)


__all__ = ["PerturbResult", "build_image", "image_effects", "perturb"]
