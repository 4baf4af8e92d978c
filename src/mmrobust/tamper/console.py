"""Console front end of the builder: options -> ``BuildConfig``, a rich progress bar, a summary.

Used by ``mmrobust tamper``; a notebook user calls ``build`` directly.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mmrobust.schema.window import Position, parse_position
from mmrobust.tamper.builder import (
    TAMPER_CODEC,
    TAMPER_PRESET,
    TAMPER_THREADS,
    BuildConfig,
    BuildReport,
    SourceMap,
    SourceResult,
    Style,
    build,
)
from mmrobust.tamper.effects import make_effect, parse_param_specs
from mmrobust.tamper.effects.base import EffectParamError
from mmrobust.tamper.layout import Layout
from mmrobust.tamper.sources import none_found

if TYPE_CHECKING:
    from mmrobust.distributed import RayOptions


def config_from_options(
    *,
    effects: str,
    params: Sequence[str] = (),
    duration: float = 1.0,
    position: str = "middle",
    seed: int = 0,
    official_fps: bool = False,
    codec_control: bool = True,
    style: str = "mmrobust",
    codec: str = TAMPER_CODEC,
    crf: int = 18,
    preset: str = TAMPER_PRESET,
    qscale: int | None = None,
    threads: int = TAMPER_THREADS,
    segments: bool = True,
    layout: str = "native",
    task: str | None = None,
    donors: Sequence[Path] = (),
) -> BuildConfig:
    """Build a ``BuildConfig`` from command-line style options.

    ``effects`` is a comma list of effect names; ``params`` are ``EFFECT.KEY=VALUE`` strings;
    ``position`` may be ``--position``'s comma list: the config takes the first
    (:func:`run_tamper` builds each).

    Raises:
        EffectParamError: unknown effect, bad parameter, or a parameter for an effect not selected.
        WindowError: invalid position or duration.
        ValueError: unknown style or layout, threads below 1.
    """
    if style not in ("mmrobust", "released"):
        raise ValueError(f"style must be mmrobust or released, got {style!r}")
    if layout not in ("native", "mvtamperbench"):
        raise ValueError(f"layout must be native or mvtamperbench, got {layout!r}")
    names = [n.strip() for n in effects.split(",") if n.strip()]
    if not names:
        raise EffectParamError("no effects given")
    by_effect = parse_param_specs(params)
    stray = sorted(set(by_effect) - set(names))
    if stray:
        hints = [
            f"{n} (did you mean {close[0]}?)" if close else n
            for n in stray
            for close in [difflib.get_close_matches(n, names, n=1, cutoff=0.5)]
        ]
        raise EffectParamError(
            f"parameters given for effects not selected: {', '.join(hints)}; "
            f"selected: {', '.join(names)}"
        )
    return BuildConfig(
        effects=tuple(make_effect(n, **by_effect.get(n, {})) for n in names),
        duration=duration,
        position=parse_position(position.split(",")[0]),
        seed=seed,
        official_fps=official_fps,
        codec_control=codec_control,
        style=cast(Style, style),
        codec=codec,
        crf=crf,
        preset=preset,
        qscale=qscale,
        threads=threads,
        segments=segments,
        layout=cast(Layout, layout),
        task=task,
        donors=tuple(Path(d) for d in donors),
    )


def build_with_progress(
    sources: Sequence[str | Path],
    out_dir: Path,
    config: BuildConfig,
    *,
    jobs: int = 1,
    console: Console | None = None,
    quiet: bool = False,
    positions: Sequence[Position] | None = None,
    map_sources: SourceMap | None = None,
) -> BuildReport:
    """Run ``build`` with a progress bar (none when ``quiet``); print each failure on
    one line and a summary. Several ``positions``: ``tamper.positions.build_positions``."""
    con = console or Console(stderr=True)
    with Progress(
        TextColumn("[bold]tamper[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=con,
        transient=True,
        disable=quiet,
    ) as bar:
        task = bar.add_task("planning", total=None)

        def on_start(n: int) -> None:
            bar.update(task, total=n * len(positions or [None]), description="")

        def on_source(r: SourceResult) -> None:
            for err in r.errors:
                what = f" [{err.variant}]" if err.variant else ""
                con.print(
                    f"[red]error[/] {escape(err.source)}{escape(what)}: {escape(err.reason)}",
                    soft_wrap=True,
                )
            if r.entries or not r.errors or any(e.variant for e in r.errors):
                bar.advance(task)
            bar.update(task, description=escape(Path(r.source).name))

        if positions and len(positions) > 1:
            from mmrobust.tamper.positions import build_positions

            report = build_positions(
                sources, out_dir, config, positions, jobs=jobs, on_start=on_start,
                on_source=on_source, map_sources=map_sources,
            )  # fmt: skip
        else:
            report = build(
                sources,
                out_dir,
                config,
                jobs=jobs,
                on_start=on_start,
                on_source=on_source,
                map_sources=map_sources,
            )
    n_err = len(report.errors)
    errors = f"{n_err} error{'' if n_err == 1 else 's'}"
    if not report.out_dir.exists():
        con.print(
            f"nothing built ({errors}); {escape(str(out_dir))} was not created", soft_wrap=True
        )
        return report
    joined = (
        "; each position's build has its own originals, joined once"
        if report.built + report.skipped > len(report.entries)
        else ""
    )
    con.print(
        f"[bold]{len(report.entries)}[/] clips ({report.built} built, {report.skipped} already "
        f"done{joined}), {errors}",
        soft_wrap=True,
    )
    files = ["manifest.jsonl", *(["errors.jsonl"] if report.errors else [])]
    con.print(f"wrote {escape(str(out_dir))}: {', '.join(files)}", soft_wrap=True)
    for task_name, rows in report.json_rows.items():
        con.print(f"mvtamperbench layout: json/{escape(task_name)}.json ({rows} rows)")
    return report


def run_tamper(
    sources: Sequence[str | Path],
    out_dir: Path,
    config: BuildConfig,
    *,
    positions: Sequence[Position] | str | None = None,
    jobs: int = 1,
    quiet: bool = False,
    ray: RayOptions | None = None,
) -> BuildReport:
    """``mmrobust tamper``: build locally (several ``positions`` each into ``OUT/<position>/``)
    or with one Ray task per source (``ray``); progress bar and summary on stderr.
    ``positions`` may be ``--position``'s comma list (``start,middle,end``).

    Raises:
        FileNotFoundError: not one of ``sources`` exists (:func:`none_found`).
        ValueError: a bad or repeated position; several positions with Ray; (Ray)
            unreachable, a worker that cannot see a path.
    """
    if missing := none_found(sources):
        raise FileNotFoundError(missing)
    if isinstance(positions, str):
        from mmrobust.tamper.positions import parse_positions

        positions = parse_positions(positions)
    if ray is not None and positions is not None and len(positions) > 1:
        raise ValueError(
            "several --position values build locally; drop --executor ray, or build one "
            "position per --out with Ray"
        )
    if ray is not None:
        from mmrobust.distributed import RAY_RUNNERS  # Ray-free; the Ray path named lazily

        built: BuildReport = RAY_RUNNERS.get("tamper")(sources, out_dir, config, ray, quiet=quiet)
        return built
    return build_with_progress(
        sources, out_dir, config, jobs=jobs, quiet=quiet, positions=positions
    )


__all__ = ["build_with_progress", "config_from_options", "run_tamper"]
