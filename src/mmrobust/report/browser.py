"""The sample browser's data: one compact JSON document the page renders a page at a time.

Scale: ``index.html`` carries every sample of every run (3 runs x 20,922 clips
is 12.5 MB, see ``benchmarks/report_scale.py``), never an image. The page
script filters all samples in memory and builds the DOM for one page of cards
(50 by default), so the browser stays responsive at any size. Thumbnail strips
are JPEG files beside the page, drawn for at most ``max_thumbs`` samples (the
first ones of each dataset, taken in turn) within a time budget, and loaded
lazily; a card without one says so.

Document layout (``payload``):

* ``runs``: ``[{"label", "dataset", "benchmark", "frames", "text_only"}]``;
* ``prompts``: distinct prompt texts (a row points at one by index);
* ``samples``: one object per (dataset, sample id):
  ``id``, ``d`` (dataset), ``b`` (benchmark), ``t`` (type or category), ``k`` (task),
  ``p`` (polarity), ``a`` (truth, "A. Yes"), ``m`` (media path), ``v`` (1: a video),
  ``th`` (thumbnail, relative), ``te`` (why there is none), ``n`` (frames in the
  clip), ``w`` (tamper window ``[start, end)``), ``fs`` (distinct frame-index
  lists), ``r`` (answers).
* an answer: ``[run, raw, letter, status, correct, error, covered, pred_type,
  pred_window, frames (index into fs or -1), prompt (index into prompts), reasoning,
  reasoning label]``; for a thinking model's reply ``raw`` is the reply without its
  reasoning block and ``reasoning`` the block, shown collapsed (``<details>``).

Every string in it comes from a model, a file or the user; the page only ever
puts them in the DOM as text (``textContent``), and :func:`script_json` escapes
``<`` so the document cannot close its ``<script>`` element.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrobust.reasoning import split_reasoning
from mmrobust.report.thumbs import Strip, ThumbJob, write_strips
from mmrobust.report.view import RunView
from mmrobust.schema import Sample, Window
from mmrobust.status import Status
from mmrobust.store import StoredRow

MAX_THUMBS = 400
"""Default number of samples that get a thumbnail (clips and images)."""

THUMB_SECONDS = 20.0
"""Default time budget for drawing thumbnails (a re-run reuses the strips already drawn)."""

RAW_TEXT_BUDGET = 12_000_000
"""Characters of raw model replies the page may carry in all; long replies are cut (head … tail)."""

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


def build_payload(
    runs: Sequence[RunView],
    out_dir: Path,
    *,
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
) -> dict[str, Any]:
    """The browser's JSON document for ``runs``; draws the thumbnails into ``out_dir/thumbs``
    (at most ``max_thumbs``, within ``thumb_seconds``; ``None``: no time limit).

    Samples are ordered by family (``BenchmarkFamily.browser_rank``: tamper first, then
    MMR, then the rest); within a family by dataset and sample id (so a source's original
    and tampered clips sit together). Each answer shows the prompt stored with its row
    (:data:`NO_PROMPT` for rows of stores older than stored prompts).
    """
    by_key: dict[tuple[str, str], list[tuple[int, StoredRow]]] = {}
    for ri, run in enumerate(runs):
        for row in run.rows:
            by_key.setdefault((run.dataset_name, row.sample.id), []).append((ri, row))
    rank = {r.benchmark: r.family.browser_rank for r in runs}
    keys = sorted(by_key, key=lambda k: (rank.get(runs[by_key[k][0][0]].benchmark, 2), k[0], k[1]))
    media_keys = [k for k in keys if by_key[k][0][1].sample.video or by_key[k][0][1].sample.image]
    jobs: list[ThumbJob] = []
    job_of: dict[Path, int] = {}  # one strip per clip: the --task questions about it share it
    job_keys: list[tuple[tuple[str, str], int]] = []
    for k in _thumb_order(media_keys, max(0, max_thumbs)):
        s = by_key[k][0][1].sample
        path = Path(s.video or s.image or "")
        if not path.exists():
            continue
        if path not in job_of:
            kind = "video" if s.video is not None else "image"
            job_of[path] = len(jobs)
            window = _window(by_key[k])
            jobs.append(ThumbJob(path, kind, window=window, n_frames=_n_frames(s)))
        job_keys.append((k, job_of[path]))
    drawn = write_strips(jobs, out_dir, seconds=thumb_seconds)
    strips: dict[tuple[str, str], Strip] = {k: drawn[i] for k, i in job_keys}

    prompts: dict[str, int] = {}
    n_answers = sum(len(v) for v in by_key.values())
    raw_limit = max(160, min(4000, RAW_TEXT_BUDGET // max(1, n_answers)))
    samples = []
    for k in keys:
        pairs = by_key[k]
        s = pairs[0][1].sample
        strip = strips.get(k)
        n_frames = _n_frames(s) or (strip.n_frames if strip and strip.file else None)
        frame_lists: list[list[int]] = []
        answers = []
        for ri, row in pairs:
            pi = prompts.setdefault(row.prompt or NO_PROMPT, len(prompts))
            fi = -1
            if row.frame_indices:
                idx = list(row.frame_indices)
                if idx not in frame_lists:
                    frame_lists.append(idx)
                fi = frame_lists.index(idx)
            pw = row.extra.get("pred_window")
            shown_text, thought = _reply_parts(row)
            answers.append(
                [
                    ri,
                    shorten(shown_text, raw_limit),
                    row.letter or "",
                    row.status.value,
                    int(row.status is Status.OK and row.letter == row.answer),
                    row.error or "",
                    None if row.window_covered is None else int(row.window_covered),
                    row.extra.get("pred_type") or "",
                    [int(pw["start_frame"]), int(pw["end_frame"])]
                    if isinstance(pw, Mapping)
                    else None,
                    fi,
                    pi,
                    shorten(thought, raw_limit),
                    _reasoning_label(row) if thought else "",
                ]
            )
        truth = pairs[0][1]
        samples.append(
            {
                "id": s.id,
                "d": k[0],
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
                "w": [w.start_frame, w.end_frame] if (w := _window(pairs)) else None,
                "fs": frame_lists,
                "r": answers,
            }
        )
    return {
        "runs": [
            {
                "label": r.label or r.model,
                "dataset": r.dataset_name,
                "benchmark": r.benchmark,
                "frames": r.frames,
                "text_only": r.text_only,
            }
            for r in runs
        ],
        "prompts": list(prompts),
        "samples": samples,
        "max_thumbs": max_thumbs,
        "thumb_seconds": thumb_seconds,
        "raw_limit": raw_limit,
    }


def script_json(payload: Mapping[str, Any]) -> str:
    """``payload`` as JSON safe inside ``<script type="application/json">`` (``<``, ``>``, ``&``
    escaped as ``\\u003c`` ..., so no text can end the element)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


__all__ = [
    "MAX_THUMBS",
    "NO_PROMPT",
    "RAW_TEXT_BUDGET",
    "THUMB_SECONDS",
    "BrowserRun",
    "build_payload",
    "script_json",
    "shorten",
]
