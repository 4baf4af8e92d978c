"""Settings of ``mmrobust finetune``, with the MMR paper's values as defaults.

Sources of the defaults:

* MMR paper (arXiv:2406.10638) appendix B.1, **Table 10, "Finetune" row**:
  global batch size 128, learning rate 2e-4, cosine decay, warm-up ratio 0.03,
  weight decay 0, 1 epoch, AdamW, DeepSpeed ZeRO stage 3; section 6.1: LoRA on
  the connector and the language model; section 5: loss on the responses only;
  appendix B.1: greedy decoding at test time.
* The paper's model is built on Bunny; its LoRA script
  (``BAAI-DCAI/Bunny`` ``script/train/finetune_lora.sh``, commit 6986cac) gives
  what the paper leaves out: LoRA rank 128, alpha 256, the connector trained in
  full at its own learning rate 2e-5 (``--mm_projector_lr``), bf16,
  ``--model_max_length 2048``, gradient checkpointing, ``--save_steps 500``;
  ``bunny/train/train.py`` (commit 21483e8): LoRA dropout 0.05 on every linear
  layer of the language model, ``lm_head`` excluded.

Every value can be overridden, and all of them are written to the training card.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mmrobust.finetune.data import Composition, Polarity
from mmrobust.finetune.video import VideoInput
from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE

TABLE10: dict[str, Any] = {
    "global_batch": 128,
    "learning_rate": 2e-4,
    "lr_scheduler": "cosine",
    "warmup_ratio": 0.03,
    "weight_decay": 0.0,
    "epochs": 1.0,
    "optimizer": "adamw_torch",
    "deepspeed_stage": 3,
}
"""MMR paper, appendix B.1, Table 10 ("Finetune" row)."""


class FinetuneConfig(BaseModel):
    """One fine-tuning run (library form of ``mmrobust finetune``).

    Attributes:
        model: hub id or local folder of an image-text-to-text model (``hf:`` prefix allowed).
        data: generated data: ``llava.json`` / ``mmr.json`` of ``mmrobust mmr-data`` or its
            output folder (reads ``llava.json``), or any file in those formats.
        extra: sampled / general instruction data in the same formats (the paper mixes in
            LLaVA, VQA, OCR and text-only data).
        out: output folder (adapter or model, processor, card, loss curve, checkpoints).
        images: folder relative image paths are resolved against first.
        composition: ``generated`` | ``combination`` | ``concatenation`` (see
            :mod:`mmrobust.finetune.data`); ``None``: ``combination`` with extra data, else
            ``generated``.
        rounds: concatenation: at most this many generated rounds per sample (``None``: all).
        polarity: ``both`` | ``positive`` | ``negative`` generated samples.
        method: ``lora`` (PEFT) or ``full`` (language model and connector; vision encoder frozen).
        lora_r, lora_alpha, lora_dropout: LoRA settings (Bunny's).
        projector: how the vision-language connector is trained: ``full`` (Bunny:
            all its weights, at ``projector_lr``), ``lora`` (LoRA like the language model),
            ``frozen``.
        projector_lr: learning rate of a fully trained connector (``None``: ``learning_rate``).
        learning_rate, lr_scheduler, warmup_ratio, weight_decay, epochs, optimizer: Table 10.
        global_batch: samples per optimizer step over all devices (Table 10: 128), reached
            by gradient accumulation: ``ceil(global_batch / (per_device_batch * world_size))``.
        per_device_batch: samples per forward pass on one device.
        max_steps: stop after this many optimizer steps (``-1``: the epochs decide).
        max_length: tokens per sample (images included); longer samples are skipped and
            reported, never truncated.
        seed: seeds weights of new modules (LoRA), data order and dropout.
        dtype: ``auto`` (bfloat16 on a GPU that supports it, else float32), ``float32``,
            ``bfloat16``, ``float16`` (the last two train in mixed precision).
        device: ``auto`` or ``cpu`` (forces the CPU).
        gradient_checkpointing: trade compute for memory (Bunny: on; off by default here
            because it only pays on large models).
        save_steps: checkpoint every N optimizer steps (resume point after a kill).
        save_total_limit: checkpoints kept.
        logging_steps: loss logged every N steps (the loss curve's resolution).
        deepspeed: a DeepSpeed JSON config (ZeRO-3: ``finetune/configs/zero3.json``).
        resume: continue from the last complete checkpoint in ``out``.
        merge: also write the base model with the adapter merged in to ``out/merged``.
        chat_template: Jinja file overriding the processor's chat template.
        processor_kwargs: keyword arguments for ``AutoProcessor.from_pretrained``.
        revision: hub revision.
        trust_remote_code: allow checkpoint code.
        num_workers: data-loader worker processes.
        eval_fraction: share of the data held out for an evaluation loss (seeded; the
            conversations of one image stay together); 0: none.
        eval_data: evaluation files (same formats) instead of a held-out share; refused when
            a sample overlaps the training data (:mod:`mmrobust.finetune.overlap`).
        allow_overlap: accept ``eval_data`` that overlaps the training data.
        eval_steps: also evaluate every N optimizer steps (``None``: before and after only).
        report_to: ``none``, ``tensorboard`` (event files in ``out/checkpoints/runs``) or
            ``wandb`` (needs ``wandb`` installed and logged in); the loss CSV is always written.
        push_to_hub: a hub repository id the trainer pushes the result to (``None``: no push;
            needs network and ``hf auth login`` or ``HF_TOKEN``).
        load_in_4bit: QLoRA: load the base model 4-bit NF4 through bitsandbytes (CUDA only;
            LoRA only); its LoRA weights train in float32 over the frozen 4-bit base.
        video_input: ``images`` (every frame an image; default) or ``video``: a sample whose
            images are the frames of one clip (``video_metadata``, 2+ frames) goes in as the
            processor's native video with its frame times, as ``hf:`` evaluation does with
            ``--model-arg video_input=video`` (:mod:`mmrobust.finetune.video`).
        image_max_side: pixels; every training image and video frame is read as ``hf:``
            evaluation reads it and downscaled so its longer side is at most this, as
            ``hf:``'s ``image_max_side`` does (same default,
            ``frame_size.DEFAULT_IMAGE_MAX_SIDE``; :mod:`mmrobust.finetune.pixels`);
            0: as read. Evaluate with the same ``--model-arg image_max_side``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    data: list[Path] = Field(min_length=1)
    extra: list[Path] = Field(default_factory=list)
    out: Path
    images: Path | None = None
    composition: Composition | None = None
    rounds: int | None = Field(None, ge=1)
    polarity: Polarity = "both"
    method: Literal["lora", "full"] = "lora"
    lora_r: int = Field(128, ge=1)
    lora_alpha: int = Field(256, ge=1)
    lora_dropout: float = Field(0.05, ge=0, lt=1)
    projector: Literal["full", "lora", "frozen"] = "full"
    projector_lr: float | None = Field(2e-5, gt=0)
    learning_rate: float = Field(TABLE10["learning_rate"], gt=0)
    lr_scheduler: str = str(TABLE10["lr_scheduler"])
    warmup_ratio: float = Field(TABLE10["warmup_ratio"], ge=0, lt=1)
    weight_decay: float = Field(TABLE10["weight_decay"], ge=0)
    epochs: float = Field(TABLE10["epochs"], gt=0)
    optimizer: str = str(TABLE10["optimizer"])
    global_batch: int = Field(TABLE10["global_batch"], ge=1)
    per_device_batch: int = Field(4, ge=1)
    max_steps: int = Field(-1, ge=-1)
    max_length: int = Field(2048, ge=8)
    seed: int = 0
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: Literal["auto", "cpu"] = "auto"
    gradient_checkpointing: bool = False
    save_steps: int = Field(500, ge=1)
    save_total_limit: int = Field(2, ge=1)
    logging_steps: int = Field(1, ge=1)
    deepspeed: Path | None = None
    resume: bool = True
    merge: bool = False
    chat_template: Path | None = None
    processor_kwargs: dict[str, Any] | None = None
    revision: str | None = None
    trust_remote_code: bool = False
    num_workers: int = Field(0, ge=0)
    eval_fraction: float = Field(0.0, ge=0, lt=1)
    eval_data: list[Path] = Field(default_factory=list)
    allow_overlap: bool = False
    eval_steps: int | None = Field(None, ge=1)
    report_to: Literal["none", "tensorboard", "wandb"] = "none"
    push_to_hub: str | None = None
    load_in_4bit: bool = False
    video_input: VideoInput = "images"
    image_max_side: int = Field(DEFAULT_IMAGE_MAX_SIDE, ge=0)

    @model_validator(mode="after")
    def _check(self) -> FinetuneConfig:
        if self.max_steps == 0:
            raise ValueError("max_steps must be positive or -1")
        if self.eval_fraction and self.eval_data:
            raise ValueError("give --eval-fraction or --eval-data, not both")
        if self.load_in_4bit and self.method != "lora":
            raise ValueError("4-bit loading (QLoRA) trains LoRA only: use --method lora")
        return self

    @property
    def model_id(self) -> str:
        """The model without an ``hf:`` prefix."""
        return self.model[3:] if self.model.startswith("hf:") else self.model

    def accumulation(self, world_size: int) -> int:
        """Gradient-accumulation steps that reach ``global_batch`` on ``world_size`` devices."""
        per_step = self.per_device_batch * max(1, world_size)
        return max(1, -(-self.global_batch // per_step))

    def fingerprint(self) -> dict[str, Any]:
        """Settings that change the result (a resumed run must match them)."""
        skip = {"out", "resume", "merge", "num_workers", "save_total_limit", "report_to"}
        skip |= {"push_to_hub", "allow_overlap"}
        return {k: v for k, v in self.model_dump(mode="json").items() if k not in skip}


__all__ = ["TABLE10", "FinetuneConfig"]
