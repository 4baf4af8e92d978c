"""Runs a dataset through a model into the results store, then scores it.

Flow (DESIGN.md): ``Sample`` -> prompt -> ``Request`` (text + frames) ->
``Model.generate`` -> extraction -> ``StoredRow`` (committed at once) ->
metrics over the stored rows -> ``run.json`` / ``metrics.json``.

Work is cut into :class:`WorkItem` batches and handed to an
:class:`Executor`; executors only *compute* rows, the main thread writes
them. All state lives in the store, so a later distributed executor can
take over without changing the store, the metrics or the CLI.

* A ``Sample.error`` becomes a ``data_error`` row without calling the model.
* A ``MediaError`` while decoding becomes a ``media_error`` row.
* A model that raises for a batch gives ``model_error`` rows for that batch.
* An empty reply is ``empty_reply``; a server's permanent refusal is
  ``rejected`` (both final); a refusal that names a server limit every sample
  will hit stops the run at once with the fix (``models/limits.py``).
* Ctrl-C cancels pending work, keeps every row already written and still
  writes ``metrics.json`` for what finished (``RunResult.interrupted``).
* Re-running the same command skips finished rows (resume).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mmrobust import __version__
from mmrobust.datasets import Dataset, Sample, load_dataset
from mmrobust.extract import extract
from mmrobust.judge import Judge, load_judge
from mmrobust.media.sampling import FramePolicy, window_coverage
from mmrobust.metrics import compute_metrics
from mmrobust.models.base import Model, Request, Response
from mmrobust.official import (
    reference_block,
    reference_versions,
    reply_path_for,
    tamper_reference,
)
from mmrobust.prompts import PromptConfig, build_prompt, prompt_record
from mmrobust.reasoning import (
    field_reasoning,
    reasoning_columns,
    reasoning_summary,
    split_reasoning,
)
from mmrobust.redact import scrub_args
from mmrobust.runlock import LOCK_FILE, RunLock
from mmrobust.status import Status
from mmrobust.store import (
    STORE_FILE,
    TRANSIENT,
    ResultStore,
    RunFolderWriteError,
    RunKey,
    StoredRow,
)
from mmrobust.tasks import check_task_options, derive_task, option_keys, task_fingerprint

RUN_FILE = "run.json"
METRICS_FILE = "metrics.json"


@dataclass
class EvalConfig:
    """Everything ``mmrobust eval`` takes (also the ``config`` block of ``run.json``).

    ``official`` switches to the reference protocol: for tamper data
    VLMEvalKit's prompt (system text of the ``reference`` version; question,
    frames, instruction; ``(A) Yes`` options; prefill), 8 segment-centre
    frames with the reference's repeats on short clips, its decision rules,
    every failed row scored as wrong; for MMR the record's raw question text,
    MMR's extractor and pairing by file position.

    ``reference`` names the VLMEvalKit version official tamper mode reproduces
    (:func:`mmrobust.official.tamper_reference`; default: the integration
    commit ``eb58e9e``, the paper's numbers). Recorded in ``run.json``.

    ``task`` picks the question asked about each clip of a tamper dataset:
    ``detect`` (the paper's yes/no question, default), ``type``, ``when`` or
    ``leading`` (``mmrobust.tasks``, docs/tasks.md); ``seed`` also seeds their
    option order and the leading presuppositions.
    """

    data: str
    model: str
    out: str
    model_args: dict[str, str] = field(default_factory=dict)
    format: str | None = None
    images: str | None = None
    text_only: bool = False
    prompt: str | None = None
    option_style: str = "paper"
    permute: int = 0
    task: str = "detect"
    frames: int = 8
    fps: float | None = None
    max_frames: int | None = None
    extract: str = "lenient"
    official: bool = False
    limit: int | None = None
    workers: int | None = None
    seed: int = 0
    cache_dir: str | None = None
    cache_size: str | None = None
    n_resamples: int = 1000
    judge: str | None = None
    judge_args: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    retry_failed: bool = False

    def policy(self) -> FramePolicy:
        """The frame sampling policy these options describe."""
        if self.official:
            return FramePolicy(mode="segments", n_frames=8, short_clips="repeat")
        if self.fps is not None:
            return FramePolicy(mode="fps", fps=self.fps, max_frames=self.max_frames)
        return FramePolicy(mode="segments", n_frames=self.frames)

    def prompt_config(self) -> PromptConfig:
        """The prompt configuration these options describe."""
        style = "vlmevalkit" if self.official else self.option_style
        return PromptConfig(
            template=self.prompt,  # type: ignore[arg-type]
            option_style=style,  # type: ignore[arg-type]
            permute=self.permute,
            official=self.official,
            reference=tamper_reference(self.reference).name if self.official else None,
        )

    def extract_mode(self) -> str:
        """The extraction mode (``official`` when ``official`` is set)."""
        return "official" if self.official else self.extract

    def failures(self) -> str:
        """Metric failure policy: reference scoring counts parse failures as wrong."""
        return "wrong" if self.official else "exclude"


@dataclass(frozen=True)
class WorkItem:
    """A batch of samples for one ``Model.generate`` call."""

    samples: tuple[Sample, ...]


class Executor(Protocol):
    """Runs ``fn`` over work items, yielding each item's result as it completes (any order)."""

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield ``fn(item)`` for every item."""
        ...

    def cancel(self) -> None:
        """Stop starting new items (items in flight may finish; their results are dropped)."""
        ...


class SerialExecutor:
    """Runs items one after another in the calling thread."""

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield ``fn(item)`` for every item, in order."""
        for item in items:
            yield fn(item)

    def cancel(self) -> None:
        """Nothing to cancel."""


class ThreadExecutor:
    """A bounded thread pool (remote models: network-bound; decoding releases the GIL).

    At most ``2 * workers`` items are submitted ahead of completion.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield ``fn(item)`` for every item, as each completes."""
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="mmrobust")
        pending: set[Future[list[StoredRow]]] = set()
        it = iter(items)
        try:
            while True:
                while len(pending) < 2 * self.workers:
                    item = next(it, None)
                    if item is None:
                        break
                    pending.add(self._pool.submit(fn, item))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield fut.result()
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Drop queued items; do not wait for items in flight."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def describe_executor(executor: Executor) -> dict[str, Any]:
    """The ``executor`` block of ``run.json``: the executor's ``describe()``, else its kind."""
    describe = getattr(executor, "describe", None)
    if callable(describe):
        return dict(describe())
    if isinstance(executor, ThreadExecutor):
        return {"name": "threads", "workers": executor.workers}
    return {"name": "serial" if isinstance(executor, SerialExecutor) else type(executor).__name__}


@dataclass
class RunResult:
    """Outcome of :func:`run_eval`.

    Attributes:
        run_dir: the run folder.
        metrics: the contents of ``metrics.json``.
        n_total: samples selected.
        n_skipped: samples already finished (resumed).
        n_new: rows written by this call.
        interrupted: the run stopped early (Ctrl-C, or aborted).
        aborted: why the runner stopped by itself (consecutive transient failures), else ``None``.
        first_error: ``status: error`` of the first failed row, if any (for the console).
        nothing_scored: why not one selected sample got a scored answer (every
            row failed or was unparseable), else ``None``; the CLI exits non-zero.
    """

    run_dir: Path
    metrics: dict[str, Any]
    n_total: int
    n_skipped: int
    n_new: int
    interrupted: bool = False
    aborted: str | None = None
    first_error: str | None = None
    nothing_scored: str | None = None


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON via a temporary file and a rename (the old file stays whole).

    Raises:
        RunFolderWriteError: the file cannot be written (full disk, quota, read-only).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunFolderWriteError(f"cannot write {path}: {exc.strerror or exc}") from None


def _git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version(), "mmrobust": __version__}
    for pkg in (
        "numpy",
        "av",
        "scikit-learn",
        "scipy",
        "pydantic",
        "openai",
        "torch",
        "transformers",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            continue
    return out


def default_cache_dir() -> Path:
    """``<mmrobust cache>/frames``: ``$MMROBUST_CACHE``, ``$XDG_CACHE_HOME/mmrobust`` or
    ``~/.cache/mmrobust`` (``mmrobust.paths.cache_root``)."""
    from mmrobust.paths import cache_root

    return cache_root() / "frames"


def frame_cache(config: EvalConfig) -> Any:
    """The ``FrameCache`` ``--cache-dir``/``--cache-size`` describe, or ``None`` (``none`` or
    a size of 0).

    Raises:
        ValueError: ``--cache-size`` is not a size.
    """
    from mmrobust.media.cache import DEFAULT_MAX_BYTES, FrameCache, parse_size

    size = parse_size(config.cache_size) if config.cache_size else DEFAULT_MAX_BYTES
    if (config.cache_dir or "").strip().lower() in ("none", "off") or size == 0:
        return None
    return FrameCache(Path(config.cache_dir) if config.cache_dir else default_cache_dir(), size)


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
        from mmrobust.media.provider import FrameProvider
        from mmrobust.tamper.released import WindowDeriver

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
        ex = extract(
            resp.text or "",
            meta["options"],
            mode=self.extract_mode,
            benchmark=sample.benchmark,
            answer=meta["answer"],
            reference=self.reference,
            reasoning=getattr(resp, "reasoning", None),
            reply_path=reply_path_for(self.model.name),
        )
        if ex.status is Status.PARSE_FAIL and self.judge is not None:
            verdict = self.judge(sample.id, sample.question, meta["options"], resp.text or "")
            if verdict.cause is not None:  # the judge's backend failed: kept for the stop rule
                common["extra"] = {**common["extra"], "judge_status": verdict.cause.value}
            return self._row(
                sample,
                verdict.status,
                letter=verdict.letter,
                rule=verdict.rule,
                error=verdict.error,
                **common,
            )
        return self._row(sample, ex.status, letter=ex.letter, rule=ex.rule, **common)


def _dropped_frames(sample: Sample) -> int | None:
    """Frames a ``dropping`` clip lost (its source window length), from the manifest meta."""
    src = sample.meta.get("window_source")
    if sample.tamper_type != "dropping" or not isinstance(src, dict):
        return None
    return int(src["end_frame"]) - int(src["start_frame"])


def load_image(path: str | Path) -> np.ndarray:
    """Read an image as ``(H, W, 3) uint8 RGB``, longer side at most
    ``media.limits.MAX_FRAME_SIDE`` (3584 px; larger images are downscaled).

    Raises:
        MediaError: unreadable, not an image, or over ``MAX_FRAME_PIXELS``.
    """
    import cv2

    from mmrobust.media import MediaError, limits

    data = np.fromfile(str(path), dtype=np.uint8) if Path(path).is_file() else None
    img = cv2.imdecode(data, cv2.IMREAD_COLOR) if data is not None and data.size else None
    if img is None:
        raise MediaError(path, "cannot read image")
    reason = limits.too_large(img.shape[1], img.shape[0])
    if reason is not None:
        raise MediaError(path, reason)
    fit = limits.fit_within(img.shape[1], img.shape[0])
    if fit is not None:
        img = cv2.resize(img, fit, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))


