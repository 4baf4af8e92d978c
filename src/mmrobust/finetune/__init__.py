"""Fine-tune a VLM on MMR's paired data (MMR paper, arXiv:2406.10638, sections 5-6, appendix B).

``mmrobust mmr-data`` -> :func:`run_finetune` -> ``mmrobust eval`` before and after
-> ``mmrobust report`` / ``compare``. LoRA through PEFT, TRL's ``SFTTrainer``,
the paper's Table 10 hyper-parameters as defaults (:mod:`mmrobust.finetune.config`),
loss on the assistant turns only (:mod:`mmrobust.finetune.collate`), the paper's
data compositions (:mod:`mmrobust.finetune.data`), resumable checkpoints and a
training card (:mod:`mmrobust.finetune.outputs`). Needs the ``train`` extra
(``pip install -e '.[train]'``); torch, transformers, peft and trl are imported
only when a run starts.
"""

from __future__ import annotations

from mmrobust.finetune.config import TABLE10, FinetuneConfig
from mmrobust.finetune.data import (
    Conversation,
    DataReport,
    Problem,
    Turn,
    compose,
    load_training_data,
)

__all__ = [
    "TABLE10",
    "Conversation",
    "DataReport",
    "FinetuneConfig",
    "FinetuneError",
    "FinetuneResult",
    "Problem",
    "Turn",
    "compose",
    "load_training_data",
    "run_finetune",
]


def __getattr__(name: str) -> object:
    """``run_finetune``, ``FinetuneResult``, ``FinetuneError`` load the training stack on first use."""
    if name in ("run_finetune", "FinetuneResult", "FinetuneError"):
        from mmrobust.finetune import train

        return getattr(train, name)
    raise AttributeError(name)
