"""Sample processing: one work item -> stored rows, and the one extract -> judge -> stop path.

* :class:`SampleProcessor` turns a :class:`~mmrobust.run.executors.WorkItem`
  into rows: prompt, media (frames from the frame cache), one
  ``Model.generate`` call, then :func:`read_reply`. Pure with respect to the
  store (returns rows; the driver writes them), so it runs in threads or Ray
  replicas alike.
* :func:`read_reply` is the only place a reply becomes a letter: extraction
  (``mmrobust.extract``), then the LLM judge for a reply extraction cannot
  parse. Eval and rescore both call it.
* :class:`StopRules` (``run/stop.py``, re-exported here) is the only place a run decides to stop by itself:
  ``ABORT_AFTER`` consecutive transient failures, as many consecutive judge
  backend failures, a server limit every sample will hit (a count limit at once;
  a limit only some samples hit when nearly all of the first samples hit it,
  else those samples are stored ``rejected`` and the run goes on). Eval (the
  driver) and rescore (the judge rule) share it.
* :func:`score_rows` computes ``metrics.json`` over stored rows.

Row statuses: a ``Sample.error`` is ``data_error`` without a model call; a
``MediaError`` while decoding is ``media_error``; a model raising for a batch
gives ``model_error`` rows; an empty reply is ``empty_reply``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.datasets import Sample
from mmrobust.extract import extract
from mmrobust.families import ScoreOptions, get_family
from mmrobust.judge import Judge
from mmrobust.media.sampling import FramePolicy, window_coverage
from mmrobust.metrics import compute_metrics
from mmrobust.models.base import Model, Request, Response
from mmrobust.official import ReplyPath, reply_path_for
from mmrobust.prompts import PromptConfig, build_prompt, prompt_record
from mmrobust.reasoning import reasoning_columns, reasoning_summary, split_reasoning
from mmrobust.records import ScoredRecord
from mmrobust.run.executors import WorkItem
from mmrobust.run.stop import (  # re-exported: the stop rules lived here
    ABORT_AFTER,
    COUNT_LIMITS,
    LIMIT_SHARE,
    LIMIT_WINDOW,
    NOT_ASKED,
    RunAborted,
    StopRules,
    judge_failed,
)
from mmrobust.status import Status
from mmrobust.store import RunKey, StoredRow
from mmrobust.tasks import option_keys

log = logging.getLogger("mmrobust")


@dataclass(frozen=True)
class Reading:
    """What extraction (and the judge) made of one reply.

    Attributes:
        letter: the option letter, or ``None``.
        status: ``ok``, ``parse_fail`` or ``judge_error``.
        rule: the rule that decided (``lenient:option-text``, ``judge``, ``judge:none`` ...).
        error: the judge's reason for giving no verdict, else ``None``.
        judge_cause: the judge backend's own failure status (``api_error`` ...), else ``None``.
    """

    letter: str | None
    status: Status
    rule: str
    error: str | None = None
    judge_cause: Status | None = None


def read_reply(
    text: str,
    options: dict[str, str],
    *,
    sample: Sample,
    answer: str | None,
    mode: str,
    reference: str | None = None,
    judge: Judge | None = None,
    reasoning: str | None = None,
    reply_path: ReplyPath = "local",
) -> Reading:
    """Extract the letter of ``text`` (``mode``: strict | lenient | official); a reply that
    does not parse goes to ``judge`` when one is given. Never raises for a bad reply.
    ``reasoning``: the server's separate reasoning field; ``reply_path``: ``"api"`` when the
    reply came from an HTTP API (official mode models the reference's wrapper strip), see
    :func:`mmrobust.extract.extract`.

    Raises:
        ValueError: unknown extraction mode.
    """
    ex = extract(
        text, options, mode=mode, benchmark=sample.benchmark, answer=answer, reference=reference,
        reasoning=reasoning, reply_path=reply_path,
    )  # fmt: skip
    if ex.status is Status.PARSE_FAIL and judge is not None:
        verdict = judge(sample.id, sample.question, options, text)
        return Reading(verdict.letter, verdict.status, verdict.rule, verdict.error, verdict.cause)
    return Reading(ex.letter, ex.status, ex.rule, getattr(ex, "error", None))


class SampleProcessor:
    """Turns a work item into stored rows: prompt, media, model call, extraction.

    Pure with respect to the store (returns rows; the caller writes them).
    """

    def __init__(
        self,
        model: Model,
        key: RunKey,
        *,
        prompt_config: PromptConfig,
        policy: FramePolicy,
        extract_mode: str,
        text_only: bool,
        cache: Any = None,
        judge: Judge | None = None,
        reference: str | None = None,
    ) -> None:
        from mmrobust.datasets.windows import WindowDeriver
        from mmrobust.media.provider import FrameProvider

        self.model = model
        self.reference = reference
        self.judge = judge
        self.key = key
        self.prompt_config = prompt_config
        self.policy = policy
        self.extract_mode = extract_mode
        self.text_only = text_only
        use_cache = not text_only and model.media_input == "frames"
        self.frames = FrameProvider(policy, model.frame_encoding(), cache if use_cache else None)
        self.windows = WindowDeriver()

    def _frames(
        self, sample: Sample
    ) -> tuple[
        tuple[np.ndarray, ...], tuple[bytes, ...], tuple[int, ...], float | None, int | None
    ]:
        """Decoded frames (when the model reads arrays), JPEGs, indices, the clip's fps and frame count.

        Raises ``MediaError``.
        """
        if sample.video is not None:
            clip, arrays = self.frames.clip(
                sample.video, arrays=self.model.frame_format == "arrays"
            )
            return arrays, clip.jpegs, clip.indices, float(clip.fps), clip.n_frames
        if sample.image is not None:
            return (load_image(sample.image),), (), (), None, None
        return (), (), (), None, None

    def _row(self, sample: Sample, status: Status, **kw: Any) -> StoredRow:
        return StoredRow(sample=sample, key=self.key, status=status, created_at=time.time(), **kw)

    def __call__(self, item: WorkItem) -> list[StoredRow]:
        """Process one batch; never raises for a per-sample failure."""
        from mmrobust.media import MediaError

        rows: dict[int, StoredRow] = {}
        pending: list[tuple[int, Sample, Request, dict[str, Any]]] = []
        for i, sample in enumerate(item.samples):
            prompt = build_prompt(sample, self.prompt_config)
            shown = {
                "answer": prompt.answer,
                "options": prompt.options,
                "prompt": prompt_record(prompt),
                "repeat": item.repeat,
            }
            if sample.error:
                rows[i] = self._row(
                    sample, Status.DATA_ERROR, error=sample.error, rule="data_error", **shown
                )
                continue
            mode = "none" if self.text_only else self.model.media_input
            frames: tuple[np.ndarray, ...] = ()
            jpegs: tuple[bytes, ...] = ()
            indices: tuple[int, ...] = ()
            fps: float | None = None
            n_frames: int | None = None
            try:
                if mode == "frames":
                    frames, jpegs, indices, fps, n_frames = self._frames(sample)
            except (MediaError, OSError, ValueError) as exc:
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                rows[i] = self._row(
                    sample, Status.MEDIA_ERROR, error=msg, rule="media_error", **shown
                )
                continue
            req = Request(
                sample_id=sample.id,
                prompt=prompt.text,
                question=prompt.question,
                options=prompt.options,
                option_keys=option_keys(sample, prompt.options),
                system=prompt.system,
                assistant_prefill=prompt.assistant_prefill,
                frames=frames,
                frame_indices=indices,
                video_fps=fps,
                video_frame_count=n_frames,
                media_offset=prompt.media_offset,
                video=None if mode == "none" else sample.video,
                image=None if mode == "none" else sample.image,
                frame_jpegs=jpegs,
                repeat=item.repeat,
            )
            meta: dict[str, Any] = dict(shown)
            derived = self.windows(sample) if mode != "none" else None
            if derived is not None:
                meta["derived_window"] = derived.as_dict()
            if indices:
                meta["frame_indices"] = list(indices)
                meta["window_covered"] = window_coverage(
                    indices,
                    sample.window or (derived.output if derived else None),
                    dropped=_dropped_frames(sample) or (derived.dropped if derived else None),
                )
            pending.append((i, sample, req, meta))
        if pending:
            t0 = time.perf_counter()
            try:
                responses = self.model.generate([p[2] for p in pending])
                if len(responses) != len(pending):
                    raise RuntimeError(
                        f"model returned {len(responses)} responses for {len(pending)} requests"
                    )
            except Exception as exc:  # a backend failing a whole batch
                msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                dt = (time.perf_counter() - t0) / len(pending)
                responses = [
                    Response(text="", status=Status.MODEL_ERROR, error=msg, latency_s=dt)
                    for _ in pending
                ]
            for (i, sample, _req, meta), resp in zip(pending, responses, strict=True):
                rows[i] = self._scored_row(sample, resp, meta)
        return [rows[i] for i in sorted(rows)]

    def _scored_row(self, sample: Sample, resp: Response, meta: dict[str, Any]) -> StoredRow:
        meta = dict(meta)
        extra = dict(resp.extra)
        if "derived_window" in meta:
            extra["derived_window"] = meta.pop("derived_window")
        common: dict[str, Any] = {
            "raw_text": resp.text or "",
            "latency_s": resp.latency_s,
            "prompt_tokens": resp.prompt_tokens,
            "completion_tokens": resp.completion_tokens,
            "extra": extra,
            **meta,
        }
        if meta.get("frame_indices"):
            shown = meta["frame_indices"]
            common["extra"]["frames_repeated"] = len(shown) - len(set(shown))
        split = split_reasoning(resp.text or "", getattr(resp, "reasoning", None))
        common.update(reasoning_columns(split))
        cut = split.cut and not split.answer.strip() and self.extract_mode != "official"
        if cut and resp.status in (Status.OK, Status.EMPTY_REPLY):  # cut inside its reasoning
            return self._row(sample, Status.PARSE_FAIL, rule="reasoning:cut", **common)
        if resp.status is not Status.OK:
            status = resp.status if resp.status.is_error else Status.MODEL_ERROR
            return self._row(sample, status, error=resp.error, rule=status.value, **common)
        if not (resp.text or "").strip():  # every backend: an empty answer is no answer
            return self._row(
                sample, Status.EMPTY_REPLY, error="empty reply", rule="empty_reply", **common
            )
        reading = read_reply(
            resp.text or "",
            meta["options"],
            sample=sample,
            answer=meta["answer"],
            mode=self.extract_mode,
            reference=self.reference,
            judge=self.judge,
            reasoning=getattr(resp, "reasoning", None),
            reply_path=reply_path_for(self.model.name),
        )
        if reading.judge_cause is not None:  # the judge's backend failed: kept for the stop rule
            common["extra"] = {**common["extra"], "judge_status": reading.judge_cause.value}
        return self._row(
            sample,
            reading.status,
            letter=reading.letter,
            rule=reading.rule,
            error=reading.error,
            **common,
        )


def _dropped_frames(sample: Sample) -> int | None:
    """Frames a ``dropping`` clip lost (its source window length), from the manifest meta."""
    src = sample.meta.get("window_source")
    if sample.tamper_type != "dropping" or not isinstance(src, dict):
        return None
    return int(src["end_frame"]) - int(src["start_frame"])


def load_image(path: str | Path) -> np.ndarray:
    """Read an image as ``(H, W, 3) uint8 RGB``, longer side at most
    ``media.limits.MAX_FRAME_SIDE`` (3584 px; larger images are downscaled):
    :func:`mmrobust.media.image.read_image`, which ``finetune`` reads its images with too.

    Raises:
        MediaError: unreadable, not an image, or over ``MAX_FRAME_PIXELS``.
    """
    from mmrobust.media.image import read_image

    return read_image(path)


def score_rows(
    rows: Iterable[StoredRow],
    *,
    benchmark: str,
    failures: str,
    n_resamples: int,
    seed: int,
    defects: Sequence[str] = (),
    extract_mode: str = "lenient",
    repeats: int = 1,
    ordered: bool = False,
) -> dict[str, Any]:
    """Metrics over stored rows (the family of ``benchmark`` scores them); always has ``defects``.

    ``repeats`` (``--repeats K``): the family scores repeat 0 (the headline, as a run
    without repeats), and with ``K > 1`` the ``stability`` block
    (:func:`mmrobust.metrics.stability.sampling_stability`) is added over repeats
    ``0 .. K-1``; rows of other repeats (a run once asked with a larger ``K``) are ignored.

    Rows are scored in a canonical order (by sample id, then repeat), so ``metrics.json``
    (confidence intervals included) is byte-identical whatever order the rows
    were stored in: worker count, completion order, kill and resume. ``ordered``: ``rows``
    already come in that order (``ResultStore.iter_rows(..., by_sample=True)``); then, for
    a family that ``streams`` and without repeats, they are read once as they come and never
    held (memory does not grow with the rows); else they are sorted here.
    ``extract_mode == "official"`` selects the reference's scoring: MMR pairs
    by file position; tamper adds ``official_accuracy`` when ``failures`` is
    ``"wrong"``.
    """
    family = get_family(benchmark)
    asked: Iterable[StoredRow] = (r for r in rows if r.repeat < repeats)
    if not ordered:
        asked = sorted(asked, key=lambda r: (r.sample.id, r.repeat))
    if repeats > 1 or not family.streams:
        asked = list(asked)  # read again (stability) or scored as a list
    reasoning_rows: list[tuple[str | None, int | None, int | None]] = []
    derived = [0]

    def first_asks() -> Iterator[ScoredRecord]:
        for r in asked:
            if r.repeat != 0:
                continue
            if r.reasoning_form is not None and r.reasoning_form != "none":
                reasoning_rows.append((r.reasoning_form, r.reasoning_chars, r.completion_tokens))
            derived[0] += "derived_window" in r.extra
            yield r.to_record()

    records: Iterable[ScoredRecord] = first_asks()
    if not family.streams:
        records = list(records)
    official = extract_mode == "official"
    kw = family.score_options(ScoreOptions(failures, n_resamples, seed, tuple(defects), official))
    metrics = compute_metrics(records, benchmark, **kw)
    metrics.setdefault("defects", list(defects))
    reasoning = reasoning_summary(reasoning_rows)
    if reasoning is not None:  # thinking models: replies cut inside their reasoning
        metrics["reasoning"] = reasoning
    if derived[0]:
        metrics["windows_derived"] = derived[0]  # released clips: windows by the released rule
    if repeats > 1:
        from mmrobust.metrics.stability import sampling_stability

        assert isinstance(asked, list)
        metrics["stability"] = sampling_stability(
            [(r.repeat, r.to_record()) for r in asked],
            repeats=repeats,
            failures=failures,
            n_resamples=n_resamples,
            seed=seed,
        )
    return metrics


__all__ = [
    "ABORT_AFTER",
    "COUNT_LIMITS",
    "LIMIT_SHARE",
    "LIMIT_WINDOW",
    "NOT_ASKED",
    "Reading",
    "RunAborted",
    "SampleProcessor",
    "StopRules",
    "judge_failed",
    "load_image",
    "read_reply",
    "score_rows",
]