def batches(samples: Sequence[Sample], size: int) -> Iterator[WorkItem]:
    """Cut samples into work items of at most ``size``."""
    size = max(1, size)
    for i in range(0, len(samples), size):
        yield WorkItem(tuple(samples[i : i + size]))


def run_key(
    model: Model,
    prompt_config: PromptConfig,
    policy: FramePolicy,
    *,
    text_only: bool,
    task: str = "detect",
) -> RunKey:
    """The store key of a configuration: model fingerprint, prompt and sampling-policy hashes.

    A ``--task`` other than ``detect`` is part of the prompt hash (with the
    template file's digest), so a run folder never mixes tasks.
    """
    mode = "none" if text_only else model.media_input
    media: dict[str, Any] = {"policy": asdict(policy), "media": mode}
    if mode == "frames":  # the pixels a model sees are the JPEGs of its frame encoding
        media["encoding"] = model.frame_encoding().fingerprint()
    prompt_fp = prompt_config.fingerprint()
    if task != "detect":
        prompt_fp = _hash({"prompt": prompt_fp, **task_fingerprint(task)})
    return RunKey(
        model_fp=_hash(model.fingerprint()),
        prompt_fp=prompt_fp,
        policy_fp=_hash(media),
    )


def config_record(config: EvalConfig) -> dict[str, Any]:
    """The ``config`` block of ``run.json``: the options, with secrets and URL credentials masked."""
    record = asdict(config)
    record["model_args"] = scrub_args(config.model_args)
    record["judge_args"] = scrub_args(config.judge_args)
    return record


