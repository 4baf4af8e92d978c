"""Turn a tamper dataset into the questions of one task (``mmrobust eval --task NAME``).

* ``detect``: the dataset as loaded (MVTamperBench's yes/no question; nothing changes).
* ``type``: one multiple-choice question per clip: "Which kind of tampering, if
  any, does this video show?", options ``none`` plus every effect present in
  the dataset, in plain words (``data/tasks/questions.json``).
* ``when``: one question per clip: which third of the clip is tampered, or none
  (truth rule: :mod:`mmrobust.tasks.truth`).
* ``leading``: one MMR-style pair per clip (MMR section 3): the positive
  question is the ``type`` question; the negative one presupposes an effect
  ``Y`` the clip does not have ("The frames in the middle of this video are
  upside down. How long does the upside-down part last?") with three durations
  and the option that rejects the premise, which is always the correct answer.

Option order: each question's options are shuffled by a generator seeded with
``(seed, task, clip id)`` (stable whatever else the dataset holds), recorded in
``Sample.meta["task_question"]["order"]``; ``--permute K`` then shifts them
circularly as for every benchmark. Every option has a *key* (``none``, an
effect name, ``beginning``, ``reject``, ``rotation:1s`` ...) stored with the
sample (``keys``: option text -> key), so metrics score the meaning of an
answer, never its letter, and rule-based models (``forensic``,
``constant:<key>``) can answer by meaning.

``Y`` for a leading pair: the effects of the dataset other than the clip's own
and those it could be confused with (``confusable`` in the template file);
clips of one effect take the candidates in turn from a seeded offset (so every
presupposition is asked about equally often). The premise names the third of
the clip's own window (an original: the middle, the paper's position).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mmrobust.datasets.base import Dataset
from mmrobust.families import get_family
from mmrobust.schema import CANONICAL_TYPES, Sample
from mmrobust.tasks.templates import EffectWording, Templates, load_templates
from mmrobust.tasks.truth import (
    NONE,
    NOWHERE,
    PARTS,
    REJECT,
    WHEN_KEYS,
    clip_type,
    frames_output,
    straddles,
    when_truth,
)

TASKS: tuple[str, ...] = ("detect", "type", "when", "leading")
"""Task names of ``mmrobust eval --task``; ``detect`` is the paper's question (the default)."""

TASK_BENCHMARK: Mapping[str, str] = {
    "detect": "tamper",
    "type": "tamper-type",
    "when": "tamper-when",
    "leading": "tamper-leading",
}
"""The metric family (``Sample.benchmark``) of each task's questions."""

