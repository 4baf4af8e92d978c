"""The ``mmrobust finetune`` command: options -> :class:`FinetuneConfig` -> :func:`run_finetune`.

Registered in :mod:`mmrobust.cli`; kept here so the command's many options sit
next to the settings they fill. Defaults are read from :class:`FinetuneConfig`
(one place); the training stack is imported only when the command runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from mmrobust.finetune.config import FinetuneConfig

_D = {name: field.default for name, field in FinetuneConfig.model_fields.items()}


def finetune_command(
    model: str = typer.Option(
        ..., "--model", help="Base model: hf:<hub-id-or-folder> (hf: optional)."
    ),
    data: list[Path] = typer.Option(
        ...,
        "--data",
        help="Training data: an mmr-data output folder, tamper-data's OUT/train, llava.json "
        "or mmr.json (repeatable).",
    ),
    out: Path = typer.Option(
        ..., "--out", help="Output folder (adapter, card, loss curve, checkpoints)."
    ),
    extra: list[Path] = typer.Option(
        [], "--extra", help="Sampled / general instruction data, same formats (repeatable)."
    ),
    images: Path | None = typer.Option(
        None, "--media", "--images", help="Folder relative image paths resolve against."
    ),
    composition: str | None = typer.Option(
        None,
        "--composition",
        help="generated | combination | concatenation (MMR appendix B.2; default: combination "
        "with --extra, else generated).",
    ),
    rounds: int | None = typer.Option(
        None,
        "--rounds",
        help="Concatenation: generated rounds per sample (MMR Tables 13-14; default all).",
    ),
    polarity: str = typer.Option(_D["polarity"], "--polarity", help="both | positive | negative."),
    method: str = typer.Option(_D["method"], "--method", help="lora (PEFT) | full."),
    lora_r: int = typer.Option(_D["lora_r"], "--lora-r", help="LoRA rank (Bunny: 128)."),
    lora_alpha: int = typer.Option(
        _D["lora_alpha"], "--lora-alpha", help="LoRA alpha (Bunny: 256)."
    ),
    lora_dropout: float = typer.Option(_D["lora_dropout"], "--lora-dropout", help="LoRA dropout."),
    projector: str = typer.Option(
        _D["projector"], "--projector", help="Connector: full (Bunny) | lora | frozen."
    ),
    projector_lr: float = typer.Option(
        _D["projector_lr"], "--projector-lr", help="Learning rate of a fully trained connector."
    ),
    lr: float = typer.Option(_D["learning_rate"], "--lr", help="Learning rate (MMR Table 10)."),
    lr_scheduler: str = typer.Option(
        _D["lr_scheduler"], "--lr-scheduler", help="Schedule (Table 10: cosine)."
    ),
    warmup_ratio: float = typer.Option(
        _D["warmup_ratio"], "--warmup-ratio", help="Warm-up ratio (Table 10)."
    ),
    weight_decay: float = typer.Option(
        _D["weight_decay"], "--weight-decay", help="Weight decay (Table 10)."
    ),
    epochs: float = typer.Option(_D["epochs"], "--epochs", help="Epochs (Table 10: 1)."),
    optimizer: str = typer.Option(
        _D["optimizer"], "--optimizer", help="transformers optim name (AdamW)."
    ),
    global_batch: int = typer.Option(
        _D["global_batch"],
        "--global-batch",
        help="Samples per optimizer step, all devices (Table 10: 128).",
    ),
    per_device_batch: int = typer.Option(
        _D["per_device_batch"], "--per-device-batch", help="Samples per forward pass per device."
    ),
    max_steps: int = typer.Option(
        _D["max_steps"], "--max-steps", help="Stop after N steps (-1: epochs)."
    ),
    max_length: int = typer.Option(
        _D["max_length"],
        "--max-length",
        help="Tokens per sample; longer ones are skipped, not truncated.",
    ),
    seed: int = typer.Option(_D["seed"], "--seed", help="Seed (LoRA init, data order, dropout)."),
    dtype: str = typer.Option(_D["dtype"], "--dtype", help="auto | float32 | bfloat16 | float16."),
    device: str = typer.Option(_D["device"], "--device", help="auto | cpu."),
    gradient_checkpointing: bool = typer.Option(
        False, "--gradient-checkpointing", help="Trade compute for memory."
    ),
    save_steps: int = typer.Option(
        _D["save_steps"], "--save-steps", help="Checkpoint every N steps."
    ),
    save_total_limit: int = typer.Option(
        _D["save_total_limit"], "--save-total-limit", help="Checkpoints kept."
    ),
    logging_steps: int = typer.Option(
        _D["logging_steps"], "--logging-steps", help="Log the loss every N steps."
    ),
    deepspeed: Path | None = typer.Option(
        None, "--deepspeed", help="DeepSpeed JSON (ZeRO-3: mmrobust/finetune/configs/zero3.json)."
    ),
    no_resume: bool = typer.Option(
        False, "--no-resume", help="Start over (delete OUT's checkpoints)."
    ),
    merge: bool = typer.Option(False, "--merge", help="Also write the merged model to OUT/merged."),
    chat_template: Path | None = typer.Option(
        None, "--chat-template", help="Jinja chat template file."
    ),
    processor_kwargs: str | None = typer.Option(
        None, "--processor-kwargs", help="JSON for AutoProcessor, e.g. '{\"max_pixels\": 401408}'."
    ),
    revision: str | None = typer.Option(None, "--revision", help="Hub revision."),
    trust_remote_code: bool = typer.Option(
        False, "--trust-remote-code", help="Allow checkpoint code."
    ),
    workers: int = typer.Option(
        _D["num_workers"], "--workers", help="Data-loader worker processes."
    ),
    eval_fraction: float = typer.Option(
        0.0, "--eval-fraction", help="Hold out this share of the data for an eval loss (0: none)."
    ),
    eval_data: list[Path] = typer.Option(
        [], "--eval-data", help="Evaluation files instead of --eval-fraction (repeatable)."
    ),
    allow_overlap: bool = typer.Option(
        False,
        "--allow-overlap",
        help="Accept --eval-data that shares samples, media or content with the training data.",
    ),
    eval_steps: int | None = typer.Option(
        None, "--eval-steps", help="Also evaluate every N steps (default: before and after)."
    ),
    report_to: str = typer.Option(
        _D["report_to"], "--report-to", help="none | tensorboard | wandb (loss.csv always)."
    ),
    push_to_hub: str | None = typer.Option(
        None, "--push-to-hub", help="Hub repo id to push the result to (needs network, login)."
    ),
    load_in_4bit: bool = typer.Option(
        False, "--load-in-4bit", help="QLoRA: 4-bit NF4 base (bitsandbytes, CUDA only)."
    ),
    video_input: str = typer.Option(
        _D["video_input"],
        "--video-input",
        help="images | video (a clip's frames as native video, as hf: video_input=video).",
    ),
    image_max_side: int = typer.Option(
        _D["image_max_side"],
        "--image-max-side",
        help="Cap images/frames' longer side at N px, as hf: evaluation (0: none).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Fine-tune a VLM on MMR paired data or tamper-data clips (LoRA, TRL SFT, the paper's Table 10 defaults). Re-running resumes."""
    from pydantic import ValidationError

    def fail(message: str, code: int = 2) -> typer.Exit:
        typer.echo(f"error: {message}", err=True)
        return typer.Exit(code)

    try:
        kwargs = json.loads(processor_kwargs) if processor_kwargs else None
    except (json.JSONDecodeError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise fail(f"--processor-kwargs is not JSON: {why}") from None
    try:
        config = FinetuneConfig(
            model=model, data=data, extra=extra, out=out, images=images, composition=composition,
            rounds=rounds, polarity=polarity, method=method, lora_r=lora_r, lora_alpha=lora_alpha,
            lora_dropout=lora_dropout, projector=projector, projector_lr=projector_lr,
            learning_rate=lr, lr_scheduler=lr_scheduler, warmup_ratio=warmup_ratio,
            weight_decay=weight_decay, epochs=epochs, optimizer=optimizer,
            global_batch=global_batch, per_device_batch=per_device_batch, max_steps=max_steps,
            max_length=max_length, seed=seed, dtype=dtype, device=device,
            gradient_checkpointing=gradient_checkpointing, save_steps=save_steps,
            save_total_limit=save_total_limit, logging_steps=logging_steps, deepspeed=deepspeed,
            resume=not no_resume, merge=merge, chat_template=chat_template,
            processor_kwargs=kwargs, revision=revision, trust_remote_code=trust_remote_code,
            num_workers=workers, eval_fraction=eval_fraction, eval_data=eval_data,
            allow_overlap=allow_overlap,
            eval_steps=eval_steps, report_to=report_to, push_to_hub=push_to_hub,
            load_in_4bit=load_in_4bit, video_input=video_input,
            image_max_side=image_max_side,
        )  # fmt: skip
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise fail(f"--{where.replace('_', '-')}: {first['msg']}") from None

    from mmrobust.finetune.train import run_finetune

    try:
        result = run_finetune(config, progress=not quiet, log=lambda m: typer.echo(m, err=True))
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except KeyboardInterrupt:
        typer.echo(
            "interrupted: re-run the same command to resume from the last checkpoint", err=True
        )
        raise typer.Exit(130) from None
    start = "-" if result.first_loss is None else f"{result.first_loss:.4f}"
    final = "-" if result.final_loss is None else f"{result.final_loss:.4f}"
    ran = result.card.get("result", {})
    held = (
        f"; eval loss ({ran['eval_samples']} held out) {ran['eval_loss_before']:.4f} -> "
        f"{ran['eval_loss_after']:.4f}"
        if ran.get("eval_loss_before") is not None and ran.get("eval_loss_after") is not None
        else ""
    )
    typer.echo(
        f"trained on {result.samples} samples (skipped {result.skipped or 'none'}); "
        f"{result.steps} steps; loss {start} -> {final}{held}; wrote {result.out}"
    )


__all__ = ["finetune_command"]