def run_block(config: EvalConfig, model: Model, benchmark: str | None = None) -> dict[str, Any]:
    """The ``run`` block of ``metrics.json``: model, prompt, frames policy, extraction mode.

    ``reference`` names the reference code (repository, commit) official
    extraction reproduces for ``benchmark``, else ``None``; an official tamper run also
    names ``prompt_reference`` (the version whose prompt was sent) and
    ``decision_reference`` (the version whose rules decided; ``rescore --reference`` changes
    only this one), :func:`mmrobust.official.reference_versions`.
    """
    pc = config.prompt_config()
    official = config.extract_mode() == "official"
    block: dict[str, Any] = {
        "model": config.model,
        "task": config.task,
        "model_args": scrub_args(config.model_args),
        "model_fingerprint": model.fingerprint(),
        "prompt": {
            "template": pc.template or "default",
            "option_style": pc.option_style,
            "permute": pc.permute,
            "official": pc.official,
            **({"reference": pc.reference} if pc.reference else {}),
        },
        "frames": "none (text only)"
        if config.text_only or model.media_input == "none"
        else (
            "whole video (model reads the file)"
            if model.media_input == "path"
            else config.policy().describe()
        ),
        "frame_encoding": model.frame_encoding().describe()
        if not config.text_only and model.media_input == "frames"
        else None,
        "extraction": config.extract_mode(),
        "failures": config.failures(),
        "text_only": config.text_only,
    }
    ref = reference_block(benchmark or "", config.reference) if official else None
    return {
        **block,
        "reference": ref,
        **(reference_versions(pc.reference, ref) if official and pc.reference else {}),
    }


