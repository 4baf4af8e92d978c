"""The ``mmrobust`` Typer application and its root callback (``--version``; it loads the
plugins, :mod:`mmrobust.plugins`, before any command runs).

The command modules (:mod:`mmrobust.cli.tamper`, ``eval``, ``report``, ``data``, ``demo``)
register their commands on :data:`app`; :mod:`mmrobust.cli` imports them in the order
``mmrobust --help`` lists them.
"""

from __future__ import annotations

from typing import Any

import typer

from mmrobust import __version__

app = typer.Typer(
    name="mmrobust",
    help="Measure how robust multimodal LLMs are: video tampering (MVTamperBench) and "
    "leading questions (MMR).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help (issues 30, 33.11): rich's option table cuts flag names with an
    # ellipsis at 80 columns and shows a "<bool>" type on every flag; plain help wraps the
    # descriptions and prints each flag whole, without a metavar for flags
    rich_markup_mode=None,
)


def _one_value_types() -> None:
    """Show a repeatable parameter's type as one value's (``<path>``, ``<str>``), not typer's
    ``<list[Path]>``: each ``--data`` takes one value (the help says "repeatable"), and an
    argument's name already says there are several (``RUN_DIRS``, ``sources...``). A typer
    without ``_TyperParameter.display_type`` keeps its own text."""
    import re

    from typer import core

    param = getattr(core, "_TyperParameter", None)
    shown = getattr(param, "display_type", None)
    if param is None or shown is None or getattr(shown, "one_value", False):
        return

    def display_type(self: Any, ctx: Any) -> str:
        text = str(shown(self, ctx))
        match = re.fullmatch(r"<list\[(.+)\]>", text)
        return f"<{match.group(1).lower()}>" if match else text

    display_type.one_value = True  # type: ignore[attr-defined]
    param.display_type = display_type


_one_value_types()


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mmrobust {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """mmrobust command line."""
    if ctx.invoked_subcommand is not None and not ctx.resilient_parsing:
        # families, backends, effects of installed plugin packages and MMROBUST_PLUGINS;
        # one that fails to load is one warning (mmrobust.plugins), never a crash
        from mmrobust.plugins import load_plugins

        load_plugins()


__all__ = ["app"]
