"""Training conversations: reading LLaVA-format and MMR-format files, checking, composing.

Pure Python (no torch): records become :class:`Conversation` values, bad
records become :class:`Problem` values (reported, never fatal), and
:func:`compose` builds the training set the way the MMR paper's data ablations
do (arXiv:2406.10638, section 6.2 and appendix B.2):

* ``generated``: the generated samples alone, positive and negative questions
  as separate samples, as ``mmrobust mmr-data`` writes them (Table 6,
  "MMR-data (pos. + neg.)", the paper's best composition).
* ``combination``: the sampled (extra) data plus the generated samples, each
  its own sample (Table 6 "LLaVA 24K + neg.", Table 11 "Combine Neg.",
  Table 7 "Mix 106k + MMR").
* ``concatenation``: the generated rounds of an image appended to the sampled
  sample of the same image, one multi-round conversation per image (Table 6
  "LLaVA 24K merge neg.", Table 11 "Concat. Neg."), at most ``rounds`` generated
  rounds per sample (Tables 13-14: r1, r2, r4, all). Images with generated
  rounds and no sampled sample get one sample of their generated rounds alone;
  without extra data that is Table 6's "merge neg. and pos.".

Formats read (auto-detected per file):

* LLaVA: a JSON list of ``{"id", "image" (path, list of paths, or absent for
  text-only), "conversations": [{"from": "human"|"gpt"|"system", "value": str}],
  "polarity"?}``; ``<image>`` in a human turn marks where an image goes (LLaVA
  convention; a record with one image and no marker gets it before the first
  question). ``llava.json`` of ``mmrobust mmr-data`` is this format. A record whose
  images are the frames of one clip may carry ``"video_metadata"`` (the clip's
  ``fps``, ``frames_indices``, ``total_num_frames``; :mod:`mmrobust.finetune.conversation`),
  as ``mmrobust tamper-data`` writes; a malformed one makes the record ``malformed``.
* MMR benchmark format (``mmr.json`` of ``mmrobust mmr-data``, the released
  ``MMR-benchmark.json``): each question becomes one multiple-choice round with
  the exact prompt ``mmrobust eval`` sends (question, options, MMR's
  instruction) and the option letter as the answer: the multiple-choice
  instruction format of LLaVA-1.5's mixture ("Answer with the option's letter
  from the given choices directly.").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from mmrobust.finetune.conversation import (
    IMAGE_MARK,
    Conversation,
    DataFile,
    DataReport,
    Problem,
    ProblemKind,
    Turn,
    VideoTiming,
    read_video_timing,
)

Composition = Literal["generated", "combination", "concatenation"]
Polarity = Literal["both", "positive", "negative"]
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant"}


def resolve_data_path(path: Path) -> Path:
    """A file as given, or ``llava.json`` inside an ``mmrobust mmr-data`` output folder or
    a side (``train/``, ``eval/``) of an ``mmrobust tamper-data`` output.

    Raises:
        FileNotFoundError: no such file, or a folder without ``llava.json`` (naming
            ``OUT/train`` when the folder is a ``tamper-data`` output's top).
    """
    path = Path(path).expanduser()
    if path.is_dir():
        candidate = path / "llava.json"
        if not candidate.is_file():
            if (path / "train" / "llava.json").is_file():
                raise FileNotFoundError(
                    f"no llava.json in {path}: a `tamper-data` output? train on "
                    f"{path / 'train'} (--data), its eval/llava.json for --eval-data"
                )
            raise FileNotFoundError(
                f"no llava.json in {path} (an `mmrobust mmr-data` output, or a "
                "`tamper-data` output's train/ or eval/?)"
            )
        return candidate
    if not path.is_file():
        raise FileNotFoundError(f"no such data file: {path}")
    return path


def _find_image(raw: str, roots: Sequence[Path]) -> Path | None:
    candidate = Path(raw).expanduser()
    if candidate.is_absolute():
        return candidate if candidate.is_file() else None
    for root in roots:
        hit = root / candidate
        if hit.is_file():
            return hit
    return None


def _is_mmr_format(records: Sequence[Any]) -> bool:
    first = records[0] if records else None
    return isinstance(first, dict) and {"question", "ground_truth", "question_type"} <= set(first)


def read_file(
    path: Path, source: str, *, images: Path | None = None
) -> tuple[list[Conversation], list[Problem], DataFile]:
    """Read one LLaVA-format or MMR-format JSON file.

    Args:
        path: the file (``resolve_data_path`` output).
        source: ``generated`` or ``extra`` (recorded on each conversation).
        images: folder relative image paths are looked up in first (then the
            file's folder, then the working directory).

    Returns:
        ``(conversations, problems, file_info)``.

    Raises:
        ValueError: the file is not JSON, nested too deeply to parse (never
            ``RecursionError``), or not a list of records (one line).
    """
    raw = path.read_bytes()
    try:
        records = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = (
            f"{exc.msg} at line {exc.lineno}"
            if isinstance(exc, ValueError)
            else "nested too deeply"
        )
        raise ValueError(f"{path}: not JSON ({where})") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    roots = [r for r in (images, path.parent, Path.cwd()) if r is not None]
    info = DataFile(path, hashlib.sha256(raw).hexdigest(), "llava", source, len(records))
    if _is_mmr_format(records):
        info.format = "mmr"
        conversations, problems = _read_mmr(path, source, images)
    else:
        conversations, problems = [], []
        for index, record in enumerate(records):
            conversation = _llava_conversation(record, index, path.stem, source, roots, problems)
            if conversation is not None:
                conversations.append(conversation)
    return conversations, problems, info


def _llava_conversation(
    record: Any, index: int, stem: str, source: str, roots: Sequence[Path], problems: list[Problem]
) -> Conversation | None:
    rid = f"{stem}:{record.get('id', index) if isinstance(record, dict) else index}"

    def bad(detail: str, kind: ProblemKind = "malformed") -> None:
        problems.append(Problem(kind, rid, detail))

    if not isinstance(record, dict):
        bad(f"record {index} is not an object")
        return None
    convs = record.get("conversations")
    if not isinstance(convs, list) or not convs:
        bad("no 'conversations' list")
        return None
    turns: list[Turn] = []
    for position, message in enumerate(convs):
        if not isinstance(message, dict):
            bad(f"turn {position} is not an object")
            return None
        speaker, value = message.get("from"), message.get("value")
        role = "system" if speaker == "system" else ROLES.get(str(speaker))
        if role is None or not isinstance(value, str) or not value.strip():
            bad(f"turn {position}: needs 'from' human/gpt/system and a non-empty 'value'")
            return None
        if role == "system" and position != 0:
            bad(f"turn {position}: a system turn must come first")
            return None
        turns.append(Turn(role, value.strip()))
    dialogue = [t.role for t in turns if t.role != "system"]
    expected = ["user", "assistant"] * (len(dialogue) // 2)
    if not dialogue or dialogue != expected:
        bad("turns must alternate human/gpt, starting with human and ending with gpt")
        return None
    if any(IMAGE_MARK in t.text for t in turns if t.role == "assistant"):
        bad("an answer holds an <image> mark")
        return None

    raw_images = record.get("image")
    names: list[str] = []
    if isinstance(raw_images, str):
        names = [raw_images]
    elif isinstance(raw_images, list) and all(isinstance(x, str) for x in raw_images):
        names = list(raw_images)
    elif raw_images is not None:
        bad("'image' must be a path or a list of paths")
        return None
    marks = sum(t.text.count(IMAGE_MARK) for t in turns)
    if marks == 0 and len(names) == 1:
        first = next(i for i, t in enumerate(turns) if t.role == "user")
        turns[first] = Turn("user", f"{IMAGE_MARK}\n{turns[first].text}")
        marks = 1
    if marks != len(names):
        bad(f"{marks} <image> marks for {len(names)} images")
        return None
    paths: list[Path] = []
    for name in names:
        found = _find_image(name, roots)
        if found is None:
            bad(f"image not found: {name}", "missing_image")
            return None
        paths.append(found)
    video: VideoTiming | None = None
    if record.get("video_metadata") is not None:  # frames of one clip, with their times
        timing = read_video_timing(record["video_metadata"], len(paths))
        if isinstance(timing, str):
            bad(timing)
            return None
        video = timing
    polarity = record.get("polarity")
    return Conversation(
        id=rid,
        source=source,
        images=tuple(paths),
        turns=tuple(turns),
        polarity=polarity if polarity in ("positive", "negative") else None,
        video=video,
    )


def _read_mmr(
    path: Path, source: str, images: Path | None
) -> tuple[list[Conversation], list[Problem]]:
    """MMR-format records as one multiple-choice round each (the prompt ``mmrobust eval`` sends).

    Images are looked up in ``images`` (default: the working directory), then
    the file's folder, as :func:`mmrobust.datasets.mmr.load_mmr` does.
    """
    from mmrobust.datasets.mmr import load_mmr
    from mmrobust.prompts import build_prompt

    dataset = load_mmr(path, images=images or Path.cwd())
    problems = [Problem("malformed", f"{path.stem}:{d.split(':')[0]}", d) for d in dataset.defects]
    out: list[Conversation] = []
    for sample in dataset.samples:
        rid = f"{path.stem}:{sample.id}"
        if sample.error is not None or sample.image is None:
            kind: ProblemKind = "missing_image" if "image" in (sample.error or "") else "malformed"
            if not any(p.id == rid for p in problems):
                problems.append(Problem(kind, rid, sample.error or "no image"))
            continue
        prompt = build_prompt(sample)
        out.append(
            Conversation(
                id=rid,
                source=source,
                images=(Path(sample.image),),
                turns=(
                    Turn("user", f"{IMAGE_MARK}\n{prompt.text}"),
                    Turn("assistant", prompt.answer),
                ),
                polarity=sample.polarity,
            )
        )
    return out, problems


def _image_key(conversation: Conversation) -> str | None:
    if len(conversation.images) != 1:
        return None
    return str(conversation.images[0].resolve())


def _rounds_of(conversation: Conversation, drop_marks: bool) -> list[tuple[Turn, Turn]]:
    turns = [t for t in conversation.turns if t.role != "system"]
    pairs = list(zip(turns[0::2], turns[1::2], strict=True))
    if not drop_marks:
        return pairs
    return [(Turn("user", u.text.replace(IMAGE_MARK, "").strip()), a) for u, a in pairs]


def compose(
    generated: Sequence[Conversation],
    extra: Sequence[Conversation] = (),
    *,
    composition: Composition = "generated",
    rounds: int | None = None,
    polarity: Polarity = "both",
    report: DataReport | None = None,
) -> list[Conversation]:
    """Build the training set (see the module docstring for each composition).

    Args:
        generated: conversations from the generated data (``mmr-data`` output).
        extra: sampled / general instruction data in the same format.
        composition: ``generated``, ``combination`` or ``concatenation``.
        rounds: concatenation only: at most this many generated rounds per sample
            (``None``: all).
        polarity: keep ``both`` polarities of the generated samples, or only the
            ``positive`` or ``negative`` ones (Table 6 "only pos." / "only neg.";
            samples without a polarity are kept only with ``both``).
        report: filled with the composition figures when given.

    Returns:
        The conversations, in a deterministic order (extra data first, then
        generated; concatenated samples in the order of their images' first
        appearance). The trainer shuffles with its seed.

    Raises:
        ValueError: ``rounds`` < 1, ``rounds`` without concatenation, or extra
            data with ``composition="generated"``.
    """
    if rounds is not None and rounds < 1:
        raise ValueError("--rounds must be at least 1")
    if rounds is not None and composition != "concatenation":
        raise ValueError("--rounds applies to --composition concatenation only")
    if composition == "generated" and extra:
        raise ValueError("extra data given: use --composition combination or concatenation")
    kept = [c for c in generated if polarity == "both" or c.polarity == polarity]
    rounds_left_out = 0
    if composition in ("generated", "combination"):
        out = [*extra, *kept]
    else:
        by_image: dict[str, list[Conversation]] = {}
        no_key: list[Conversation] = []
        for conversation in kept:
            key = _image_key(conversation)
            if key is None:
                no_key.append(conversation)
            else:
                by_image.setdefault(key, []).append(conversation)
        out = []
        used: set[str] = set()
        for base in extra:
            key = _image_key(base)
            if key is None or key not in by_image or key in used:
                out.append(base)
                continue
            used.add(key)
            appended = [r for c in by_image[key] for r in _rounds_of(c, drop_marks=True)]
            limit = len(appended) if rounds is None else rounds
            rounds_left_out += max(0, len(appended) - limit)
            turns = [*base.turns, *(t for pair in appended[:limit] for t in pair)]
            out.append(
                Conversation(
                    base.id, "concatenation", base.images, tuple(turns), base.polarity, base.video
                )
            )
        for key, group in by_image.items():
            if key in used:
                continue
            first = group[0]
            appended = [*_rounds_of(first, drop_marks=False)]
            appended += [r for c in group[1:] for r in _rounds_of(c, drop_marks=True)]
            limit = len(appended) if rounds is None else rounds
            rounds_left_out += max(0, len(appended) - limit)
            turns = [t for t in first.turns if t.role == "system"]
            turns += [t for pair in appended[:limit] for t in pair]
            polarities = {c.polarity for c in group}
            out.append(
                Conversation(
                    first.id,
                    "concatenation",
                    first.images,
                    tuple(turns),
                    polarities.pop() if len(polarities) == 1 else None,
                    first.video,
                )
            )
        out += no_key
    if report is not None:
        report.composition = composition
        report.rounds = rounds
        report.polarity = polarity
        report.samples = len(out)
        report.rounds_total = sum(c.rounds for c in out)
        report.rounds_left_out = rounds_left_out
    return out


def load_training_data(
    data: Iterable[Path],
    extra: Iterable[Path] = (),
    *,
    images: Path | None = None,
    composition: Composition | None = None,
    rounds: int | None = None,
    polarity: Polarity = "both",
) -> tuple[list[Conversation], DataReport]:
    """Read every file, report bad records, and compose the training set.

    ``composition=None`` picks ``combination`` when extra data is given, else
    ``generated``.

    Raises:
        FileNotFoundError: a data path does not exist.
        ValueError: a file is not a JSON list, or the composition options conflict.
    """
    report = DataReport()
    groups: dict[str, list[Conversation]] = {"generated": [], "extra": []}
    for source, paths in (("generated", data), ("extra", extra)):
        for raw in paths:
            path = resolve_data_path(Path(raw))
            conversations, problems, info = read_file(path, source, images=images)
            info.kept = len(conversations)
            report.files.append(info)
            report.problems += problems
            groups[source] += conversations
    if not report.files:
        raise ValueError("no training data given")
    chosen: Composition = composition or ("combination" if groups["extra"] else "generated")
    out = compose(
        groups["generated"],
        groups["extra"],
        composition=chosen,
        rounds=rounds,
        polarity=polarity,
        report=report,
    )
    return out, report


__all__ = [
    "IMAGE_MARK",
    "Composition",
    "Conversation",
    "DataFile",
    "DataReport",
    "Polarity",
    "Problem",
    "ProblemKind",
    "Turn",
    "VideoTiming",
    "compose",
    "load_training_data",
    "read_file",
    "resolve_data_path",
]
