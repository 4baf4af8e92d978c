"""The sample browser's data: one dict per sample, made from rows streamed out of SQLite.

Scale: the page itself carries none of it. :mod:`mmrobust.report.browser_files` writes
the samples in chunk files beside ``index.html`` (``samples/``), with a compact filter
index, and the page script loads the chunks a page of cards needs, and the index when a
filter is set (see that module). This module makes the samples: :func:`iter_samples`
merges the runs of each dataset by sample id, reading each run's rows from its store one
at a time (:class:`mmrobust.report.view.StoredRows`), so memory does not grow with the
number of rows. Thumbnail strips are JPEG files beside the page, drawn for at most
``max_thumbs`` samples (the first ones of each dataset, taken in turn) within a time
budget, and loaded lazily; a card without one says so.

A sample (``iter_samples``; :func:`build_payload` collects them for a small report):
``id``, ``d`` (dataset), ``b`` (benchmark), ``t`` (type or category), ``k`` (task),
``p`` (polarity), ``a`` (truth, "A. Yes"), ``m`` (media path), ``v`` (1: a video),
``th`` (thumbnail, relative), ``te`` (why there is none), ``n`` (frames in the
clip), ``w`` (tamper window ``[start, end)``), ``fs`` (distinct frame-index
lists), ``r`` (answers).

An answer: ``[run, raw, letter, status, correct, error, covered, pred_type,
pred_window, frames (index into fs or -1), prompt, reasoning, reasoning label]``; the
prompt is its text in :func:`iter_samples` and an index into the document's (or the
chunk's) ``prompts`` once written; for a thinking model's reply ``raw`` is the reply
without its reasoning block and ``reasoning`` the block, shown collapsed (``<details>``).

Every string in it comes from a model, a file or the user; the page only ever
puts them in the DOM as text (``textContent``), and :func:`script_json` escapes
``<`` so the document cannot close its ``<script>`` element.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrobust.reasoning import split_reasoning
from mmrobust.report.thumbs import Strip, ThumbJob, write_strips
from mmrobust.report.view import RunView, rows_by_id
from mmrobust.schema import Sample, Window
from mmrobust.status import Status
from mmrobust.store import StoredRow

MAX_THUMBS = 400
"""Default number of samples that get a thumbnail (clips and images)."""

THUMB_SECONDS = 20.0
"""Default time budget for drawing thumbnails (a re-run reuses the strips already drawn)."""

RAW_TEXT_BUDGET = 12_000_000
"""Characters of raw model replies the browser's files carry in all; long replies are cut
(head … tail) so that each keeps at least 160 and at most 4,000 characters."""

N_FRAMES_KEYS = ("frames_output", "n_frames", "frame_count")
"""``Sample.meta`` keys that give a clip's frame count (manifest, released layout)."""


def BrowserRun(
    label: str,
    dataset: str,
    benchmark: str,
    info: Mapping[str, Any],
    rows: Sequence[StoredRow] = (),
    frames: str = "",
    text_only: bool = False,
) -> RunView:
    """A :class:`~mmrobust.report.view.RunView` built from its parts (the browser's old run type).

    Args:
        label: display label (unique within its dataset).
        dataset: dataset display name.
        benchmark: its family id.
        info: ``run.json``.
        rows: the stored rows.
        frames: how the model was shown media (``metrics.json``'s ``run.frames``).
        text_only: the run sent no media.
    """
    metrics = {"run": {"frames": frames, "text_only": text_only}}
    return RunView(
        Path(label), info, metrics, list(rows), label=label, bench=benchmark, dataset_label=dataset
    )


NO_PROMPT = "(prompt not stored: this run was made before mmrobust stored each row's prompt)"
"""Shown for a row of an older store that has no stored prompt text."""


