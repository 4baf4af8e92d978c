"""Files of a fine-tuning run: loss curve (CSV, PNG), training card, checkpoints.

Layout of ``OUT``:

* ``adapter_config.json`` + ``adapter_model.safetensors`` (LoRA; PEFT format) or
  the model's ``config.json`` + weights (``method=full``), with the processor
  files (tokenizer, chat template, image processor);
* ``merged/``: the base model with the adapter merged in (``merge=True``);
* ``training_card.json`` and ``README.md``: base model, data files with sha256,
  composition, skipped records, every hyper-parameter and where it came from,
  library versions, seed, final loss, tokens, time, peak memory;
* ``loss.csv`` (``step, epoch, loss, learning_rate, grad_norm, tokens_seen``) and
  ``loss.png`` (the paper's figures 9-11 and 14 are such curves);
* ``eval_loss.csv`` (``step, eval_loss``; with an evaluation split): before training
  (step 0), every ``eval_steps``, and after training;
* ``data_report.json``: every skipped record with its reason;
* ``checkpoints/checkpoint-<step>/``: resume points (trainer state, optimizer,
  scheduler, RNG states, and ``mmrobust_totals.json``: the figures a resume cannot
  recompute, :data:`mmrobust.finetune.trainer.RUN_TOTALS`).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import atomic_write, write_with
from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE

LOSS_COLUMNS = ("step", "epoch", "loss", "learning_rate", "grad_norm", "tokens_seen")
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


def loss_rows(log_history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The training-loss entries of a trainer log history, one per logged step (pure)."""
    rows = []
    for entry in log_history:
        if "loss" not in entry:
            continue
        rows.append(
            {
                "step": int(entry.get("step", 0)),
                "epoch": entry.get("epoch"),
                "loss": float(entry["loss"]),
                "learning_rate": entry.get("learning_rate"),
                "grad_norm": entry.get("grad_norm"),
                "tokens_seen": entry.get("num_input_tokens_seen"),
            }
        )
    return rows


def write_loss_csv(log_history: Sequence[Mapping[str, Any]], path: Path) -> list[dict[str, Any]]:
    """Write ``loss.csv`` atomically; return its rows."""
    rows = loss_rows(log_history)
    with atomic_write(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=LOSS_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def write_eval_csv(
    log_history: Sequence[Mapping[str, Any]], before: float | None, path: Path
) -> list[tuple[int, float]]:
    """Write ``eval_loss.csv`` (the loss before training at step 0, then the trainer's
    evaluations; one row per step, the last evaluation of a step kept); return its rows."""
    by_step: dict[int, float] = {} if before is None else {0: before}
    for entry in log_history:
        if "eval_loss" in entry:
            by_step[int(entry.get("step", 0))] = float(entry["eval_loss"])
    rows = sorted(by_step.items())
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "eval_loss"])
        writer.writerows(rows)
    return rows


def read_loss_csv(path: Path) -> list[dict[str, float]]:
    """Rows of a ``loss.csv`` (step and loss as numbers)."""
    with path.open(encoding="utf-8") as handle:
        return [
            {"step": float(r["step"]), "loss": float(r["loss"])} for r in csv.DictReader(handle)
        ]


def plot_loss(rows: Sequence[Mapping[str, Any]], path: Path, title: str) -> None:
    """Training loss per optimizer step (and a moving average) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    losses = [r["loss"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    ax.plot(steps, losses, lw=0.8, alpha=0.5, label="loss")
    window = max(1, len(losses) // 20)
    if window > 1:
        smooth = [
            sum(losses[max(0, i - window + 1) : i + 1])
            / len(losses[max(0, i - window + 1) : i + 1])
            for i in range(len(losses))
        ]
        ax.plot(steps, smooth, lw=1.5, label=f"mean of {window}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss (assistant tokens)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_with(path, fig.savefig)
    plt.close(fig)


def complete_checkpoints(folder: Path) -> list[Path]:
    """``checkpoint-N`` folders that hold a finished save, oldest first.

    A checkpoint counts as complete when its ``trainer_state.json`` parses and
    it holds weights and the optimizer state; a folder cut short by a kill
    during a save is passed over.
    """
    found = []
    if not folder.is_dir():
        return []
    for item in folder.iterdir():
        match = CHECKPOINT_RE.match(item.name)
        if not (match and item.is_dir()):
            continue
        try:
            json.loads((item / "trainer_state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        weights = (
            any(item.glob("*.safetensors"))
            or any(item.glob("*.bin"))
            or any(item.glob("global_step*"))
        )
        optimizer = (item / "optimizer.pt").is_file() or any(item.glob("global_step*"))
        if weights and optimizer:
            found.append((int(match.group(1)), item))
    return [path for _, path in sorted(found)]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    return str(value)


def card_markdown(card: Mapping[str, Any]) -> str:
    """A human-readable training card (``README.md``) from the JSON card."""
    base = card["base"]["model"]
    if card["method"] == "lora":
        usage = f"mmrobust eval --model hf:{base} --model-arg adapter=<this folder>"
    else:
        usage = "mmrobust eval --model hf:<this folder>"
    side = card["hyperparameters"].get("image_max_side", DEFAULT_IMAGE_MAX_SIDE)
    if side != DEFAULT_IMAGE_MAX_SIDE:  # evaluated on the pixels it was trained on
        usage += f" --model-arg image_max_side={side}"
    if card["hyperparameters"].get("video_input") == "video":  # trained on clips as videos
        usage += " --model-arg video_input=video"
    lines = [
        f"# {base} fine-tuned with mmrobust",
        "",
        f"Method: **{card['method']}**; evaluate with `{usage}`.",
        "",
        "## Result",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for key, value in card["result"].items():
        lines.append(f"| {key} | {_fmt(value)} |")
    lines += ["", "## Hyper-parameters", "", "| setting | value | source |", "|---|---|---|"]
    for key, value in card["hyperparameters"].items():
        lines.append(f"| {key} | {_fmt(value)} | {card['sources'].get(key, '')} |")
    data = card["data"]
    lines += [
        "",
        "## Data",
        "",
        f"Composition **{data['composition']}**, rounds {data['rounds'] or 'all'}, "
        f"polarity {data['polarity']}: {data['samples']} samples, {data['rounds_total']} rounds "
        f"({data['rounds_left_out']} generated rounds left out); trained on {data['trained']}.",
        "",
        "| file | format | source | records | kept | sha256 |",
        "|---|---|---|---|---|---|",
    ]
    for f in data["files"]:
        lines.append(
            f"| {f['path']} | {f['format']} | {f['source']} | {f['records']} | {f['kept']} | "
            f"`{f['sha256'][:16]}` |"
        )
    lines += ["", f"Skipped: {data['skipped'] or 'none'}"]
    for kind, examples in data["skipped_examples"].items():
        lines.append(f"- {kind}: " + "; ".join(examples))
    lines += ["", "## Versions", ""]
    lines += [f"- {k} {v}" for k, v in card["versions"].items()]
    lines += [
        "",
        f"Seed {card['hyperparameters']['seed']}. Loss curve: `loss.csv`, `loss.png`.",
        "",
    ]
    return "\n".join(lines)


__all__ = [
    "LOSS_COLUMNS",
    "card_markdown",
    "complete_checkpoints",
    "loss_rows",
    "plot_loss",
    "read_loss_csv",
    "write_eval_csv",
    "write_loss_csv",
]