META_KEY = "task_question"
"""``Sample.meta`` key holding a task question's keys, truth, order and seed."""

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def check_task(task: str) -> str:
    """``task`` if it is a known task name.

    Raises:
        ValueError: an unknown name (one line listing the known ones).
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    return task


def check_task_options(task: str, *, prompt: str | None, official: bool) -> None:
    """Refuse option combinations a task cannot honour, before any work.

    The new tasks ask their own questions with the ``plain`` template (question,
    options, "Answer with the option's letter from the given choices
    directly."); the paper's tamper templates and VLMEvalKit's official framing
    exist only for ``detect``.

    Raises:
        ValueError: unknown task, ``--official`` or a tamper ``--prompt`` with another task.
    """
    check_task(task)
    if task == "detect":
        return
    if official:
        raise ValueError(
            f"--official reproduces the reference's yes/no protocol; --task {task} has no "
            "reference (drop --official, or use --task detect)"
        )
    if prompt not in (None, "plain"):
        raise ValueError(
            f"--task {task} asks its own question (template plain); --prompt {prompt} "
            "applies to --task detect only"
        )


def _rng(seed: int, *parts: str) -> np.random.Generator:
    digest = hashlib.sha256("\0".join([str(seed), *parts]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def shuffled(keys: Sequence[str], seed: int, *parts: str) -> list[str]:
    """``keys`` in the order of a generator seeded by ``(seed, *parts)`` (stable, reproducible)."""
    order = _rng(seed, *parts).permutation(len(keys))
    return [keys[int(i)] for i in order]


def _ordered_effects(names: set[str]) -> list[str]:
    known = [t for t in CANONICAL_TYPES if t in names]
    return known + sorted(names - set(known))


def _params(sample: Sample) -> dict[str, Any]:
    p = sample.meta.get("params")
    return dict(p) if isinstance(p, Mapping) else {}


def effect_wordings(
    samples: Sequence[Sample], effects: Sequence[str], templates: Templates, defects: list[str]
) -> dict[str, EffectWording]:
    """The wording of each effect at the parameters of its clips in this dataset.

    Clips of one effect built with parameters that need different words (a
    merged set of 90 and 180 degree rotations) get the base wording, and a
    defect line says so.
    """
    out: dict[str, EffectWording] = {}
    for effect in effects:
        found = {
            templates.wording(effect, _params(s))
            for s in samples
            if s.tamper_type is not None and clip_type(s) == effect
        }
        if len(found) == 1:
            out[effect] = found.pop()
        else:
            out[effect] = templates.wording(effect)
            if len(found) > 1:
                defects.append(
                    f"task: clips of {effect!r} use parameters that need different words; "
                    f"the options say {out[effect].type!r}"
                )
    texts = [w.type for w in out.values()]
    for effect, w in out.items():  # option texts must be unique within a question
        if texts.count(w.type) > 1:
            out[effect] = w.model_copy(update={"type": f"{w.type} ({effect.replace('_', ' ')})"})
    return out


def _question(
    clip: Sample,
    *,
    task: str,
    suffix: str,
    question: str,
    texts: Mapping[str, str],
    truth: str | None,
    seed: int,
    templates: Templates,
    error: str | None = None,
    extra: Mapping[str, Any] | None = None,
    category: str | None = None,
    polarity: str | None = None,
    group: str | None = None,
) -> Sample:
    """One task question about ``clip``; ``texts`` maps option key -> text (canonical order)."""
    order = shuffled(list(texts), seed, task + suffix, clip.id)
    options = {LETTERS[i]: texts[k] for i, k in enumerate(order)}
    answer = LETTERS[order.index(truth)] if truth in order else "A"
    info: dict[str, Any] = {
        "task": task,
        "truth": truth,
        "keys": {texts[k]: k for k in order},
        "order": order,
        "seed": seed,
        "templates": templates.digest,
        **(extra or {}),
    }
    return Sample(
        id=f"{clip.id}::{task}{suffix}",
        benchmark=TASK_BENCHMARK[task],  # type: ignore[arg-type]
        video=clip.video,
        image=clip.image,
        question=question,
        options=options,
        answer=answer,
        group=group if group is not None else clip.group,
        task=clip.task,
        tamper_type=clip.tamper_type,
        window=clip.window,
        category=category,
        polarity=polarity,  # type: ignore[arg-type]
        error=clip.error or error,
        meta={**clip.meta, "clip_id": clip.id, META_KEY: info},
    )


def _type_texts(effects: Sequence[str], words: Mapping[str, EffectWording], t: Templates) -> dict:
    return {NONE: t.type.none, **{e: words[e].type for e in effects}}


def _type_question(
    clip: Sample,
    effects: Sequence[str],
    words: Mapping[str, EffectWording],
    t: Templates,
    seed: int,
    **kw: Any,
) -> Sample:
    return _question(
        clip,
        task=kw.pop("task", "type"),
        suffix=kw.pop("suffix", ""),
        question=t.type.question,
        texts=_type_texts(effects, words, t),
        truth=clip_type(clip),
        seed=seed,
        templates=t,
        **kw,
    )


def _when_question(clip: Sample, t: Templates, seed: int) -> Sample:
    texts = {k: t.when.options[k] for k in WHEN_KEYS}
    extra: dict[str, Any] = {}
    try:
        truth: str | None = when_truth(clip)
        n = frames_output(clip)
        if clip.window is not None and n is not None and truth != NOWHERE:
            extra = {
                "n_frames": n,
                "straddles": straddles(clip.window.start_frame, clip.window.end_frame, n),
            }
        error = None
    except ValueError as exc:
        truth, error = None, str(exc)
    return _question(
        clip,
        task="when",
        suffix="",
        question=t.when.question,
        texts=texts,
        truth=truth,
        seed=seed,
        templates=t,
        error=error,
        extra=extra,
    )


def presuppositions(
    clips: Sequence[Sample], effects: Sequence[str], templates: Templates, seed: int
) -> dict[str, str | None]:
    """The effect each clip's leading question presupposes (clip id -> effect, or ``None``).

    Candidates for a clip of effect ``X``: the dataset's effects other than
    ``X`` and those confusable with it (template file), else the paper's five
    (minus the same); clips of ``X`` (by id) take them in turn, from an offset
    seeded by ``(seed, X)``.
    """
    by_type: dict[str, list[Sample]] = {}
    for clip in clips:
        by_type.setdefault(clip_type(clip), []).append(clip)
    out: dict[str, str | None] = {}
    for x, members in by_type.items():
        banned = {x} | templates.confusable_with(x)
        cands = [e for e in effects if e not in banned] or [
            e for e in CANONICAL_TYPES if e not in banned
        ]
        offset = int(_rng(seed, "leading-presupposition", x).integers(len(cands)))
        for i, clip in enumerate(sorted(members, key=lambda s: s.id)):
            out[clip.id] = cands[(offset + i) % len(cands)] if cands else None
    return out


def _premise_part(clip: Sample, templates: Templates) -> str:
    if clip_type(clip) == NONE:
        return templates.leading.original_part
    try:
        part = when_truth(clip)
    except ValueError:
        return templates.leading.original_part
    return part if part in PARTS else templates.leading.original_part


def _leading_pair(
    clip: Sample,
    presupposed: str,
    effects: Sequence[str],
    words: Mapping[str, EffectWording],
    t: Templates,
    seed: int,
) -> list[Sample]:
    y_words = words.get(presupposed) or t.wording(presupposed)
    part = _premise_part(clip, t)
    common = {
        "presupposed": presupposed,
        "part": part,
        "clip_type": clip_type(clip),
    }
    positive = _type_question(
        clip,
        effects,
        words,
        t,
        seed,
        task="leading",
        suffix=":positive",
        extra={**common, "role": "positive"},
        category=presupposed,
        polarity="positive",
        group=clip.id,
    )
    premise = y_words.premise.format(part=t.leading.parts[part])
    texts = {REJECT: y_words.reject}
    texts.update({f"{presupposed}:{d}": text for d, text in t.leading.durations.items()})
    negative = _question(
        clip,
        task="leading",
        suffix=":negative",
        question=f"{premise} {y_words.question}",
        texts=texts,
        truth=REJECT,
        seed=seed,
        templates=t,
        extra={**common, "role": "negative"},
        category=presupposed,
        polarity="negative",
        group=clip.id,
    )
    return [positive, negative]


def derive_task(
    dataset: Dataset, task: str, *, seed: int = 0, templates: Templates | None = None
) -> Dataset:
    """The questions of ``task`` about every clip of a tamper ``dataset``.

    ``detect`` returns ``dataset`` itself. Other tasks return a new dataset
    whose benchmark is the task's (``TASK_BENCHMARK``), with the same name,
    source and data hash; its defects add one line per clip that cannot be
    asked (no recorded type) and per wording problem.

    Args:
        dataset: a loaded tamper dataset (manifest, released layout, TSV).
        task: one of ``TASKS``.
        seed: seeds option orders and the leading presuppositions (``--seed``).
        templates: question templates (default: the package's file).

    Raises:
        ValueError: unknown task, or a dataset that is not a tamper dataset.
    """
    check_task(task)
    if task == "detect":
        return dataset
    if not get_family(dataset.benchmark).tamper_clips:
        raise ValueError(
            f"--task {task} asks about tampered clips; {dataset.name!r} is a "
            f"{dataset.benchmark} dataset (use a tamper manifest, the released "
            "MVTamperBench folder or its TSV)"
        )
    t = templates or load_templates()
    defects = list(dataset.defects)
    clips: list[Sample] = []
    for s in dataset.samples:
        if s.tamper_type is None:
            defects.append(f"{s.id}: no tamper_type recorded; left out of --task {task}")
            continue
        clips.append(s)
    effects = _ordered_effects({clip_type(s) for s in clips} - {NONE})
    words = effect_wordings(clips, effects, t, defects)
    samples: list[Sample] = []
    if task == "type":
        samples = [_type_question(c, effects, words, t, seed) for c in clips]
    elif task == "when":
        samples = [_when_question(c, t, seed) for c in clips]
    else:
        chosen = presuppositions(clips, effects, t, seed)
        for c in clips:
            y = chosen.get(c.id)
            if y is None:
                defects.append(f"{c.id}: no effect left to presuppose; no leading pair")
                continue
            samples.extend(_leading_pair(c, y, effects, words, t, seed))
    return Dataset(
        name=dataset.name,
        benchmark=TASK_BENCHMARK[task],  # type: ignore[arg-type]
        samples=samples,
        defects=defects,
        data_hash=dataset.data_hash,
        source=dataset.source,
    )


def option_keys(sample: Sample, shown: Mapping[str, str]) -> dict[str, str]:
    """The key of each displayed option (letter -> key), ``{}`` for a sample without keys.

    ``shown`` is letter -> text as displayed (after ``--permute``); texts are
    unique within a question, so the mapping follows any reordering.
    """
    info = sample.meta.get(META_KEY)
    keys = info.get("keys") if isinstance(info, Mapping) else None
    if not isinstance(keys, Mapping):
        return {}
    return {letter: str(keys[text]) for letter, text in shown.items() if text in keys}


def task_fingerprint(task: str, templates: Templates | None = None) -> dict[str, Any]:
    """What a task adds to a run's key: its name and the template file's digest."""
    if task == "detect":
        return {}
    t = templates or load_templates()
    return {"task": task, "templates": t.digest}


__all__ = [
    "LETTERS",
    "META_KEY",
    "TASKS",
    "TASK_BENCHMARK",
    "check_task",
    "check_task_options",
    "derive_task",
    "effect_wordings",
    "option_keys",
    "presuppositions",
    "shuffled",
    "task_fingerprint",
]