def shorten(text: str, limit: int) -> str:
    """``text`` if at most ``limit`` characters, else its head and tail around ``…``."""
    if len(text) <= limit:
        return text
    head = max(1, limit * 3 // 5)
    tail = max(1, limit - head)
    return f"{text[:head]} … [{len(text) - head - tail} characters cut] … {text[-tail:]}"


def _reply_parts(row: StoredRow) -> tuple[str, str]:
    """(the reply without its reasoning block, the reasoning) for the answers table: a
    thinking model's reasoning is shown collapsed (``<details>``), its answer in the cell."""
    if not row.reasoning:
        return row.raw_text, ""
    if row.reasoning_form in ("closed", "unopened", "cut", "harmony"):  # in the reply
        answer = split_reasoning(row.raw_text).answer.strip()
        return answer or "(cut inside its reasoning: no answer)", row.reasoning
    return row.raw_text, row.reasoning


def _reasoning_label(row: StoredRow) -> str:
    chars = row.reasoning_chars if row.reasoning_chars is not None else len(row.reasoning or "")
    return f"reasoning ({row.reasoning_form}, {chars:,} characters)"


def _n_frames(sample: Sample) -> int | None:
    for key in N_FRAMES_KEYS:
        v = sample.meta.get(key)
        if isinstance(v, int) and v > 0:
            return v
    return None


def _thumb_order(keys: Sequence[tuple[str, str]], budget: int) -> list[tuple[str, str]]:
    """The first ``budget`` keys taking each dataset's samples in turn (datasets in order)."""
    per: dict[str, list[tuple[str, str]]] = {}
    for k in keys:
        per.setdefault(k[0], []).append(k)
    chosen: list[tuple[str, str]] = []
    queues = [list(reversed(v)) for v in per.values()]
    while len(chosen) < budget and any(queues):
        for q in queues:
            if q and len(chosen) < budget:
                chosen.append(q.pop())
    return chosen


def _window(pairs: Sequence[tuple[int, StoredRow]]) -> Window | None:
    """The sample's tamper window, or the one the runner derived for a released clip."""
    return next((row.window for _, row in pairs if row.window is not None), None)


def dataset_order(runs: Sequence[RunView]) -> list[tuple[str, list[int]]]:
    """``(dataset, run indices)`` in browser order: by family (``BenchmarkFamily.browser_rank``:
    tamper first, then MMR, then the rest; a dataset asked by several families goes with the
    first), then by name."""
    by: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        by.setdefault(r.dataset_name, []).append(i)
    rank = {d: min(runs[i].family.browser_rank for i in ix) for d, ix in by.items()}
    return sorted(by.items(), key=lambda kv: (rank[kv[0]], kv[0]))


def _merged(
    runs: Sequence[RunView], indices: Sequence[int], **kw: Any
) -> Iterator[list[tuple[int, StoredRow]]]:
    """The rows of ``runs[indices]`` merged by sample id: one list of ``(run index, row)`` per
    sample, runs in order (each run's rows streamed, see :func:`rows_by_id`)."""

    def keyed(i: int) -> Iterator[tuple[tuple[str, int, int], StoredRow]]:
        for n, row in enumerate(rows_by_id(runs[i].rows, **kw)):
            yield (row.sample.id, i, n), row

    merged = heapq.merge(*(keyed(i) for i in indices))
    current: list[tuple[int, StoredRow]] = []
    for (sid, i, _), row in merged:
        if current and current[0][1].sample.id != sid:
            yield current
            current = []
        current.append((i, row))
    if current:
        yield current


def draw_thumbs(
    runs: Sequence[RunView],
    out_dir: Path,
    *,
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
) -> dict[tuple[str, str], Strip]:
    """Draw the thumbnail strips into ``out_dir/thumbs``: the first media samples of each
    dataset, taken in turn, ``max_thumbs`` in all, within ``thumb_seconds`` (``None``: no
    limit). Reads at most ``max_thumbs`` media rows of each run. Returns
    ``(dataset, sample id) -> Strip``."""
    budget = max(0, max_thumbs)
    firsts: dict[tuple[str, str], list[tuple[int, StoredRow]]] = {}
    keys: list[tuple[str, str]] = []
    for dataset, ix in dataset_order(runs):
        for n, pairs in enumerate(_merged(runs, ix, media_only=True, limit=budget)):
            if n >= budget:
                break
            k = (dataset, pairs[0][1].sample.id)
            firsts[k] = pairs
            keys.append(k)
    jobs: list[ThumbJob] = []
    job_of: dict[Path, int] = {}  # one strip per clip: the --task questions about it share it
    job_keys: list[tuple[tuple[str, str], int]] = []
    for k in _thumb_order(keys, budget):
        s = firsts[k][0][1].sample
        path = Path(s.video or s.image or "")
        if not path.exists():
            continue
        if path not in job_of:
            kind = "video" if s.video is not None else "image"
            job_of[path] = len(jobs)
            jobs.append(ThumbJob(path, kind, window=_window(firsts[k]), n_frames=_n_frames(s)))
        job_keys.append((k, job_of[path]))
    drawn = write_strips(jobs, out_dir, seconds=thumb_seconds)
    return {k: drawn[i] for k, i in job_keys}


def raw_limit_for(n_answers: int) -> int:
    """Characters kept of each reply (and reasoning) when the browser holds ``n_answers``
    answers: :data:`RAW_TEXT_BUDGET` shared out, between 160 and 4,000."""
    return max(160, min(4000, RAW_TEXT_BUDGET // max(1, n_answers)))


def _answer(ri: int, row: StoredRow, fi: int, raw_limit: int) -> list[Any]:
    pw = row.extra.get("pred_window")
    shown_text, thought = _reply_parts(row)
    return [
        ri,
        shorten(shown_text, raw_limit),
        row.letter or "",
        row.status.value,
        int(row.status is Status.OK and row.letter == row.answer),
        row.error or "",
        None if row.window_covered is None else int(row.window_covered),
        row.extra.get("pred_type") or "",
        [int(pw["start_frame"]), int(pw["end_frame"])] if isinstance(pw, Mapping) else None,
        fi,
        row.prompt or NO_PROMPT,
        shorten(thought, raw_limit),
        _reasoning_label(row) if thought else "",
    ]


def iter_samples(
    runs: Sequence[RunView],
    strips: Mapping[tuple[str, str], Strip],
    raw_limit: int,
) -> Iterator[dict[str, Any]]:
    """The browser's samples (see the module docstring; an answer's prompt is its text),
    streamed: datasets in :func:`dataset_order`, each by sample id (a source's original and
    tampered clips sit together), every run's answer to it on one card. Each answer shows
    the prompt stored with its row (:data:`NO_PROMPT` for rows of older stores).

    Args:
        runs: the runs (labels as the page shows them).
        strips: :func:`draw_thumbs`'s result.
        raw_limit: characters kept of each reply (:func:`raw_limit_for`).
    """
    for dataset, ix in dataset_order(runs):
        for pairs in _merged(runs, ix):
            s = pairs[0][1].sample
            strip = strips.get((dataset, s.id))
            n_frames = _n_frames(s) or (strip.n_frames if strip and strip.file else None)
            frame_lists: list[list[int]] = []
            answers = []
            for ri, row in pairs:
                fi = -1
                if row.frame_indices:
                    idx = list(row.frame_indices)
                    if idx not in frame_lists:
                        frame_lists.append(idx)
                    fi = frame_lists.index(idx)
                answers.append(_answer(ri, row, fi, raw_limit))
            truth = pairs[0][1]
            w = _window(pairs)
            yield {
                "id": s.id,
                "d": dataset,
                "b": s.benchmark,
                "t": s.tamper_type or s.category or "",
                "k": s.task or "",
                "p": s.polarity or "",
                "a": f"{truth.answer}. {truth.options.get(truth.answer, '')}",
                "m": str(s.video or s.image or ""),
                "v": int(s.video is not None),
                "th": strip.file if strip else "",
                "te": strip.error if strip and strip.error else "",
                "n": n_frames,
                "w": [w.start_frame, w.end_frame] if w else None,
                "fs": frame_lists,
                "r": answers,
            }


def run_entries(runs: Sequence[RunView]) -> list[dict[str, Any]]:
    """The page's run list: ``label``, ``dataset``, ``benchmark``, ``frames``, ``text_only``."""
    return [
        {
            "label": r.label or r.model,
            "dataset": r.dataset_name,
            "benchmark": r.benchmark,
            "frames": r.frames,
            "text_only": r.text_only,
        }
        for r in runs
    ]


def index_prompts(sample: dict[str, Any], prompts: dict[str, int]) -> dict[str, Any]:
    """``sample`` with each answer's prompt text replaced by its index in ``prompts``
    (text -> index, grown as new texts come)."""
    for a in sample["r"]:
        a[10] = prompts.setdefault(a[10], len(prompts))
    return sample


def build_payload(
    runs: Sequence[RunView],
    out_dir: Path,
    *,
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
) -> dict[str, Any]:
    """Every sample in one document (``runs``, ``prompts``, ``samples``, ...): for a small
    report, a test or a script; the page writes chunks instead
    (:func:`mmrobust.report.browser_files.write_browser`). Draws the thumbnails into
    ``out_dir/thumbs`` (at most ``max_thumbs``, within ``thumb_seconds``)."""
    strips = draw_thumbs(runs, out_dir, max_thumbs=max_thumbs, thumb_seconds=thumb_seconds)
    raw_limit = raw_limit_for(sum(len(r.rows) for r in runs))
    prompts: dict[str, int] = {}
    samples = [index_prompts(s, prompts) for s in iter_samples(runs, strips, raw_limit)]
    return {
        "runs": run_entries(runs),
        "prompts": list(prompts),
        "samples": samples,
        "max_thumbs": max_thumbs,
        "thumb_seconds": thumb_seconds,
        "raw_limit": raw_limit,
    }


def script_json(payload: Any) -> str:
    """``payload`` (any JSON value) as JSON safe inside ``<script type="application/json">``
    or a script file (``<``, ``>``, ``&`` escaped as ``\\u003c`` ..., so no text can end the
    element)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


__all__ = [
    "MAX_THUMBS",
    "NO_PROMPT",
    "RAW_TEXT_BUDGET",
    "THUMB_SECONDS",
    "BrowserRun",
    "build_payload",
    "dataset_order",
    "draw_thumbs",
    "index_prompts",
    "iter_samples",
    "raw_limit_for",
    "run_entries",
    "script_json",
    "shorten",
]
