"""The ``mmrobust`` command: thin wrappers over library calls.

Each command parses its options and calls one library function; anything a
command does, a notebook user can do by calling that function. Heavy modules
are imported inside the commands so ``mmrobust --help`` stays fast.

Ownership: one function per sub-command; edit only the command you own.
"""

from __future__ import annotations

import typer

from mmrobust import __version__

app = typer.Typer(
    name="mmrobust",
    help="Measure how robust multimodal LLMs are: video tampering (MVTamperBench) and "
    "leading questions (MMR).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mmrobust {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """mmrobust command line."""


# --- tamper (issue 2) ---------------------------------------------------------------------


# --- eval / rescore / report / compare (issue 3) ------------------------------------------


# --- mmr-data (issue 6) -------------------------------------------------------------------


# --- demo (issue 7) -----------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
