"""Load a VLM for training and choose what is trained (LoRA targets or full fine-tuning).

The model is loaded as ``hf:`` loads it for evaluation
(``AutoModelForImageTextToText`` + ``AutoProcessor``), so anything ``hf:``
evaluates can be fine-tuned. What is trained follows the MMR paper (section
6.1): "we fine-tune both the connector and the language model using LoRA";
the vision encoder stays frozen (as in LLaVA-1.5 and Bunny's fine-tuning stage).
The language model and the connector are found by module name
(``language_model`` / ``text_model``; ``multi_modal_projector``, ``connector``,
``mm_projector``, ``merger``, ``mlp1``, ``projector``), so no per-family table is needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LANGUAGE_NAMES = ("language_model", "text_model")
PROJECTOR_NAMES = (
    "multi_modal_projector",
    "connector",
    "mm_projector",
    "merger",
    "mlp1",
    "projector",
)


@dataclass(frozen=True)
class Parts:
    """Qualified module names of the trained parts.

    Attributes:
        language_model: e.g. ``model.language_model``.
        projector: e.g. ``model.connector``, or ``None`` when the model has none by a known name.
    """

    language_model: str
    projector: str | None


def find_parts(model: Any) -> Parts:
    """Locate the language model and the vision-language connector (shortest matching names).

    Raises:
        ValueError: no language-model module (the class cannot be trained by ``finetune``).
    """
    names = [name for name, _ in model.named_modules() if name]

    def first(candidates: tuple[str, ...]) -> str | None:
        hits = [n for n in names if n.rsplit(".", 1)[-1] in candidates]
        return min(hits, key=lambda n: (n.count("."), len(n))) if hits else None

    language = first(LANGUAGE_NAMES)
    if language is None:
        raise ValueError(
            f"{type(model).__name__}: no language-model module (named one of {LANGUAGE_NAMES}); "
            "this model class cannot be fine-tuned by mmrobust"
        )
    return Parts(language, first(PROJECTOR_NAMES))


def linear_names(model: Any, prefix: str) -> list[str]:
    """Qualified names of the ``torch.nn.Linear`` modules under ``prefix``."""
    import torch

    return [
        name
        for name, module in model.named_modules()
        if name.startswith(prefix + ".") and isinstance(module, torch.nn.Linear)
    ]


def lora_target_regex(model: Any, parts: Parts, projector: bool) -> str:
    """PEFT ``target_modules`` regex: the language model's linear layers (+ the connector's).

    Raises:
        ValueError: the language model has no linear layers.
    """
    leaves = sorted({n.rsplit(".", 1)[-1] for n in linear_names(model, parts.language_model)})
    if not leaves:
        raise ValueError(f"{type(model).__name__}: the language model has no linear layers")
    pattern = rf"{re.escape(parts.language_model)}\..*\.(?:{'|'.join(map(re.escape, leaves))})"
    if projector and parts.projector:
        pattern += "|" + "|".join(re.escape(n) for n in linear_names(model, parts.projector))
    return pattern


def freeze_for_full(model: Any, parts: Parts, projector: bool) -> None:
    """Full fine-tuning: train the language model (and the connector); freeze the rest."""
    train = [parts.language_model] + ([parts.projector] if projector and parts.projector else [])
    for name, param in model.named_parameters():
        param.requires_grad = any(name.startswith(p + ".") for p in train)


def load_for_training(
    model_id: str,
    *,
    dtype: str,
    revision: str | None = None,
    trust_remote_code: bool = False,
    processor_kwargs: dict[str, Any] | None = None,
    load_in_4bit: bool = False,
    local_files_only: bool = False,
) -> tuple[Any, Any]:
    """``(model, processor)`` for training, in ``dtype`` (``float32``/``bfloat16``/``float16``).

    ``local_files_only``: load a hub id from the local cache only (the hub is unreachable;
    ``finetune.preflight.hub_problem``).

    ``load_in_4bit``: QLoRA (Dettmers et al. 2023): NF4 weights with double quantization,
    compute in ``dtype`` (bfloat16 when float32 is asked), through bitsandbytes; CUDA only.

    Raises:
        ImportError: torch/transformers are missing (``pip install -e '.[train]'``).
        ValueError: the checkpoint cannot be loaded as an image-text-to-text model (one line).
    """
    try:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            f"finetune needs torch and transformers: pip install -e '.[train]' ({exc})"
        ) from exc

    common: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    loading: dict[str, Any] = {"dtype": getattr(torch, dtype)}
    if load_in_4bit:
        loading["quantization_config"] = _four_bit(torch, dtype)
    if revision:
        common["revision"] = revision
    if local_files_only:
        common["local_files_only"] = True
    try:
        processor = AutoProcessor.from_pretrained(model_id, **common, **(processor_kwargs or {}))
        model = AutoModelForImageTextToText.from_pretrained(model_id, **loading, **common)
    except (OSError, ValueError, KeyError, ImportError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"finetune: cannot load {model_id!r} as an image-text-to-text model: {reason}"
        ) from exc
    if (
        getattr(processor, "tokenizer", None) is None
        or getattr(processor, "image_processor", None) is None
    ):
        raise ValueError(
            f"finetune: {model_id!r} has no image processor and tokenizer (not a vision-language model)"
        )
    return model, processor


def _four_bit(torch: Any, dtype: str) -> Any:
    """bitsandbytes NF4 config (QLoRA's), or a one-line ``ValueError`` where it cannot run."""
    import importlib.util

    if not torch.cuda.is_available():
        raise ValueError("--load-in-4bit needs a CUDA GPU (bitsandbytes 4-bit); none is visible")
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ValueError("--load-in-4bit needs bitsandbytes: pip install bitsandbytes")
    from transformers import BitsAndBytesConfig

    compute = torch.bfloat16 if dtype == "float32" else getattr(torch, dtype)
    return BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=compute,
    )  # fmt: skip


def model_identity(model_id: str, model: Any) -> dict[str, Any]:
    """Base-model identity for the training card: id, hub commit, local config hash."""
    import hashlib

    path = Path(model_id)
    config = path / "config.json"
    return {
        "model": model_id,
        "class": type(model).__name__,
        "commit": getattr(model.config, "_commit_hash", None),
        "config_sha256": hashlib.sha256(config.read_bytes()).hexdigest()
        if config.is_file()
        else None,
    }


__all__ = [
    "LANGUAGE_NAMES",
    "PROJECTOR_NAMES",
    "Parts",
    "find_parts",
    "freeze_for_full",
    "linear_names",
    "load_for_training",
    "lora_target_regex",
    "model_identity",
]
