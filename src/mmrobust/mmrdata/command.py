"""``mmrobust mmr-data`` as one library call: backend defaults, local or Ray, then the pipeline.

:func:`generate` is what the command runs; a notebook gets the same defaults
(an API model, ``placement == "api"``, gets ``max_tokens=2048``, since stage 2 replies are long
and the backend's default is 256) and the same executor choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mmrobust.mmrdata.pipeline import ItemResult, MMRDataSummary, collect_images, run_mmr_data

if TYPE_CHECKING:
    from mmrobust.distributed import RayOptions

STAGE2_MAX_TOKENS = "2048"
"""``max_tokens`` an API model (``openai:``, ``anthropic:``) gets unless ``--model-arg max_tokens=`` says otherwise."""


def model_args_for(model: str, model_args: Mapping[str, str]) -> dict[str, str]:
    """``model_args`` with mmr-data's backend defaults filled in (``max_tokens`` for API models).

    Raises:
        ValueError, UnknownNameError: a bad model spec.
    """
    from mmrobust.models import parse_spec

    args = dict(model_args)
    if parse_spec(model, args).placement == "api" and "max_tokens" not in args:
        args["max_tokens"] = STAGE2_MAX_TOKENS
    return args


def generate(
    images: Sequence[str | Path],
    model: str,
    model_args: Mapping[str, str],
    out_dir: str | Path,
    *,
    n_pairs: int = 4,
    resume: bool = True,
    ray: RayOptions | None = None,
    on_item: Callable[[ItemResult, bool], None] | None = None,
) -> MMRDataSummary:
    """Generate paired positive/negative training data (MMR paper section 4) for ``images``
    (files or folders, searched recursively) with ``model``, locally or in Ray replicas.

    Raises:
        ValueError, UnknownNameError, ImportError: a bad model spec or a backend that cannot load.
        FileNotFoundError: an image path that does not exist; ``ValueError``: no image found.
        ValueError: (Ray) unreachable, no room, a replica that cannot load or see the images.
    """
    from mmrobust.models import load_model, parse_spec

    args = model_args_for(model, model_args)
    paths = collect_images(images)
    if not paths:
        raise ValueError("no images found")
    if ray is not None:
        from mmrobust.distributed import RAY_RUNNERS  # Ray-free; the Ray path named lazily

        summary: MMRDataSummary = RAY_RUNNERS.get("mmr-data")(
            paths, model, args, out_dir, ray, n_pairs=n_pairs, resume=resume, on_item=on_item
        )
        return summary
    backend = load_model(parse_spec(model, args))
    try:
        return run_mmr_data(
            paths, backend, out_dir, n_pairs=n_pairs, resume=resume, on_item=on_item
        )
    finally:
        backend.close()


def summary_line(summary: MMRDataSummary) -> str:
    """The one line ``mmrobust mmr-data`` prints at the end: images per status, pairs kept,
    LLaVA samples, drops and the output folder."""
    return (
        f"{summary.images} images {summary.statuses}; pairs kept {summary.pairs_kept} of "
        f"{summary.pairs_parsed}; LLaVA samples {summary.turns_kept}; dropped {summary.dropped}; "
        f"outputs in {summary.out_dir}"
    )


def no_sample_error(summary: MMRDataSummary, first_error: str | None = None) -> str | None:
    """Why a run that wrote no training sample failed (issue 30), ``None`` when it wrote some.

    ``first_error`` is the first image's error (``"<image>: <error>"``) if any image failed;
    otherwise the reason names the statuses (and the drops, when pairs were dropped).
    """
    if summary.turns_kept:
        return None
    why = first_error or f"statuses {summary.statuses}"
    if summary.dropped and not first_error:
        why += f", dropped {summary.dropped}"
    return f"generated no training sample from {summary.images} images ({why})"


__all__ = ["STAGE2_MAX_TOKENS", "generate", "model_args_for", "no_sample_error", "summary_line"]
