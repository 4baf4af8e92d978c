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


@app.command("mmr-data")
def mmr_data(
    images: list[str] = typer.Argument(..., help="Image files or folders (searched recursively)."),
    model: str = typer.Option(..., "--model", help="Model SPEC, e.g. openai:gpt-4o."),
    model_arg: list[str] = typer.Option(
        [], "--model-arg", help="Backend setting KEY=VALUE (repeatable)."
    ),
    out: str = typer.Option(..., "--out", help="Output folder (created; reused to resume)."),
    pairs: int = typer.Option(4, "--pairs", min=1, help="Positive/negative pairs asked per image."),
    no_resume: bool = typer.Option(False, "--no-resume", help="Redo images already done."),
) -> None:
    """Generate paired positive/negative training data (MMR paper section 4)."""
    from rich.console import Console

    from mmrobust.mmrdata.pipeline import ItemResult, collect_images, run_mmr_data
    from mmrobust.models import load_model, parse_model_args, parse_spec
    from mmrobust.registry import UnknownNameError

    console = Console(stderr=True)
    try:
        args = parse_model_args(model_arg)
        spec = parse_spec(model, args)
        if spec.name == "openai" and "max_tokens" not in args:
            args["max_tokens"] = "2048"  # stage 2 replies are long; the backend default is 256
            spec = parse_spec(model, args)
        paths = collect_images(images)
        backend = load_model(spec)
    except (ValueError, FileNotFoundError, UnknownNameError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if not paths:
        console.print("[red]error:[/red] no images found")
        raise typer.Exit(2)

    def progress(item: ItemResult, reused: bool) -> None:
        console.print(f"{item.image}: {'reused' if reused else item.status.value}")

    try:
        summary = run_mmr_data(
            paths, backend, out, n_pairs=pairs, resume=not no_resume, on_item=progress
        )
    finally:
        backend.close()
    typer.echo(
        f"{summary.images} images {summary.statuses}; pairs kept {summary.pairs_kept} of "
        f"{summary.pairs_parsed}; LLaVA samples {summary.turns_kept}; dropped {summary.dropped}; "
        f"outputs in {summary.out_dir}"
    )


# --- demo (issue 7) -----------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