def score_rows(
    rows: Sequence[StoredRow],
    *,
    benchmark: str,
    failures: str,
    n_resamples: int,
    seed: int,
    defects: Sequence[str] = (),
    extract_mode: str = "lenient",
) -> dict[str, Any]:
    """Metrics over stored rows (dispatching on ``benchmark``); always has ``defects``.

    Rows are scored in a canonical order (by sample id), so ``metrics.json``
    (confidence intervals included) is byte-identical whatever order the rows
    were stored in: worker count, completion order, kill and resume.
    ``extract_mode == "official"`` selects the reference's scoring: MMR pairs
    by file position; tamper adds ``official_accuracy`` when ``failures`` is
    ``"wrong"``.
    """
    records = [r.to_record() for r in sorted(rows, key=lambda r: r.sample.id)]
    official = extract_mode == "official"
    kw: dict[str, Any] = {}
    if benchmark == "tamper":
        kw = {
            "failures": failures,
            "n_resamples": n_resamples,
            "seed": seed,
            "official": official and failures == "wrong",
        }
    elif benchmark == "mmr":
        kw = {
            "n_boot": n_resamples,
            "seed": seed,
            "defects": list(defects),
            "pairing": "position" if official else "content",
        }
    elif benchmark.startswith("tamper-"):  # --task type|when|leading
        kw = {"failures": failures, "n_resamples": n_resamples, "seed": seed, "defects": defects}
    metrics = compute_metrics(records, benchmark, **kw)
    metrics.setdefault("defects", list(defects))
    reasoning = reasoning_summary(
        (r.reasoning_form, r.reasoning_chars, r.completion_tokens) for r in rows
    )
    if reasoning is not None:  # thinking models: replies cut inside their reasoning
        metrics["reasoning"] = reasoning
    derived = sum(1 for r in rows if "derived_window" in r.extra)
    if derived:
        metrics["windows_derived"] = derived  # released clips: windows by the released rule
    return metrics


ABORT_AFTER = 8
"""A run stops after this many consecutive transient failures (unreachable server, dead model)."""


class RunAborted(RuntimeError):
    """Raised by the driver when every recent sample failed the same transient way.

    Attributes:
        written: rows stored before stopping.
    """

    def __init__(self, message: str, written: int) -> None:
        super().__init__(message)
        self.written = written


class RunConflictError(ValueError):
    """The run folder already holds a run of another model, configuration or dataset."""


