"""What ``mmrobust perturb`` will build: one :class:`MediaJob` per perturbed file, one
question record per (sample, effect, severity), seeds and names that depend only on content.

Pure: no file is written here (:mod:`mmrobust.perturb.build` writes). A media file's name and
seed come from the sha256 of its source, the effect, the severity, the overlay text and the
build seed, so two questions about one photo share one perturbed file, and the same inputs
give the same names and pixels on every machine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.perturb.image import IMAGE_EFFECTS, SEVERITIES

CLEAN = "clean"
"""The ``effect`` of a clean sample (re-encoded like the perturbed ones: codec control)."""
FAMILY = "consistency"
"""The family that scores a perturbed set (``Sample.benchmark``)."""
QUESTIONS_NAME = "questions.jsonl"
MANIFEST_NAME = "perturb.jsonl"
SUMMARY_NAME = "perturb.json"
ERRORS_NAME = "errors.jsonl"


class PerturbError(ValueError):
    """Bad ``perturb`` input (unknown effect, bad severity, unusable output folder): one line."""


@dataclass(frozen=True)
class MediaJob:
    """One output file to build.

    Attributes:
        key: hex digest naming it (content of the inputs, effect, severity, text, seed).
        kind: ``"image"`` or ``"video"``.
        source: the clean media file.
        source_sha256: its sha256.
        effect: an effect name or :data:`CLEAN`.
        severity: 1-5 (0 for clean).
        seed: the generator seed of this file.
        text: the overlay text (``typographic``), else ``""``.
        avoid: ``(x0, y0, x1, y1)`` to leave uncovered, or ``None``.
        output: path relative to the output folder.
    """

    key: str
    kind: str
    source: Path
    source_sha256: str
    effect: str
    severity: int
    seed: int
    text: str = ""
    avoid: tuple[int, int, int, int] | None = None
    output: str = ""
    options: dict[str, Any] = field(default_factory=dict)


def parse_severities(text: str | Sequence[int]) -> tuple[int, ...]:
    """``"1,3,5"`` -> ``(1, 3, 5)``.

    Raises:
        PerturbError: a value that is not 1-5, or none.
    """
    items = text.split(",") if isinstance(text, str) else list(text)
    out: list[int] = []
    for item in items:
        try:
            value = int(str(item).strip())
        except ValueError:
            raise PerturbError(f"--severity takes 1-5 (comma list), not {item!r}") from None
        if value not in SEVERITIES:
            raise PerturbError(f"--severity takes 1-5 (comma list), not {value}")
        if value not in out:
            out.append(value)
    if not out:
        raise PerturbError("--severity needs at least one level (1-5)")
    return tuple(out)


def parse_effects(text: str | Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    """``"jpeg,gaussian_blur"`` or ``"all"`` -> effect names, each one of ``known``.

    Raises:
        PerturbError: an unknown name (with the close names).
    """
    import difflib

    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    if items == ["all"]:
        return tuple(known)
    for name in items:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise PerturbError(f"unknown effect {name!r}{hint}; effects: {', '.join(known)}")
    if not items:
        raise PerturbError(f"--effects needs at least one of: {', '.join(known)}")
    return tuple(dict.fromkeys(items))


def digest(*parts: Any) -> str:
    """sha256 hex of the JSON of ``parts`` (keys sorted)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def media_seed(seed: int, *parts: Any) -> int:
    """A 63-bit generator seed from the build seed and what the file depends on."""
    return int(digest(seed, *parts)[:15], 16)


def overlay_option(sample_id: str, options: dict[str, str], answer: str, seed: int) -> str | None:
    """The wrong option whose text the overlay writes (seeded per sample), or ``None``."""
    wrong = [k for k in options if k != answer and options[k].strip()]
    if not wrong:
        return None
    return wrong[media_seed(seed, "overlay-option", sample_id) % len(wrong)]


def media_job(
    kind: str,
    source: Path,
    source_sha256: str,
    effect: str,
    severity: int,
    seed: int,
    *,
    text: str = "",
    avoid: tuple[int, int, int, int] | None = None,
    options: dict[str, Any] | None = None,
) -> MediaJob:
    """The job that builds ``effect`` at ``severity`` of ``source`` (name and seed from content)."""
    opts = dict(options or {})
    key = digest(source_sha256, effect, severity, text, avoid, seed, opts)
    suffix = ".png" if kind == "image" else ".mp4"
    folder = CLEAN if effect == CLEAN else f"{effect}/s{severity}"
    return MediaJob(
        key=key,
        kind=kind,
        source=source,
        source_sha256=source_sha256,
        effect=effect,
        severity=severity,
        seed=media_seed(seed, source_sha256, effect, severity, text, avoid, opts),
        text=text,
        avoid=avoid,
        output=f"media/{folder}/{key[:16]}{suffix}",
        options=opts,
    )


def answer_box(meta: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """``meta["answer_box"]`` as ``(x0, y0, x1, y1)`` integers, or ``None`` when absent.

    Raises:
        PerturbError: present but not four numbers.
    """
    box = meta.get("answer_box")
    if box is None:
        return None
    try:
        x0, y0, x1, y1 = (round(float(v)) for v in box)
    except (TypeError, ValueError):
        raise PerturbError(f"answer_box must be [x0, y0, x1, y1], not {box!r}") from None
    return (x0, y0, x1, y1)


def image_effect_names() -> tuple[str, ...]:
    """The image effects, in table order."""
    return tuple(IMAGE_EFFECTS)


__all__ = [
    "CLEAN",
    "ERRORS_NAME",
    "FAMILY",
    "MANIFEST_NAME",
    "QUESTIONS_NAME",
    "SUMMARY_NAME",
    "MediaJob",
    "PerturbError",
    "answer_box",
    "digest",
    "image_effect_names",
    "media_job",
    "media_seed",
    "overlay_option",
    "parse_effects",
    "parse_severities",
]
