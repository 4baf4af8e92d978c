"""Checks an eval makes before and after it runs: same run, something to ask, something scored.

* :func:`check_same_run`: a run folder holds one run (same key, same dataset).
* :func:`check_nonempty`, :func:`check_usable`: fail before any model call
  when nothing can be asked; :func:`media_kinds`: what a model is shown;
  :func:`refusal`: why the model can answer none of the samples.
* :func:`unfinished`: the samples a resume still has to ask.
* :func:`nothing_scored`: why a run that finished scored nothing (exit 1).
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from mmrobust.datasets import Dataset, Sample
from mmrobust.datasets.stream import subset, take
from mmrobust.models.base import Model
from mmrobust.run.config import EvalConfig
from mmrobust.run.folder import RUN_FILE, read_run_info
from mmrobust.status import Status
from mmrobust.store import TRANSIENT, ResultStore, RunKey, StoredRow
from mmrobust.tasks import derive_task


class RunConflictError(ValueError):
    """The run folder already holds a run of another model, configuration or dataset."""


def resolved(source: str) -> str:
    """``source`` as an absolute, symlink-free path when it names a file or folder."""
    return os.path.realpath(source) if source and os.path.exists(source) else source


def same_source(old: object, new: str) -> bool:
    """Whether two spellings of a dataset path name the same place (``./d.jsonl``,
    ``sub/../d.jsonl``, an absolute path, a symlink); ``mmr-demo`` and other names compare as is."""
    if not isinstance(old, str):
        return False
    if old == new:
        return True
    return os.path.realpath(os.path.expanduser(old)) == os.path.realpath(os.path.expanduser(new))


def check_same_run(run_dir: Path, key: RunKey, dataset: Dataset) -> None:
    """Refuse to mix runs in one folder: same model/prompt/frames key and same dataset only.

    Raises:
        RunConflictError: ``run_dir/run.json`` describes a different run, or is unreadable.
    """
    path = run_dir / RUN_FILE
    if not path.is_file():
        return
    try:
        old = read_run_info(run_dir)
    except (ValueError, OSError):
        raise RunConflictError(
            f"{path} is not a readable run.json; use a new --out or remove the folder"
        ) from None
    what = []
    if old.key != key:
        was = old.config
        what.append(
            f"model/prompt/frames/task (was {was.get('model')!r}, task "
            f"{was.get('task', 'detect')!r})"
        )
    if not same_source(old.dataset.source, dataset.source):
        what.append(f"dataset (was {old.dataset.source!r})")
    if what:
        raise RunConflictError(
            f"{run_dir} already holds a run with a different {' and '.join(what)}; "
            "use a new --out (re-running the same command resumes)"
        )


def check_usable(samples: Sequence[Sample], config: EvalConfig) -> None:
    """Fail fast when no selected sample can be asked (e.g. MMR without its images).

    Raises:
        DatasetError: every selected sample carries a loader error.
    """
    from mmrobust.datasets import DatasetError

    if samples and all(s.error for s in samples):
        first = samples[0].error or ""
        hint = (
            ""
            if config.images or "--text-only" in first  # the loader's error gives the hint
            else " (pass --media DIR, or --text-only for a text-only run)"
        )
        raise DatasetError(f"none of the {len(samples)} samples can be evaluated: {first}{hint}")


def media_kinds(samples: Sequence[Sample], *, text_only: bool = False) -> set[str]:
    """The media kinds a model is shown for ``samples`` (``Sample.media_kind`` of each sample
    without a loader error; ``{"text"}`` under ``--text-only``): what
    ``Model.cannot_take`` is asked about."""
    if text_only:
        return {"text"} if samples else set()
    return {s.media_kind for s in samples if not s.error}


def refusal(model: Model, samples: Sequence[Sample], config: EvalConfig) -> str | None:
    """Why ``model`` can answer none of ``samples`` (one line), else ``None``: the media it
    is shown (``Model.cannot_take``: forensic on images) or, without a ``--judge`` (which may
    still read such replies), no answer among the options (``Model.cannot_answer``:
    ``constant:Z`` on Yes/No questions). Asked before any request, on every executor."""
    from mmrobust.tasks import option_keys

    return model.cannot_take(media_kinds(samples, text_only=config.text_only)) or (
        None
        if config.judge
        else model.cannot_answer(
            take(samples, lambda s: s.options), take(samples, lambda s: option_keys(s, s.options))
        )
    )


def check_nonempty(dataset: Dataset, samples: Sequence[Sample], config: EvalConfig) -> None:
    """Fail before any model call when there is nothing to evaluate.

    Raises:
        DatasetError: no sample selected (every record skipped, an empty file, ``--limit 0``).
    """
    from mmrobust.datasets import DatasetError

    if samples:
        return
    if dataset.samples:
        why = f"--limit {config.limit} selects none of its {len(dataset.samples)} samples"
    elif dataset.defects:
        why = f"every record was skipped ({len(dataset.defects)}; first: {dataset.defects[0]})"
    else:
        why = "it holds no records"
    raise DatasetError(f"no sample to evaluate in {config.data} ({dataset.benchmark}): {why}")


def nothing_scored(rows: Iterable[StoredRow]) -> str | None:
    """Why no row got a scored answer (all failed or unparseable), or ``None`` if one did."""
    counts: dict[str, int] = {}
    first: StoredRow | None = None
    for r in rows:
        first = first or r
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    return nothing_scored_counts(counts, first)


def nothing_scored_counts(counts: Mapping[str, int], first: StoredRow | None) -> str | None:
    """:func:`nothing_scored` of rows known by their status counts (in the order each status
    first occurs) and their first row (``ResultStore.outcome``)."""
    if first is None or Status.OK.value in counts:
        return None
    n = sum(counts.values())
    spread = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    detail = (
        f"first reply {first.raw_text[:60]!r} matches no option ({', '.join(first.options)})"
        if first.status is Status.PARSE_FAIL
        else f"first: {first.status.value}: {first.error or 'no detail'}"
    )
    return f"no sample could be scored: {n} of {n} rows are {spread}; {detail}"


PATH_META = ("original_video",)
"""``Sample.meta`` keys that hold a media path (compared resolved, like ``video``/``image``)."""


def _real(path: object) -> str | None:
    return os.path.realpath(os.path.expanduser(str(path))) if path else None


def absolute_media(sample: Sample) -> Sample:
    """``sample`` with its media paths (``video``, ``image``, path-valued ``meta``) absolute,
    so the stored sample names its files whatever the working directory of a later run."""
    update: dict[str, object] = {}
    for name in ("video", "image"):
        value = getattr(sample, name)
        if value is not None and not Path(value).is_absolute():
            update[name] = Path(os.path.abspath(value))
    meta = {
        k: os.path.abspath(v)
        for k, v in sample.meta.items()
        if k in PATH_META and isinstance(v, str) and v and not os.path.isabs(v)
    }
    if meta:
        update["meta"] = {**sample.meta, **meta}
    return sample.model_copy(update=update) if update else sample


def sample_identity(sample: Sample) -> dict[str, object]:
    """What makes two loads of a sample the same sample: its content, never the spelling
    of a path (``p4/build``, ``p4/../p4/build``, an absolute path, another working directory).

    A clip whose manifest entry carries its ``video_sha256`` is that hash; other media
    are their resolved path (absolute, symlink-free); ``error`` counts only as present or
    not (its text names the path as spelled). Everything else (question, options,
    answer, window, meta ...) is compared as is, so a rebuilt or edited dataset differs.
    """
    data = sample.model_dump(mode="json", exclude={"video", "image", "error", "meta"})
    meta = {k: (_real(v) if k in PATH_META else v) for k, v in sample.meta.items()}
    sha = sample.meta.get("video_sha256")
    video = f"sha256:{sha}" if sha and sample.video is not None else _real(sample.video)
    return {
        **data,
        "video": video,
        "image": _real(sample.image),
        "error": sample.error is not None,
        "meta": meta,
    }


def greedy_repeats(repeats: int, model: Model) -> str | None:
    """The warning (logged on ``mmrobust``, and returned) for ``--repeats`` of a backend that
    decodes greedily (its fingerprint's ``temperature`` is 0): the asks will agree unless the
    server samples anyway; else ``None``."""
    if repeats > 1 and model.fingerprint().get("temperature") == 0:
        warning = (
            f"--repeats {repeats} at temperature 0: greedy decoding gives the same answer each "
            "time; pass --temperature T (> 0) to measure answer stability under sampling"
        )
        logging.getLogger("mmrobust").warning(warning)
        return warning
    return None


def unfinished(
    store: ResultStore, key: RunKey, samples: Sequence[Sample], *, retry_failed: bool = False
) -> Sequence[Sample]:
    """Samples without a finished row under ``key`` (repeat 0: :func:`unfinished_repeats`)."""
    return unfinished_repeats(store, key, samples, 1, retry_failed=retry_failed)[0]


def unfinished_repeats(
    store: ResultStore,
    key: RunKey,
    samples: Sequence[Sample],
    repeats: int,
    *,
    retry_failed: bool = False,
) -> list[Sequence[Sample]]:
    """For each repeat ``0 .. repeats-1`` (``--repeats``), the samples without a finished
    row of that repeat under ``key``: a resumed run asks only the missing (sample, repeat)
    pairs.

    A row counts as finished only if its status is not transient and the stored
    sample is the current one by :func:`sample_identity` (same content: the clip's
    sha256 or the resolved media path, window, options, meta), so a rebuilt or edited
    dataset is asked again and another spelling of the same data is not.
    ``retry_failed`` also asks again every sample whose row is a final error
    (``rejected``, ``empty_reply``, ``media_error`` ...; ``Status.is_error``).

    The samples are read once, a chunk at a time, with the stored rows of that chunk: what
    is kept is one flag per (sample, repeat). Each repeat's list is ``samples`` itself when
    none is finished, else the unfinished ones (a list for a list; for a lazy sequence, a
    lazy one: ``datasets.stream.subset``).
    """
    todo = [np.ones(len(samples), dtype=bool) for _ in range(repeats)]
    ids = iter(samples)
    start = 0
    while chunk := list(itertools.islice(ids, CHUNK)):  # a chunk of samples at a time
        stored = {
            (r.sample.id, r.repeat): r
            for r in store.rows_of(key, [s.id for s in chunk], repeats=repeats)
            if r.status not in TRANSIENT and not (retry_failed and r.status.is_error)
        }
        for i, s in enumerate(chunk, start):
            identity: dict[str, object] | None = None
            for k in range(repeats):
                row = stored.get((s.id, k))
                if row is None:
                    continue
                identity = identity or sample_identity(s)
                if sample_identity(row.sample) == identity:
                    todo[k][i] = False
        start += len(chunk)
    return [samples if t.all() else subset(samples, np.flatnonzero(t)) for t in todo]


CHUNK = 500
"""Samples whose stored rows :func:`unfinished_repeats` reads in one query."""


def select_samples(dataset: Dataset, limit: int | None) -> Sequence[Sample]:
    """The first ``limit`` samples (all when ``None``)."""
    return dataset.samples if limit is None else dataset.samples[: max(0, limit)]


def selected(config: EvalConfig, dataset: Dataset) -> tuple[Dataset, Sequence[Sample]]:
    """``dataset`` with ``config.task``'s questions, and the samples the run asks (the first
    ``--limit``, media paths absolute): a list, or for a dataset read from its file on
    each pass (``datasets.stream``) a view read the same way.

    Raises:
        DatasetError: no sample selected, or none can be asked (:func:`check_nonempty`,
            :func:`check_usable`).
        ValueError: a task the dataset cannot be asked.
    """
    dataset = derive_task(dataset, config.task, seed=config.seed)
    samples = take(select_samples(dataset, config.limit), absolute_media)  # lazy stays lazy
    check_nonempty(dataset, samples, config)
    check_usable(samples, config)
    return dataset, samples


def check_answerable(config: EvalConfig, dataset: Dataset) -> None:
    """Refuse a run whose model can answer none of its samples (:func:`refusal`), asked of
    :func:`mmrobust.models.spec.driver_model`: before the model is loaded anywhere.

    Raises:
        DatasetError: as :func:`selected`.
        ValueError, UnknownNameError: the refusal (one line), or a bad model spec.
    """
    from mmrobust.models.spec import driver_model

    _, samples = selected(config, dataset)
    model = driver_model(config.model, config.model_args)
    try:
        why = refusal(model, samples, config)
    finally:
        model.close()
    if why:
        raise ValueError(why)


__all__ = [
    "PATH_META",
    "RunConflictError",
    "absolute_media",
    "check_answerable",
    "check_nonempty",
    "check_same_run",
    "check_usable",
    "greedy_repeats",
    "media_kinds",
    "nothing_scored",
    "nothing_scored_counts",
    "refusal",
    "resolved",
    "same_source",
    "sample_identity",
    "select_samples",
    "selected",
    "unfinished",
    "unfinished_repeats",
]