def _resolved(source: str) -> str:
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
        RunConflictError: ``run_dir/run.json`` describes a different run.
    """
    path = run_dir / RUN_FILE
    if not path.is_file():
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        old_key = RunKey(**old["key"])
        old_data = old.get("dataset", {})
    except (ValueError, KeyError, TypeError, RecursionError):
        raise RunConflictError(
            f"{path} is not a readable run.json; use a new --out or remove the folder"
        ) from None
    what = []
    if old_key != key:
        was = old.get("config", {})
        what.append(
            f"model/prompt/frames/task (was {was.get('model')!r}, task "
            f"{was.get('task', 'detect')!r})"
        )
    if not same_source(old_data.get("source"), dataset.source):
        what.append(f"dataset (was {old_data.get('source')!r})")
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
        hint = "" if config.images else " (pass --images DIR, or --text-only for a text-only run)"
        raise DatasetError(
            f"none of the {len(samples)} samples can be evaluated: {samples[0].error}{hint}"
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


def nothing_scored(rows: Sequence[StoredRow]) -> str | None:
    """Why no row got a scored answer (all failed or unparseable), or ``None`` if one did."""
    if not rows or any(r.status is Status.OK for r in rows):
        return None
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    spread = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    first = rows[0]
    detail = (
        f"first reply {first.raw_text[:60]!r} matches no option ({', '.join(first.options)})"
        if first.status is Status.PARSE_FAIL
        else f"first: {first.status.value}: {first.error or 'no detail'}"
    )
    return f"no sample could be scored: {len(rows)} of {len(rows)} rows are {spread}; {detail}"


def unfinished(
    store: ResultStore, key: RunKey, samples: Sequence[Sample], *, retry_failed: bool = False
) -> list[Sample]:
    """Samples without a finished row under ``key``.

    A row counts as finished only if its status is not transient and the stored
    sample equals the current one (same media path, window, options, meta such
    as the clip's sha256), so a rebuilt or edited dataset is asked again.
    ``retry_failed`` also asks again every sample whose row is a final error
    (``rejected``, ``empty_reply``, ``media_error`` ...; ``Status.is_error``).
    """
    stored = {
        r.sample.id: r
        for r in store.rows(key)
        if r.status not in TRANSIENT and not (retry_failed and r.status.is_error)
    }
    return [s for s in samples if s.id not in stored or stored[s.id].sample != s]


def select_samples(dataset: Dataset, limit: int | None) -> list[Sample]:
    """The first ``limit`` samples (all when ``None``)."""
    return dataset.samples if limit is None else dataset.samples[: max(0, limit)]


def run_eval(
    config: EvalConfig,
    *,
    progress: bool = True,
    model: Model | None = None,
    executor: Executor | None = None,
) -> RunResult:
    """Evaluate ``config.model`` on ``config.data``; write the run folder; return the metrics.

    Args:
        config: the run configuration.
        progress: show a rich progress bar with ETA on stderr.
        model: an already-built model (else built from ``config.model``).
        executor: runs the work items (default: threads when the model or
            ``config.workers`` allows several at once, else serial); ``run.json``
            records its ``describe()`` under ``executor``.

    Returns:
        A :class:`RunResult`; ``metrics.json``, ``run.json`` and ``results.sqlite``
        are in ``config.out``.

    Raises:
        FileNotFoundError, DatasetError, UnknownNameError: the dataset cannot be loaded.
        ValueError, UnknownNameError: bad model spec or options.
        RunLockedError: another process is running in ``config.out``.
        RunFolderWriteError: ``config.out`` cannot be written (full disk); rows
            committed before are kept and a re-run resumes.
    """
    from mmrobust.models.spec import load_model

    policy = config.policy()  # validates frame options early
    check_task_options(config.task, prompt=config.prompt, official=config.official)
    if config.reference is not None:
        tamper_reference(config.reference)  # an unknown version fails before any work
    pconf = config.prompt_config()
    dataset = load_dataset(
        config.data, config.format, images=config.images, text_only=config.text_only
    )
    dataset = derive_task(dataset, config.task, seed=config.seed)
    samples = select_samples(dataset, config.limit)
    check_nonempty(dataset, samples, config)
    check_usable(samples, config)
    run_dir = Path(config.out)
    created = not run_dir.exists()
    lock = RunLock(run_dir).acquire()  # one process per run folder, from here to the end
    try:
        model = model or load_model(config.model, config.model_args)
        refusal = (
            None
            if config.judge
            else model.cannot_answer(
                [s.options for s in samples], [option_keys(s, s.options) for s in samples]
            )
        )
        if refusal:  # said before any request (a judge may still read such replies)
            model.close()
            raise ValueError(refusal)
        judge = load_judge(config.judge, config.judge_args) if config.judge else None
        key = run_key(model, pconf, policy, text_only=config.text_only, task=config.task)
        check_same_run(run_dir, key, dataset)  # under the lock: no other run can slip in
        return _evaluate(
            config, dataset, samples, model, judge, key, progress=progress, executor=executor
        )
    finally:
        lock.release()
        if created and {p.name for p in run_dir.iterdir()} <= {LOCK_FILE}:
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing was run: leave no folder


def _evaluate(
    config: EvalConfig,
    dataset: Dataset,
    samples: list[Sample],
    model: Model,
    judge: Judge | None,
    key: RunKey,
    *,
    progress: bool,
    executor: Executor | None = None,
) -> RunResult:
    """The body of :func:`run_eval`, run while the run folder's lock is held."""
    policy = config.policy()
    pconf = config.prompt_config()
    run_dir = Path(config.out)
    cache = frame_cache(config)
    run_info: dict[str, Any] = {
        "mmrobust_version": __version__,
        "config": config_record(config),
        "dataset": {
            "name": dataset.name,
            "benchmark": dataset.benchmark,
            "source": _resolved(dataset.source),
            "data_hash": dataset.data_hash,
            "n_samples": len(dataset.samples),
            "n_selected": len(samples),
            "defects": dataset.defects,
            **dataset.info,
        },
        "key": asdict(key),
        "run": {
            **run_block(config, model, dataset.benchmark),
            "judge": judge.describe() if judge else None,
        },
        "policy": asdict(policy),
        "seeds": {"seed": config.seed, "bootstrap_seed": config.seed},
        "versions": _versions(),
        "git_sha": _git_sha(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if executor is None:
        workers = config.workers or max(1, model.max_concurrency)
        executor = ThreadExecutor(workers) if workers > 1 else SerialExecutor()
    run_info["executor"] = describe_executor(executor)
    _atomic_write_json(run_dir / RUN_FILE, run_info)

    store = ResultStore(run_dir)
    interrupted = False
    aborted: str | None = None
    n_new = 0
    try:
        todo = unfinished(store, key, samples, retry_failed=config.retry_failed)
        processor = SampleProcessor(
            model,
            key,
            prompt_config=pconf,
            policy=policy,
            extract_mode=config.extract_mode(),
            text_only=config.text_only,
            cache=cache,
            judge=judge,
            reference=config.reference,
        )
        items = batches(todo, model.batch_size)
        written: list[int] = [0]
        try:
            label = (
                f"{config.model} on {dataset.name}"
                + (f" --task {config.task}" if config.task != "detect" else "")
                + (" (text only)" if config.text_only else "")
            )
            _drive(executor, processor, items, store, len(todo), progress, written, label=label)
        except KeyboardInterrupt:
            executor.cancel()
            interrupted = True
        except RunAborted as exc:
            executor.cancel()
            interrupted = True
            aborted = str(exc)
        except RunFolderWriteError:  # full disk: stop now; committed rows are intact
            executor.cancel()
            raise
        n_new = written[0]
        selected = [s.id for s in samples]
        store.set_selection(key, selected)  # what rescore/report score
        rows = store.rows(key, sample_ids=selected)
        metrics = score_rows(
            rows,
            benchmark=dataset.benchmark,
            failures=config.failures(),
            n_resamples=config.n_resamples,
            seed=config.seed,
            defects=dataset.defects,
            extract_mode=config.extract_mode(),
        )
        metrics["run"] = run_info["run"]
        metrics["complete"] = len(rows) == len(samples) and not interrupted
        _atomic_write_json(run_dir / METRICS_FILE, metrics)
        run_info.update(
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            interrupted=interrupted,
            aborted=aborted,
            n_rows=len(rows),
            n_new=n_new,
            executor=describe_executor(executor),
            frame_cache=cache.stats() if cache is not None else None,
        )
        _atomic_write_json(run_dir / RUN_FILE, run_info)
    finally:
        store.close()
        model.close()
    failed = next((r for r in rows if r.status.is_error), None)
    first_error = f"{failed.status.value}: {failed.error}" if failed is not None else None
    return RunResult(
        run_dir,
        metrics,
        len(samples),
        len(samples) - len(todo),
        n_new,
        interrupted,
        aborted,
        first_error,
        None if interrupted else nothing_scored(rows),
    )


def _drive(
    executor: Executor,
    processor: SampleProcessor,
    items: Iterable[WorkItem],
    store: ResultStore,
    total: int,
    progress: bool,
    written: list[int],
    *,
    label: str = "eval",
) -> None:
    """Run items through the executor and store each row at once; ``written[0]`` counts rows.

    ``label`` names the bar (the model and the dataset), so several runs in one log stay apart.

    Raises:
        RunAborted: ``ABORT_AFTER`` (or twice the workers) consecutive transient failures.
    """
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    streak: list[StoredRow] = []  # consecutive rows with a transient failure
    judge_streak: list[StoredRow] = []  # consecutive judged rows whose judge backend failed
    limit = max(ABORT_AFTER, 2 * getattr(executor, "workers", 1))
    with Progress(
        TextColumn("[bold]{task.description}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[errors]} failed"),
        disable=not progress,
        transient=False,
    ) as bar:
        task = bar.add_task(escape(label), total=total, errors=0)
        failed = 0
        for rows in executor.run(processor, items):
            for row in rows:
                _stop_on_server_limit(row, written[0])
                store.put(row)
                written[0] += 1
                failed += row.status is not Status.OK
                streak = [*streak, row] if row.status in TRANSIENT else []
                if (row.rule or "").startswith("judge"):
                    judge_streak = [*judge_streak, row] if judge_failed(row) else []
            bar.update(task, advance=len(rows), errors=failed)
            if len(streak) >= limit:
                first = streak[0]
                raise RunAborted(
                    f"stopped after {len(streak)} consecutive failed samples "
                    f"({first.status.value}: {first.error or 'no detail'}); "
                    "finished rows are kept, fix the cause and re-run the same command to resume",
                    written[0],
                )
            if len(judge_streak) >= limit:
                raise RunAborted(
                    f"stopped: the judge failed on {len(judge_streak)} consecutive replies "
                    f"({judge_streak[0].error or 'no detail'}); finished rows are kept, fix the "
                    "judge and re-run to resume (`mmrobust rescore RUN_DIR --judge SPEC` "
                    "judges the judge_error rows again)",
                    written[0],
                )


def judge_failed(row: StoredRow) -> bool:
    """True for a ``judge_error`` row whose judge backend failed (down, timing out, raising),
    not one whose judge answered something unusable."""
    cause = row.extra.get("judge_status")
    return row.status is Status.JUDGE_ERROR and cause in {s.value for s in TRANSIENT}


def _stop_on_server_limit(row: StoredRow, written: int) -> None:
    """Raise ``RunAborted`` for a rejection that names a limit every sample will hit.

    The row is not stored: nothing about the sample is known, and after the fix
    (fewer frames, a server restarted with a higher limit) it must be asked again.
    """
    limit = row.extra.get("server_limit") if row.status is Status.REJECTED else None
    if isinstance(limit, dict):
        raise RunAborted(
            f"the server refused sample {row.sample.id!r} with a limit every sample will hit "
            f"({row.error}); {limit.get('fix', 'change the request or the server')}; "
            "finished rows are kept, re-run to resume",
            written,
        )


def load_run_config(run_dir: str | Path) -> dict[str, Any]:
    """``run.json`` of a run folder.

    Raises:
        FileNotFoundError: no ``run.json``.
        ValueError: ``run.json`` is not valid JSON or lacks ``config``/``key``.
    """
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"not a run folder (no {RUN_FILE}): {run_dir}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    missing = [k for k in ("config", "key") if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(f"{path}: not written by mmrobust eval (missing {', '.join(missing)})")
    return dict(data)


def rescore(
    run_dir: str | Path,
    *,
    extract_mode: str | None = None,
    failures: str | None = None,
    n_resamples: int | None = None,
    judge: str | None = None,
    judge_args: Mapping[str, str] | None = None,
    reference: str | None = None,
) -> dict[str, Any]:
    """Recompute extraction and metrics from stored raw answers (no call to the evaluated model).

    Rows that answered (``ok`` / ``parse_fail``) are re-extracted from their
    raw text with ``extract_mode`` and updated in the store; error rows stay.
    ``metrics.json`` and the ``run`` block of ``run.json`` are rewritten;
    ``run.json``'s ``rescore`` block says what changed (extraction and failure
    policy before/after, rows re-extracted, rows whose letter or status changed).

    Args:
        run_dir: a folder written by :func:`run_eval`.
        extract_mode: ``strict`` | ``lenient`` | ``official`` (default: the run's).
        failures: ``exclude`` | ``wrong`` (default: the run's).
        n_resamples: bootstrap draws (default: the run's).
        judge: model spec of an LLM judge for replies extraction cannot parse
            (off unless given; ``judge_error`` rows are re-judged).
        judge_args: ``--judge-arg`` pairs for the judge.
        reference: VLMEvalKit version for official tamper decisions (default: the
            run's, else the integration commit). The prompt stays the run's.

    Raises:
        FileNotFoundError: not a run folder.
        ValueError: unknown extraction mode.
        UnknownNameError: unknown ``reference``.
        RunLockedError: another process is running in that folder.
    """
    load_run_config(run_dir)  # not a run folder: fail before the lock file is made
    if reference is not None:
        tamper_reference(reference)
    with RunLock(run_dir):  # read, re-extract and write with no eval running there
        info = load_run_config(run_dir)
        return _rescore(
            run_dir, info, extract_mode, failures, n_resamples, judge, judge_args, reference
        )


def _rescore(
    run_dir: str | Path,
    info: dict[str, Any],
    extract_mode: str | None,
    failures: str | None,
    n_resamples: int | None,
    judge: str | None,
    judge_args: Mapping[str, str] | None,
    reference: str | None = None,
) -> dict[str, Any]:
    """The body of :func:`rescore`, run while the run folder's lock is held."""
    cfg = info["config"]
    run = info.get("run", {})
    mode = extract_mode or run.get("extraction") or cfg.get("extract", "lenient")
    fail = failures or run.get("failures", "exclude")
    if mode == "official" and cfg.get("task", "detect") != "detect":
        raise ValueError(
            f"--extract official reproduces the reference's yes/no matching; a --task "
            f"{cfg['task']} run has no reference (use lenient or strict)"
        )
    previous = run.get("reference") or {}
    ref_name = (
        reference
        or (previous.get("name") if previous.get("benchmark") == "tamper" else None)
        or cfg.get("reference")
    )
    key = RunKey(**info["key"])
    judge_model = load_judge(judge, judge_args) if judge else None
    changed = 0
    with ResultStore(run_dir) as store:
        rows = store.rows(key, store.selection(key))  # the samples the last eval scored
        updates = []
        judge_streak = 0  # consecutive replies the judge's backend failed on
        for row in rows:
            if row.status.is_error and row.status is not Status.JUDGE_ERROR:
                continue
            before = (row.letter, row.status)
            ex = extract(
                row.raw_text,
                row.options,
                mode=mode,
                benchmark=row.sample.benchmark,
                answer=row.answer,
                reference=ref_name,
                reasoning=field_reasoning(row.raw_text, row.reasoning, row.reasoning_form),
                reply_path=reply_path_for(cfg.get("model")),
            )
            if ex.status is Status.PARSE_FAIL and judge_model is not None:
                verdict = judge_model(row.sample.id, row.sample.question, row.options, row.raw_text)
                failed = verdict.cause is not None and verdict.cause in TRANSIENT
                judge_streak = judge_streak + 1 if failed else 0
                if judge_streak >= ABORT_AFTER:
                    raise RunAborted(
                        f"the judge failed on {judge_streak} consecutive replies "
                        f"({verdict.error}); nothing was changed",
                        0,
                    )
                ex = verdict
            error = getattr(ex, "error", None)  # a judge's reason for no verdict
            new = {"letter": ex.letter, "status": ex.status, "rule": ex.rule, "error": error}
            updates.append((row, new))
            row.letter, row.status, row.rule, row.error = ex.letter, ex.status, ex.rule, error
            changed += (row.letter, row.status) != before
        store.update_extractions(updates)
    benchmark = info.get("dataset", {}).get("benchmark") or (
        rows[0].sample.benchmark if rows else "generic"
    )
    metrics = score_rows(
        rows,
        benchmark=benchmark,
        failures=fail,
        n_resamples=cfg.get("n_resamples", 1000) if n_resamples is None else n_resamples,
        seed=cfg.get("seed", 0),
        defects=info.get("dataset", {}).get("defects", []),
        extract_mode=mode,
    )
    run = {**run, "extraction": mode, "failures": fail}
    run["reference"] = reference_block(benchmark, ref_name) if mode == "official" else None
    prompt_ref = (run.get("prompt") or {}).get("reference")
    for k, v in reference_versions(prompt_ref, run["reference"]).items():
        run[k] = v if mode == "official" and prompt_ref else None  # asked at / decided at
    run["judge"] = judge_model.describe() if judge_model is not None else None
    metrics["run"] = run
    metrics["complete"] = len(rows) == info.get("dataset", {}).get("n_selected", len(rows))
    info["rescore"] = {  # what this rescore changed (``mmrobust rescore`` prints it)
        "extraction": [info.get("run", {}).get("extraction"), mode],
        "failures": [info.get("run", {}).get("failures"), fail],
        "rows_reextracted": len(updates),
        "rows_changed": changed,
        "rows_total": len(rows),
        "files": [STORE_FILE, METRICS_FILE, RUN_FILE],
    }
    info["run"] = run
    info["rescored_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    _atomic_write_json(Path(run_dir) / METRICS_FILE, metrics)
    _atomic_write_json(Path(run_dir) / RUN_FILE, info)
    return metrics


__all__ = [
    "METRICS_FILE",
    "RUN_FILE",
    "EvalConfig",
    "Executor",
    "RunResult",
    "SampleProcessor",
    "SerialExecutor",
    "ThreadExecutor",
    "WorkItem",
    "load_image",
    "load_run_config",
    "rescore",
    "run_eval",
]
