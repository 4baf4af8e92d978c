"""Guards of a fine-tuning run: float32 master weights, a schedule that trains, weights that move.

Issue 31, items 1 and 3:

* **float32 master weights** (:func:`upcast_trainable`). In bf16 (``--dtype auto`` on a
  GPU, or ``bfloat16``) the model is loaded in bf16 and the trainer runs bf16 autocast;
  PEFT keeps its LoRA matrices in float32, but a module trained in full
  (``modules_to_save``: the connector, Bunny's ``--mm_projector_lr 2e-5``) stayed bf16,
  and an AdamW step of about ``lr`` = 2e-5 is below half a bf16 ulp of most weights
  (8 bits of mantissa: ulp = 2^-7 of the value's power of two), so the step rounds away:
  2.25% of the connector's weights changed in 5 steps, against ~100% in float32. Every
  trainable parameter is cast to float32 before the optimizer is built (the frozen weights
  stay bf16, the forward stays bf16 under autocast): the mixed-precision recipe of
  DeepSpeed's bf16 optimizer and of Bunny's ZeRO setup. Under DeepSpeed its own optimizer
  keeps the float32 copy, so nothing is cast there.
* **A schedule that trains** (:func:`schedule_warning`): the paper's global batch 128
  on a few samples gives one optimizer step, and with warm-up that step runs at
  learning rate 0 (transformers' linear warm-up is ``step / warmup_steps``, from step 0).
* **Weights that moved** (:class:`WeightProbe`): after training, a run in which no
  trainable parameter changed is an error, not a finished run.
"""

from __future__ import annotations

import math
from typing import Any

MIN_STEPS = 10
"""Fewer optimizer steps than this are warned about (a cosine schedule needs some points)."""


def upcast_trainable(model: Any) -> int:
    """Cast every trainable parameter that is not float32 to float32 in place; return how many.

    Frozen parameters keep their dtype (bf16/fp16 halves the memory of the base model).
    """
    import torch

    cast = 0
    for param in model.parameters():
        if param.requires_grad and param.dtype != torch.float32:
            param.data = param.data.float()
            cast += 1
    return cast


def optimizer_steps(
    samples: int, per_device_batch: int, accumulation: int, epochs: float, max_steps: int,
    world_size: int = 1,
) -> int:  # fmt: skip
    """Optimizer steps the trainer will take (transformers ``Trainer`` arithmetic, pure).

    ``ceil(samples / (per_device_batch * world_size))`` batches per epoch, ``ceil`` of that
    over ``accumulation`` updates per epoch (a partial accumulation still steps), times
    ``epochs`` rounded up; ``max_steps > 0`` wins.
    """
    if max_steps > 0:
        return max_steps
    batches = math.ceil(samples / max(1, per_device_batch * world_size))
    per_epoch = max(1, math.ceil(batches / max(1, accumulation)))
    return max(1, math.ceil(per_epoch * epochs))


def warmup_steps(total: int, warmup_ratio: float) -> int:
    """Warm-up steps of a ratio (transformers: ``ceil(total * ratio)``; pure)."""
    return math.ceil(total * warmup_ratio) if warmup_ratio > 0 else 0


def schedule_warning(
    samples: int, global_batch: int, total: int, warmup: int, max_steps: int = -1
) -> str | None:
    """One line when ``total`` steps are too few for the schedule, else ``None`` (pure).

    Too few: every step is in warm-up (the first warm-up step has learning rate 0, so one
    step trains nothing), or fewer than :data:`MIN_STEPS` steps in all. With ``max_steps >
    0`` the count is ``--max-steps`` itself (it overrides epochs and batch), so the line
    names that option, not a smaller ``--global-batch`` that would change nothing.
    """
    if total >= MIN_STEPS and warmup < total:
        return None
    lr0 = "; its first step has learning rate 0" if warmup else ""
    all_warm = " (all of it warm-up)" if warmup >= total else ""
    tail = f"step(s){all_warm}, {warmup} of warm-up{lr0}: too few for the schedule; "
    if max_steps > 0:
        return (
            f"warning: --max-steps {max_steps} gives {total} optimizer {tail}use --max-steps "
            f"{MIN_STEPS} or more"
        )
    suggestion = max(1, samples // MIN_STEPS)
    return (
        f"warning: {samples} samples at global batch {global_batch} give {total} optimizer "
        f"{tail}use --global-batch {suggestion} (about {MIN_STEPS} steps) or more --epochs"
    )


class WeightProbe:
    """A cheap fingerprint of the trainable parameters, to tell after training whether any moved.

    Per parameter: its first 256 values and its float64 sum (LoRA ``B`` starts at 0, so its
    sum moves at the first real step). Parameters partitioned away (DeepSpeed ZeRO-3, no
    local elements) are not probed.
    """

    def __init__(self, model: Any) -> None:
        self.before = {name: self._read(p) for name, p in self._params(model)}

    @staticmethod
    def _params(model: Any) -> list[tuple[str, Any]]:
        return [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.numel() > 0]

    @staticmethod
    def _read(param: Any) -> tuple[Any, float]:
        import torch

        flat = param.detach().reshape(-1)
        return flat[:256].to(torch.float32).clone().cpu(), float(flat.double().sum())

    def changed(self, model: Any) -> int:
        """How many probed parameters differ now from when the probe was made."""
        import torch

        moved = 0
        for name, param in self._params(model):
            if name not in self.before:
                continue
            head, total = self.before[name]
            now_head, now_total = self._read(param)
            if now_total != total or not torch.equal(now_head, head):
                moved += 1
        return moved


def split_eval(conversations: list[Any], fraction: float, seed: int) -> tuple[list[Any], list[Any]]:
    """``(train, eval)``: a seeded ``fraction`` of the conversations held out (at least one).

    Conversations of one image (``image_key``-like ``source`` attribute, else the first image
    path) stay on one side, so a question and its paired leading question are never split.

    Raises:
        ValueError: nothing would be left to train on.
    """
    import random

    def group(c: Any) -> str:
        return str(getattr(c, "group", None) or (c.images[0] if c.images else c.id))

    keys = sorted({group(c) for c in conversations})
    random.Random(seed).shuffle(keys)
    n_eval = max(1, round(len(keys) * fraction))
    if n_eval >= len(keys):
        raise ValueError(
            f"--eval-fraction {fraction} leaves no training data ({len(keys)} image groups)"
        )
    held = set(keys[:n_eval])
    return [c for c in conversations if group(c) not in held], [
        c for c in conversations if group(c) in held
    ]


__all__ = [
    "MIN_STEPS",
    "WeightProbe",
    "optimizer_steps",
    "schedule_warning",
    "split_eval",
    "upcast_trainable",
    "warmup_steps",
]
