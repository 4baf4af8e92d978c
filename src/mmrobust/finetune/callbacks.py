"""Trainer callbacks: a rich progress bar (loss, tokens/s) and the live loss log (CSV)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from mmrobust.finetune.outputs import write_loss_csv


class ProgressCallback(TrainerCallback):
    """Optimizer steps done / total, the last logged loss, and input tokens per second.

    Tokens are the trainer's ``num_input_tokens_seen`` (non-padding input
    tokens, image tokens included), over the wall time of this process (a
    resumed run counts from its restart).
    """

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None
        self._t0 = 0.0
        self._tokens0 = 0
        self._loss: float | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("finetune"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TextColumn("{task.fields[tps]} tok/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "train", total=state.max_steps, completed=state.global_step, loss="-", tps="-"
        )
        self._t0 = time.monotonic()
        self._tokens0 = int(state.num_input_tokens_seen or 0)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._progress is None:
            return
        elapsed = max(time.monotonic() - self._t0, 1e-9)
        tps = (int(state.num_input_tokens_seen or 0) - self._tokens0) / elapsed
        loss = "-" if self._loss is None else f"{self._loss:.4f}"
        self._progress.update(self._task, completed=state.global_step, loss=loss, tps=f"{tps:,.0f}")

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if logs and "loss" in logs:  # logged after on_step_end: refresh the bar with it
            self._loss = float(logs["loss"])
            self.on_step_end(args, state, control)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class LossLogCallback(TrainerCallback):
    """Rewrites ``loss.csv`` from the trainer's log history at every log (resume keeps it whole)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if state.is_world_process_zero and logs and "loss" in logs:
            write_loss_csv(state.log_history, self.path)


__all__ = ["LossLogCallback", "ProgressCallback"]
