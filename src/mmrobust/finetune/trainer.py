"""The trainer side of ``run_finetune``: TRL's ``SFTConfig`` from the settings, the trainer class.

Split from :mod:`mmrobust.finetune.train` (which keeps the run's order of work):
:func:`sft_args` maps :class:`~mmrobust.finetune.config.FinetuneConfig` onto TRL's
``SFTConfig`` (Table 10's optimizer and schedule, mixed precision, checkpoints, the
evaluation split and ``report_to``), :func:`trainer_class` is ``SFTTrainer`` with a
separate learning rate for a connector trained in full (Bunny's ``--mm_projector_lr``).
"""

from __future__ import annotations

import importlib.util
import json
import platform
from pathlib import Path
from typing import Any

from mmrobust import __version__
from mmrobust.finetune.config import FinetuneConfig
from mmrobust.mmrdata.writers import write_json


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"mmrobust": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "trl", "accelerate", "deepspeed"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def checkpointing(config_cls: Any, enabled: bool) -> dict[str, Any]:
    """Activation checkpointing under its current name (transformers >= 5.24 renamed it)."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(config_cls)}
    key = (
        "activation_checkpointing"
        if "activation_checkpointing" in names
        else "gradient_checkpointing"
    )
    return {key: enabled}


RUN_TOTALS = "mmrobust_totals.json"
"""File in each checkpoint folder: the run's figures a resume cannot recompute (see
:func:`trainer_class`)."""


def read_totals(checkpoint: Path) -> dict[str, Any] | None:
    """The :data:`RUN_TOTALS` of a checkpoint, or ``None`` (a checkpoint written without it)."""
    try:
        data = json.loads((checkpoint / RUN_TOTALS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "loss_sum" in data and "step" in data else None


def trainer_class() -> Any:
    from trl import SFTTrainer

    class MMRTrainer(SFTTrainer):  # type: ignore[misc]
        """``SFTTrainer`` with a separate learning rate for a fully trained connector (as Bunny
        does), and the run's totals saved with every checkpoint.

        A resume restores the trainer state (log history, steps, tokens), but neither the
        evaluation loss measured before training nor the sum of the per-step losses of the
        steps before the checkpoint (transformers' ``train_loss`` is the mean over the steps
        of one ``train()`` call). Each checkpoint folder gets :data:`RUN_TOTALS`, written
        before the trainer's own files, so a complete checkpoint (one whose
        ``trainer_state.json`` parses) always has it: ``step``, ``loss_sum`` (the per-step
        losses of steps 1..step summed, those not yet logged included) and
        ``eval_loss_before``. ``run_finetune`` sets :attr:`loss_carried` and
        :attr:`eval_loss_before` from it when it resumes.
        """

        projector_prefix: str | None = None
        projector_lr: float | None = None
        eval_loss_before: float | None = None
        loss_carried: float = 0.0  # summed per-step loss of the steps before this train() call

        def run_totals(self) -> dict[str, Any]:
            """:data:`RUN_TOTALS` now (``_total_loss_scalar``: the logged losses of this
            ``train()`` call; ``_tr_loss``: those not logged yet; transformers >= 5)."""
            pending = getattr(self, "_tr_loss", None)
            loss_sum = self.loss_carried + float(getattr(self, "_total_loss_scalar", 0.0))
            loss_sum += float(pending.item()) if pending is not None else 0.0
            return {
                "step": int(self.state.global_step),
                "loss_sum": loss_sum,
                "eval_loss_before": self.eval_loss_before,
            }

        def _save_checkpoint(self, model: Any, trial: Any) -> None:
            if self.args.should_save:
                folder = Path(str(self.args.output_dir)) / f"checkpoint-{self.state.global_step}"
                folder.mkdir(parents=True, exist_ok=True)
                write_json(folder / RUN_TOTALS, self.run_totals())
            super()._save_checkpoint(model, trial)

        def create_optimizer(self, model: Any = None) -> Any:
            optimizer = super().create_optimizer(model)
            prefix, lr = self.projector_prefix, self.projector_lr
            if prefix is None or lr is None:
                return optimizer
            target: Any = model if model is not None else self.model
            names = {id(p): n for n, p in target.named_parameters()}
            for group in list(optimizer.param_groups):
                moved = [p for p in group["params"] if f"{prefix}." in names.get(id(p), "")]
                if not moved:
                    continue
                keep = [p for p in group["params"] if all(p is not m for m in moved)]
                group["params"] = keep
                settings = {k: v for k, v in group.items() if k != "params"}
                optimizer.add_param_group({**settings, "params": moved, "lr": lr})
                if not keep:
                    optimizer.param_groups.remove(group)
            return optimizer

    return MMRTrainer


def sft_args(
    config: FinetuneConfig, *, checkpoints: str, dtype: str, accumulation: int, evaluates: bool
) -> Any:
    """TRL ``SFTConfig`` of a run (created before the model, so ZeRO-3 can partition it).

    ``evaluates``: an evaluation split exists; it is evaluated every ``config.eval_steps``
    steps when set (the run also evaluates it before and after training), loss only.
    """
    from trl import SFTConfig

    needs = {"tensorboard": ("tensorboard", "tensorboardX"), "wandb": ("wandb",)}
    wanted = needs.get(config.report_to, ())
    if wanted and not any(importlib.util.find_spec(m) for m in wanted):
        raise ValueError(
            f"--report-to {config.report_to} needs {wanted[0]}: pip install {wanted[0]}"
        )
    periodic = evaluates and config.eval_steps is not None
    return SFTConfig(
        output_dir=checkpoints,
        per_device_train_batch_size=config.per_device_batch,
        per_device_eval_batch_size=config.per_device_batch,
        gradient_accumulation_steps=accumulation,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler,
        warmup_steps=config.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=config.weight_decay,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        optim=config.optimizer,
        seed=config.seed,
        data_seed=config.seed,
        bf16=dtype == "bfloat16",
        fp16=dtype == "float16",
        use_cpu=config.device == "cpu",
        logging_steps=config.logging_steps,
        eval_strategy="steps" if periodic else "no",
        eval_steps=config.eval_steps if periodic else None,
        prediction_loss_only=True,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        report_to=config.report_to,
        push_to_hub=config.push_to_hub is not None,
        hub_model_id=config.push_to_hub,
        disable_tqdm=True,
        remove_unused_columns=False,
        dataset_kwargs={"skip_prepare_dataset": True},
        max_length=None,
        packing=False,
        completion_only_loss=False,
        include_num_input_tokens_seen="non_padding",
        dataloader_num_workers=config.num_workers,
        deepspeed=str(config.deepspeed) if config.deepspeed else None,
        **checkpointing(SFTConfig, config.gradient_checkpointing),
    )


__all__ = [
    "RUN_TOTALS",
    "checkpointing",
    "read_totals",
    "sft_args",
    "trainer_class",
    "versions",
]
