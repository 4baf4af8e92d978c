"""``run_finetune``: data -> checks -> TRL ``SFTTrainer`` (LoRA via PEFT) -> outputs.

The training loop is TRL's ``SFTTrainer`` (a ``transformers.Trainer``):
optimizer, cosine schedule with warm-up, gradient accumulation, mixed
precision, checkpoints, resume, ``accelerate launch`` / DeepSpeed. mmrobust
adds what the MMR data needs: the family-agnostic assistant-only labels and
the skip-and-report data checks (:mod:`mmrobust.finetune.collate`), passed as
a ``data_collator`` with TRL's dataset preparation skipped (TRL's own
vision collator truncates over-long samples and masks assistant turns only for
the chat templates it ships patches for).
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.finetune.collate import ChatRenderer, Collator, Encoder, TemplateError, prepare_rows
from mmrobust.finetune.config import TABLE10, FinetuneConfig
from mmrobust.finetune.data import load_training_data
from mmrobust.finetune.model import (
    find_parts,
    freeze_for_full,
    load_for_training,
    lora_target_regex,
    model_identity,
)
from mmrobust.finetune.outputs import (
    card_markdown,
    complete_checkpoints,
    loss_rows,
    plot_loss,
    write_eval_csv,
    write_loss_csv,
)
from mmrobust.finetune.overlap import find_overlap
from mmrobust.finetune.preflight import (
    files_problem,
    hub_problem,
    model_problem,
    out_problem,
    report_problem,
)
from mmrobust.finetune.resume import (
    SOURCES,
    changed_settings,
    run_fingerprint,
    run_train_loss,
)
from mmrobust.finetune.safeguards import (
    WeightProbe,
    optimizer_steps,
    schedule_warning,
    split_eval,
    upcast_trainable,
    warmup_steps,
)
from mmrobust.finetune.trainer import read_totals, sft_args, trainer_class, versions
from mmrobust.finetune.video import data_problem, processor_problem
from mmrobust.mmrdata.writers import write_json

CARD = "training_card.json"
RUN_CONFIG = "run_config.json"


class FinetuneError(ValueError):
    """A run that cannot start (one line, with the fix)."""


@dataclass
class FinetuneResult:
    """What ``run_finetune`` did.

    Attributes:
        out: the output folder.
        samples: conversations trained on; ``skipped``: records skipped per reason.
        steps: optimizer steps done in total.
        first_loss, final_loss: first and last logged training loss.
        resumed_from: the checkpoint this run continued from, if any.
        already_done: the folder already held this finished run (nothing was trained).
        card: the training card (``training_card.json``).
    """

    out: Path
    samples: int
    skipped: dict[str, int]
    steps: int
    first_loss: float | None
    final_loss: float | None
    resumed_from: Path | None = None
    already_done: bool = False
    card: dict[str, Any] = field(default_factory=dict)


def _resolve_dtype(config: FinetuneConfig) -> str:
    import torch

    if config.dtype != "auto":
        return config.dtype
    if config.device != "cpu" and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return "bfloat16"
    return "float32"


def _merge_saved(config: FinetuneConfig, out: Path, say: Callable[[str], None]) -> None:
    """Write ``out/merged`` from the saved adapter (one process; after a multi-GPU run)."""
    from mmrobust.models._adapter import apply_adapter

    model, processor = load_for_training(
        config.model_id, dtype=_resolve_dtype(config), revision=config.revision,
        trust_remote_code=config.trust_remote_code, processor_kwargs=config.processor_kwargs,
    )  # fmt: skip
    apply_adapter(model, out).save_pretrained(str(out / "merged"))
    processor.save_pretrained(str(out / "merged"))
    say(f"wrote {out / 'merged'}")


def run_finetune(
    config: FinetuneConfig,
    *,
    progress: bool = True,
    callbacks: Sequence[Any] = (),
    log: Callable[[str], None] | None = None,
) -> FinetuneResult:
    """Fine-tune ``config.model`` on the composed data; write the outputs to ``config.out``.

    Re-running the same call resumes from the last complete checkpoint in
    ``out/checkpoints``; a folder that already holds the finished run returns
    at once (``already_done``).

    Args:
        config: the run's settings.
        progress: show a progress bar (steps, loss, tokens/s).
        callbacks: extra ``transformers.TrainerCallback`` objects.
        log: where one-line messages go (default: stderr).

    Returns:
        :class:`FinetuneResult`.

    Raises:
        FileNotFoundError: a data file does not exist.
        FinetuneError: the settings conflict with the folder's earlier run, no sample
            is trainable, or the model cannot be trained (no chat template, no
            language model); one line each.
        ImportError: the ``train`` extra is not installed.
    """
    say = log or (lambda message: print(message, file=sys.stderr))
    started = time.monotonic()
    out = Path(config.out)
    # every check that needs neither torch nor the model, before either loads and before
    # anything is written: a bad input costs a second and leaves no folder
    for problem in (
        model_problem(config.model),
        out_problem(out),
        files_problem(config),
        report_problem(config.report_to),
    ):
        if problem:
            raise FinetuneError(problem)
    conversations, report = load_training_data(
        config.data,
        config.extra,
        images=config.images,
        composition=config.composition,
        rounds=config.rounds,
        polarity=config.polarity,
    )
    held_out: list[Any] = []
    if config.eval_data:
        held_out, _ = load_training_data(
            config.eval_data, images=config.images, polarity=config.polarity
        )
        overlap = None if config.allow_overlap else find_overlap(conversations, held_out).line()
        if overlap:
            raise FinetuneError(overlap)
    elif config.eval_fraction:
        try:
            conversations, held_out = split_eval(conversations, config.eval_fraction, config.seed)
        except ValueError as exc:
            raise FinetuneError(str(exc)) from None
    problem = data_problem(conversations, held_out, config.video_input, config.per_device_batch)
    if problem:  # before the model loads
        raise FinetuneError(problem)
    problem, local_only = hub_problem(config.model_id, config.revision)
    if problem:
        raise FinetuneError(problem)

    try:
        import torch
        from peft import LoraConfig
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            f"finetune needs the train extra: pip install -e '.[train]' ({exc})"
        ) from exc
    from datasets import Dataset
    from transformers import PrinterCallback
    from transformers import ProgressCallback as HFProgress

    from mmrobust.finetune.callbacks import LossLogCallback, ProgressCallback

    checkpoints = out / "checkpoints"
    main_process = os.environ.get("RANK", "0") == "0"  # under accelerate/torchrun: write once
    fingerprint = run_fingerprint(config, report)
    previous = out / RUN_CONFIG
    # the earlier settings bind only when there is something of that run to resume or keep
    # (a checkpoint, or its card): a start that failed before training (a model that did not
    # load, no chat template, nothing trainable) must not block the corrected retry (issue 30)
    earlier_run = bool(complete_checkpoints(checkpoints)) or (out / CARD).is_file()
    if previous.is_file() and config.resume and earlier_run:
        import json

        changed = changed_settings(previous, fingerprint)
        if changed is not None:
            raise FinetuneError(
                f"{out} holds a run with other settings ({changed}); "
                "use a new --out, or --no-resume to start over there"
            )
        card_path = out / CARD
        if card_path.is_file():
            card = json.loads(card_path.read_text(encoding="utf-8"))
            if card.get("status") == "finished":
                say(f"{out} already holds this finished run; nothing to train")
                if config.merge and config.method == "lora" and not (out / "merged").is_dir():
                    _merge_saved(config, out, say)
                result = card["result"]
                return FinetuneResult(
                    out, card["data"]["trained"], card["data"]["skipped"], result["steps"],
                    result["first_loss"], result["final_loss"], None, True, card,
                )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    if main_process:
        if not config.resume:
            shutil.rmtree(checkpoints, ignore_errors=True)
            (out / CARD).unlink(missing_ok=True)
        write_json(previous, fingerprint)

    dtype = _resolve_dtype(config)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    accumulation = config.accumulation(world_size)
    args = sft_args(
        config,
        checkpoints=str(checkpoints),
        dtype=dtype,
        accumulation=accumulation,
        evaluates=bool(held_out),
    )  # fmt: skip  (before the model, so DeepSpeed ZeRO-3 can partition it while loading)

    model, processor = load_for_training(
        config.model_id,
        dtype=dtype,
        revision=config.revision,
        trust_remote_code=config.trust_remote_code,
        processor_kwargs=config.processor_kwargs,
        load_in_4bit=config.load_in_4bit,
        local_files_only=local_only,
    )
    if config.chat_template is not None:
        processor.chat_template = config.chat_template.read_text(encoding="utf-8")
    problem = processor_problem(processor, config.video_input)
    if problem:  # as hf: refuses video_input=video
        raise FinetuneError(f"finetune: {config.model_id}: {problem}")
    tokenizer = processor.tokenizer
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    try:
        renderer = ChatRenderer(processor)
        encoder = Encoder(processor, image_max_side=config.image_max_side)
        rows = prepare_rows(
            conversations, renderer, encoder, config.max_length, report.problems,
            progress=progress and main_process, video_input=config.video_input,
        )  # fmt: skip
        eval_problems: list[Any] = []
        eval_rows = prepare_rows(
            held_out, renderer, encoder, config.max_length, eval_problems,
            video_input=config.video_input,
        )  # fmt: skip
    except TemplateError as exc:
        raise FinetuneError(f"finetune: {config.model_id}: {exc}") from None
    if main_process:
        problems = [vars(p) for p in report.problems]
        write_json(out / "data_report.json", {**report.summary(), "problems": problems})
    counts = report.counts()
    if counts:
        say(
            f"skipped {sum(counts.values())} records: {counts} (details in {out / 'data_report.json'})"
        )
    if not rows:
        raise FinetuneError(f"no trainable samples in the data (skipped: {counts})")
    if held_out and not eval_rows:
        raise FinetuneError(f"no usable evaluation sample ({len(eval_problems)} skipped)")
    total_steps = optimizer_steps(
        len(rows), config.per_device_batch, accumulation, config.epochs, config.max_steps,
        world_size,
    )  # fmt: skip
    warning = schedule_warning(
        len(rows), config.per_device_batch * world_size * accumulation, total_steps,
        warmup_steps(total_steps, config.warmup_ratio), config.max_steps,
    )  # fmt: skip
    if warning:
        say(warning)

    parts = find_parts(model)
    trains_projector = config.projector == "full" and parts.projector is not None
    peft_config = None
    if config.method == "lora":
        peft_config = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=lora_target_regex(model, parts, config.projector == "lora"),
            modules_to_save=[parts.projector] if trains_projector and parts.projector else None,
            task_type="CAUSAL_LM",
        )
    else:
        freeze_for_full(model, parts, config.projector != "frozen")

    trainer_cls = trainer_class()
    trainer_cls.projector_prefix = parts.projector if trains_projector else None
    trainer_cls.projector_lr = config.projector_lr
    loss_csv = out / "loss.csv"
    trainer = trainer_cls(
        model=model,
        args=args,
        data_collator=Collator(encoder),
        train_dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(eval_rows) if eval_rows else None,
        processing_class=processor,
        peft_config=peft_config,
        callbacks=[LossLogCallback(loss_csv), *callbacks],
    )
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(HFProgress)
    if progress:
        trainer.add_callback(ProgressCallback())
    if dtype != "float32" and not trainer.is_deepspeed_enabled:
        upcast_trainable(trainer.model)  # float32 master weights (issue 31 item 1)
    probe = WeightProbe(trainer.model)
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in trainer.model.parameters())

    done = complete_checkpoints(checkpoints) if config.resume else []
    resumed_from = done[-1] if done else None
    if resumed_from is not None:
        say(f"resuming from {resumed_from}")
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    totals = read_totals(resumed_from) if resumed_from is not None else None
    start_step = int(totals["step"]) if totals else 0
    if totals:  # what the steps before the checkpoint contributed (trainer.RUN_TOTALS)
        trainer.loss_carried = float(totals["loss_sum"])
        trainer.eval_loss_before = totals.get("eval_loss_before")
    elif eval_rows and resumed_from is None:
        trainer.eval_loss_before = float(trainer.evaluate()["eval_loss"])
    eval_before = trainer.eval_loss_before
    trainer.train(resume_from_checkpoint=str(resumed_from) if resumed_from else None)
    eval_after = float(trainer.evaluate()["eval_loss"]) if eval_rows else None
    if not trainer.is_deepspeed_enabled and probe.changed(trainer.model) == 0:
        shutil.rmtree(checkpoints, ignore_errors=True)  # so the corrected retry starts clean
        raise FinetuneError(
            f"no trainable weight changed in {trainer.state.global_step} optimizer step(s) "
            f"({warning.split(': ', 1)[1] if warning else 'learning rate 0 or no gradient'}); "
            "nothing was trained"
        )

    trainer.save_model(str(out))
    main_process = bool(trainer.is_world_process_zero())
    if main_process:
        processor.save_pretrained(str(out))
    if config.merge and config.method == "lora" and main_process:
        if trainer.is_deepspeed_enabled:  # partitioned weights: merge from the saved adapter
            say("not merged under DeepSpeed: re-run the same command in one process for OUT/merged")
        else:
            merged = trainer.model.merge_and_unload().to(getattr(torch, dtype))
            merged.save_pretrained(str(out / "merged"))
            processor.save_pretrained(str(out / "merged"))

    history = trainer.state.log_history
    rows_loss = loss_rows(history)
    if rows_loss and main_process:
        write_loss_csv(history, loss_csv)
        plot_loss(
            rows_loss,
            out / "loss.png",
            f"{config.model_id}: {report.composition}, {len(rows)} samples",
        )
    if eval_rows and main_process:
        write_eval_csv(history, eval_before, out / "eval_loss.csv")
    summary: dict[str, Any] = next((e for e in reversed(history) if "train_runtime" in e), {})
    train_loss = run_train_loss(
        summary.get("train_loss"), trainer.state.global_step, start_step, trainer.loss_carried,
        resumed=resumed_from is not None and totals is None,
    )  # fmt: skip
    tokens = int(trainer.state.num_input_tokens_seen or 0)
    label_tokens = sum(r["n_labels"] for r in rows)
    peak_gpu = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    hyper = {
        **{k: v for k, v in config.fingerprint().items() if k not in ("data", "extra", "images")},
        "dtype_resolved": dtype,
        "world_size": world_size,
        "gradient_accumulation_steps": accumulation,
        "effective_global_batch": config.per_device_batch * world_size * accumulation,
        "lora_target_modules": peft_config.target_modules if peft_config else None,
        "trained_projector": parts.projector if config.projector != "frozen" else None,
        "language_model": parts.language_model,
        **(
            {"cap_pixels_per_frame": encoder.pixel_cap}
            if config.video_input == "video" and encoder.pixel_cap is not None
            else {}
        ),
    }
    defaults = FinetuneConfig.model_fields
    sources = {
        k: (
            SOURCES.get(k, "mmrobust default")
            if getattr(config, k) == defaults[k].default
            else "set"
        )
        for k in hyper
        if k in defaults
    }
    data_summary = report.summary()
    card = {
        "status": "finished",
        "base": model_identity(config.model_id, model),
        "method": config.method,
        "hyperparameters": hyper,
        "sources": sources,
        "table10": TABLE10,
        "data": {**data_summary, "trained": len(rows)},
        "result": {
            "steps": trainer.state.global_step,
            "epochs": trainer.state.epoch,
            "first_loss": rows_loss[0]["loss"] if rows_loss else None,
            "final_loss": rows_loss[-1]["loss"] if rows_loss else None,
            "train_loss": train_loss,
            "train_runtime_s": summary.get("train_runtime"),
            "input_tokens_seen": tokens,
            "input_tokens_per_s": tokens / summary["train_runtime"]
            if summary.get("train_runtime")
            else None,
            "answer_tokens_per_epoch": label_tokens,
            "trainable_parameters": trainable,
            "total_parameters": total,
            "peak_gpu_memory_mib": peak_gpu,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "wall_s": time.monotonic() - started,
            "resumed_from": str(resumed_from) if resumed_from else None,
            "eval_samples": len(eval_rows),
            "eval_loss_before": eval_before,
            "eval_loss_after": eval_after,
            "schedule_warning": warning,
        },
        "versions": versions(),
        "device": "cuda:" + torch.cuda.get_device_name(0)
        if torch.cuda.is_available() and config.device != "cpu"
        else "cpu",
    }
    if main_process:
        write_json(out / CARD, card)
        write_text(out / "README.md", card_markdown(card))
    result = card["result"]
    return FinetuneResult(
        out=out,
        samples=len(rows),
        skipped=counts,
        steps=int(result["steps"]),
        first_loss=result["first_loss"],
        final_loss=result["final_loss"],
        resumed_from=resumed_from,
        card=card,
    )


__all__ = ["CARD", "FinetuneError", "FinetuneResult", "prepare_rows", "run_finetune"]
