"""What binds a resumed fine-tuning run to its folder, and the figures a resume carries over.

``OUT/run_config.json`` holds :func:`run_fingerprint`: re-running with other settings or
data is refused (:func:`changed_settings`), never silently mixed into the checkpoints.
:func:`run_train_loss` is the card's ``train_loss`` over the whole run, resumed or not
(with the totals each checkpoint carries, ``finetune.trainer.RUN_TOTALS``). :data:`SOURCES`
says where each default of the card comes from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mmrobust.finetune.config import FinetuneConfig
from mmrobust.finetune.data import DataReport

SOURCES = {
    "learning_rate": "MMR Table 10",
    "lr_scheduler": "MMR Table 10",
    "warmup_ratio": "MMR Table 10",
    "weight_decay": "MMR Table 10",
    "epochs": "MMR Table 10",
    "optimizer": "MMR Table 10 (AdamW)",
    "global_batch": "MMR Table 10",
    "method": "MMR section 6.1 (LoRA)",
    "lora_r": "Bunny finetune_lora.sh",
    "lora_alpha": "Bunny finetune_lora.sh",
    "lora_dropout": "Bunny train.py",
    "projector": "Bunny finetune_lora.sh (connector trained in full)",
    "projector_lr": "Bunny finetune_lora.sh (--mm_projector_lr)",
    "max_length": "Bunny finetune_lora.sh (--model_max_length)",
    "save_steps": "Bunny finetune_lora.sh",
    "image_max_side": "same as hf: evaluation",
}
"""Where each default comes from (see :mod:`mmrobust.finetune.config`); overridden values say 'set'."""


FINGERPRINT_SKIP = {"data", "extra", "images", "save_steps", "logging_steps", "chat_template"}
FINGERPRINT_SKIP |= {"eval_data", "eval_steps"}  # eval files: by path below; eval_steps: logging


def run_fingerprint(config: FinetuneConfig, report: DataReport) -> dict[str, Any]:
    """What a resumed run must match (``OUT/run_config.json``): the settings that change the
    result, the data files' sha256, the evaluation files and the chat template."""
    settings = {k: v for k, v in config.fingerprint().items() if k not in FINGERPRINT_SKIP}
    return {
        "settings": settings,
        "data": sorted([f.source, f.sha256] for f in report.files),
        **({"eval_data": sorted(str(p) for p in config.eval_data)} if config.eval_data else {}),
        "chat_template": config.chat_template.read_text(encoding="utf-8")
        if config.chat_template
        else None,
    }


def run_train_loss(
    call_mean: float | None, steps: int, start_step: int, carried: float, *, resumed: bool
) -> float | None:
    """Mean per-step training loss over the whole run, a resumed one included.

    ``call_mean``: transformers' ``train_loss`` of the last ``train()`` call (the mean over
    its steps ``start_step + 1 .. steps``); ``carried``: the summed per-step loss of steps
    ``1 .. start_step`` (``trainer.RUN_TOTALS``). ``None`` for a run resumed from a
    checkpoint without those totals (written by an earlier version).
    """
    if call_mean is None or resumed or steps <= 0:
        return None
    if start_step == 0:
        return float(call_mean)
    return (carried + float(call_mean) * (steps - start_step)) / steps


def changed_settings(previous: Path, fingerprint: dict[str, Any]) -> str | None:
    """What differs between ``previous`` (an earlier ``run_config.json``) and ``fingerprint``:
    the changed setting names (and ``data files``), ``chat template`` when only the rest
    differs, ``None`` when they are the same run."""
    earlier = json.loads(previous.read_text(encoding="utf-8"))
    if earlier == fingerprint:
        return None
    changed = sorted(
        k
        for k in set(earlier.get("settings", {})) | set(fingerprint["settings"])
        if earlier.get("settings", {}).get(k) != fingerprint["settings"].get(k)
    )
    if earlier.get("data") != fingerprint["data"]:
        changed.append("data files")
    return ", ".join(changed) or "chat template"


__all__ = ["FINGERPRINT_SKIP", "SOURCES", "changed_settings", "run_fingerprint", "run_train_loss"]
