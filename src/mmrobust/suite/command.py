"""The ``mmrobust run`` command: options generated from the suite file's model, and a thin
body over :func:`run_suite`.

Every option is a key of :class:`mmrobust.suite.file.SuiteFile` (its field's flags, help
and default, :func:`~mmrobust.suite.file.flag_fields`) or one of
:data:`mmrobust.suite.flags.ENTRY_FLAGS`, plus ``--config``, ``--print-config`` and
``--quiet``: :func:`_parameters` builds the command's signature from them, so a flag and
its file key are written once. Registered in ``mmrobust.cli`` (as ``finetune`` is);
importing this module is light (typer, pydantic): the suite, eval and report are imported
inside the command.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from mmrobust.suite.file import flag_fields
from mmrobust.suite.flags import ENTRY_FLAGS

CLI_TYPES: dict[str, Any] = {"models": list[str], "data": list[str], "tasks": list[str]}
"""Fields whose command-line form is a list of strings (entries are made from them)."""

META: dict[str, tuple[Any, Any]] = {
    "config": (
        str | None,
        typer.Option(
            None,
            "--config",
            metavar="FILE",
            help="Suite file (YAML or JSON; docs/suite.md): each option below is a key of it; "
            "an option given on the command line overrides the file.",
        ),
    ),
    "print_config": (
        bool,
        typer.Option(
            False,
            "--print-config",
            help="Print the effective suite file of this command line (YAML) and exit.",
        ),
    ),
}

QUIET = (bool, typer.Option(False, "--quiet", "-q", help="No progress bar."))


def _option(name: str, spec: dict[str, Any]) -> inspect.Parameter:
    kw: dict[str, Any] = {"help": spec.get("help")}
    if spec.get("metavar"):
        kw["metavar"] = spec["metavar"]
    if spec.get("min") is not None:
        kw["min"] = spec["min"]
    default = spec.get("default", [])
    annotation = CLI_TYPES.get(name, spec.get("annotation", list[str]))
    if name in CLI_TYPES and default and not isinstance(default[0], str):
        default = []
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
        default=typer.Option(default, *spec["flags"], **kw),
    )  # fmt: skip


def _parameters() -> list[inspect.Parameter]:
    """The command's parameters: ``ctx``, the meta options, each flagged field of the suite
    file (entry flags after the key they fill), ``--quiet``."""
    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
    for name, (annotation, option) in META.items():
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=annotation, default=option))  # fmt: skip
    after = {"data": ["media"], "revision": ["model_arg", "model_args"], "push_to_hub": []}
    for name, spec in flag_fields().items():
        params.append(_option(name, spec))
        for extra in after.get(name, []):
            params.append(_option(extra, {**ENTRY_FLAGS[extra], "default": []}))
        if name == "private":
            params.append(_option("model_card", {**ENTRY_FLAGS["model_card"], "default": []}))
    params.append(inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY,
                                    annotation=QUIET[0], default=QUIET[1]))  # fmt: skip
    return params


def _fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@contextmanager
def _one_line_on_ctrl_c() -> Iterator[None]:
    """A Ctrl-C outside a run (loading modules, planning, the report): one line, exit 130.
    (During a run the suite owns SIGINT: the run stops as ``eval`` does.)"""
    try:
        yield
    except KeyboardInterrupt:
        typer.echo(
            "interrupted: finished runs are kept; re-run the same command to resume", err=True
        )
        raise typer.Exit(130) from None


def _source(ctx: typer.Context, name: str) -> str | None:
    """Where the value of parameter ``name`` came from (``COMMANDLINE``, ``DEFAULT`` ...), by
    name: typer may carry its own copy of click's ``ParameterSource``."""
    source = ctx.get_parameter_source(name)
    return source.name if source is not None else None


def run_command(**values: Any) -> None:
    """Run every --model on every --data for every --task (one eval per run folder), then
    one report. A --config file holds the same options as keys. Re-running resumes each run;
    exits 1 if any run failed or any dataset cannot be loaded, naming them."""
    with _one_line_on_ctrl_c():
        _command(**values)


