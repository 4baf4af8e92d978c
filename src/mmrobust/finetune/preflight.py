"""Checks of a fine-tuning run before torch is imported or anything is written (no torch).

Each returns the one-line problem with its fix, or ``None``: the model spec (an ``hf:``
model), the output folder (not a file), the files the options name, the hub (reachable,
or the model cached; seconds, not minutes of download retries), and W&B (logged in, for
``--report-to wandb``). :func:`mmrobust.finetune.train.run_finetune` runs them first.
"""

from __future__ import annotations

import re
from pathlib import Path

from mmrobust.finetune.config import FinetuneConfig

_BACKEND = re.compile(r"^([A-Za-z][\w.+-]*):")


def model_problem(spec: str) -> str | None:
    """A ``--model`` that is not an ``hf:`` model (``openai:gpt-4o``), else ``None``.

    A hub id has no colon, so any other ``name:`` prefix names another backend (a local
    folder whose name holds a colon is accepted when it exists).
    """
    match = _BACKEND.match(spec)
    if match is None or match.group(1) == "hf" or Path(spec).exists():
        return None
    return (
        f"finetune takes an hf: model (hf:<hub-id> or hf:<local folder>), not {spec!r}: "
        "fine-tune the open-weights checkpoint behind it, e.g. --model hf:Qwen/Qwen2-VL-2B-Instruct"
    )


def out_problem(out: Path) -> str | None:
    """An ``--out`` that is, or lies inside, an existing file, else ``None``
    (``paths.out_folder_problem``, the wording ``run`` and ``report`` use)."""
    from mmrobust.paths import out_folder_problem

    return out_folder_problem(out)


def files_problem(config: FinetuneConfig) -> str | None:
    """The first named file or folder that does not exist (data, media, template, DeepSpeed)."""
    from mmrobust.finetune.data import resolve_data_path

    for option, paths in (
        ("--data", config.data),
        ("--extra", config.extra),
        ("--eval-data", config.eval_data),
    ):
        for path in paths:
            try:
                resolve_data_path(Path(path))
            except FileNotFoundError as exc:
                return f"{option}: {exc}"
    if config.images is not None and not Path(config.images).is_dir():
        return f"--media {config.images}: no such folder"
    for option, file in (
        ("--chat-template", config.chat_template),
        ("--deepspeed", config.deepspeed),
    ):
        if file is not None and not Path(file).is_file():
            return f"{option} {file}: no such file"
    return None


def _looks_like_path(model_id: str) -> bool:
    """A model that can only be a folder: absolute, ``./``/``../``/``~``, or more than one ``/``."""
    return (
        Path(model_id).is_absolute()
        or model_id.startswith((".", "~"))
        or model_id.strip("/").count("/") > 1
    )


def hub_problem(model_id: str, revision: str | None) -> tuple[str | None, bool]:
    """``(problem, local_files_only)`` for a hub id: ``(None, False)`` for a local folder.

    Asks the hub once (10 s timeout, ``models._hf_load.hub_unreachable_but_cached``); an
    unreachable hub with the model in the local cache loads it from there
    (``local_files_only``); ``HF_HUB_OFFLINE`` set and the model not cached is a problem
    at once, as is an unreachable hub without it.
    """
    from mmrobust.models._hf_load import hub_unreachable_but_cached, offline

    if Path(model_id).exists():
        return None, False
    if _looks_like_path(model_id):
        return f"finetune: cannot load {model_id!r}: no such folder (a hub id is ORG/NAME)", False
    if offline():
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(model_id, "config.json", revision=revision), str):
            return None, True
        return (
            f"finetune: HF_HUB_OFFLINE is set and {model_id!r} is not in the local Hugging Face "
            "cache: pass a local folder (--model hf:/path/to/model), or download it first "
            "with the network on",
            False,
        )
    try:
        return None, hub_unreachable_but_cached(model_id, revision)
    except ValueError as exc:
        return str(exc).replace("hf: ", "finetune: ", 1), False


def report_problem(report_to: str) -> str | None:
    """``--report-to wandb`` without wandb installed or logged in (``mmrobust.wandb_login``)."""
    if report_to != "wandb":
        return None
    from mmrobust.wandb_login import wandb_problem

    problem = wandb_problem()
    return problem.replace("--log-to wandb", "--report-to wandb") if problem else None


__all__ = ["files_problem", "hub_problem", "model_problem", "out_problem", "report_problem"]