def _command(**values: Any) -> None:
    """The body of :func:`run_command`."""
    from mmrobust.paths import out_folder_problem
    from mmrobust.registry import UnknownNameError
    from mmrobust.suite.file import dump_suite_file
    from mmrobust.suite.flags import suite_from_flags

    ctx: typer.Context = values.pop("ctx")
    quiet = values.pop("quiet")
    given = {n for n in values if _source(ctx, n) == "COMMANDLINE"}
    try:
        suite = suite_from_flags(values, given)
        if values["print_config"]:
            typer.echo(dump_suite_file(suite), nl=False)
            return
        config = suite.to_suite_config()
    except (FileNotFoundError, UnknownNameError, ValueError) as exc:
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if problem := out_folder_problem(config.out):
        raise _fail(problem)
    hub = None
    cards = {m.spec: m.card for m in suite.models if m.card}
    if cards and not suite.push_to_hub:
        raise _fail("--model-card (models[].card) needs --push-to-hub REPO: the scores' source")
    if suite.push_to_hub:
        from mmrobust.report.hub_push import HubTarget

        try:  # a missing token or bad repo id: refused before any work
            hub = HubTarget.check(suite.push_to_hub, private=suite.private, cards=cards)
        except ValueError as exc:
            raise _fail(str(exc)) from None
    _run(config, suite, quiet, hub)


def _run(config: Any, suite: Any, quiet: bool, hub: Any) -> None:
    """Run the suite, print how it ended, log and push; exit as the docstring of
    :func:`run_command` says."""
    from mmrobust.registry import UnknownNameError
    from mmrobust.report.wandb_log import check_log_to
    from mmrobust.suite.runner import run_suite

    try:
        check_log_to(suite.log_to)
        result = run_suite(config, progress=not quiet, log=typer.echo)
    except (FileNotFoundError, UnknownNameError, ValueError, ImportError) as exc:
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except OSError as exc:  # the report folder cannot be written
        raise _fail(str(exc).splitlines()[0], 3) from None
    ran = result.ran
    n_ok = sum(r.status in ("complete", "partial") for r in ran)
    skipped = len(result.runs) - len(ran)
    blocked = len(result.blocked)
    typer.echo(
        f"{n_ok} of {len(ran)} runs finished"
        + (f", {blocked} blocked (dataset not loaded)" if blocked else "")
        + (f", {skipped} skipped (not applicable)" if skipped else "")
        + f"; run folders under {result.out}"
    )
    if result.site is not None:
        typer.echo(result.site.summary())
    if suite.log_to:
        from mmrobust.report.wandb_log import log_to_wandb

        folders = [r.run_dir for r in ran if (r.run_dir / "run.json").is_file()]
        log_to_wandb(folders, result.report_dir, project=suite.wandb_project, log=typer.echo)
    if result.interrupted:
        typer.echo(
            "interrupted: finished rows are kept; re-run the same command to resume", err=True
        )
        raise typer.Exit(130)
    if hub is not None:
        from mmrobust.report.hub_push import push_suite

        try:
            for line in push_suite(hub, result.out):
                typer.echo(line)
        except (OSError, ValueError) as exc:
            raise _fail(f"--push-to-hub {hub.repo_id}: {str(exc).splitlines()[0]}", 3) from None
    if result.data_failures:
        typer.echo(f"error: {len(result.data_failures)} dataset(s) cannot be loaded:", err=True)
        for failure in result.data_failures:
            typer.echo(f"  {failure.line()}", err=True)
    if result.failed:
        typer.echo(f"error: {len(result.failed)} run(s) failed:", err=True)
        for r in result.failed:
            typer.echo(f"  {r.label}: {r.error}", err=True)
    if result.failed or result.data_failures:
        raise typer.Exit(1)


run_command.__signature__ = inspect.Signature(_parameters())  # type: ignore[attr-defined]
run_command.__annotations__ = {p.name: p.annotation for p in _parameters()} | {"return": None}

__all__ = ["run_command"]
