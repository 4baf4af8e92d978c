"""The GPU-only paths of ``mmrobust finetune``, checked as far as a CPU allows.

docs/finetune.md "What runs where": the global batch on several GPUs (gradient accumulation
from the launcher's world size), QLoRA's refusal where it cannot run and its NF4 settings,
``--push-to-hub`` reaching the trainer's arguments. The training itself on a GPU is not run
here (no GPU in CI).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from mmrobust.finetune.config import FinetuneConfig

HAS_TRAIN = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "trl"))


def _config(tmp_path: Path, **kw: Any) -> FinetuneConfig:
    return FinetuneConfig(model="hf:tiny", data=[tmp_path / "llava.json"], out=tmp_path / "o", **kw)


@pytest.mark.parametrize(
    ("per_device", "world", "expected"),
    [(4, 1, 32), (4, 8, 4), (16, 8, 1), (3, 8, 6), (8, 2, 8), (200, 1, 1)],
)
def test_accumulation_reaches_the_global_batch_on_world_size_devices(
    tmp_path: Path, per_device: int, world: int, expected: int
) -> None:
    """MMR Table 10's global batch 128: ceil(128 / (per-device x GPUs)); 3 x 8 = 24 needs 6
    steps (144 >= 128, 5 steps would give 120)."""
    config = _config(tmp_path, per_device_batch=per_device)
    assert config.global_batch == 128
    assert config.accumulation(world) == expected
    assert per_device * world * expected >= 128
    assert expected == 1 or per_device * world * (expected - 1) < 128


def test_qlora_trains_lora_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"QLoRA.*--method lora"):
        _config(tmp_path, load_in_4bit=True, method="full")
    assert _config(tmp_path, load_in_4bit=True).load_in_4bit


@pytest.mark.skipif(not HAS_TRAIN, reason="needs the train extra (torch, transformers, trl)")
def test_qlora_refuses_without_cuda_and_builds_nf4_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from mmrobust.finetune.model import _four_bit

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="--load-in-4bit needs a CUDA GPU"):
        _four_bit(torch, "bfloat16")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    if importlib.util.find_spec("bitsandbytes") is None:
        with pytest.raises(ValueError, match="pip install bitsandbytes"):
            _four_bit(torch, "bfloat16")
        return
    nf4 = _four_bit(torch, "float32")  # compute in bf16 when float32 is asked (QLoRA's)
    assert nf4.load_in_4bit and nf4.bnb_4bit_quant_type == "nf4"
    assert nf4.bnb_4bit_use_double_quant and nf4.bnb_4bit_compute_dtype == torch.bfloat16


@pytest.mark.skipif(not HAS_TRAIN, reason="needs the train extra (torch, transformers, trl)")
def test_push_to_hub_and_deepspeed_reach_the_trainer_arguments(tmp_path: Path) -> None:
    from mmrobust.finetune.trainer import sft_args

    plain = sft_args(
        _config(tmp_path, device="cpu"),
        checkpoints=str(tmp_path / "c"), dtype="float32", accumulation=4, evaluates=False,
    )  # fmt: skip
    assert plain.push_to_hub is False and plain.hub_model_id is None
    assert plain.gradient_accumulation_steps == 4 and plain.deepspeed is None
    pushed = sft_args(
        _config(tmp_path, device="cpu", push_to_hub="me/tamper-lora"),
        checkpoints=str(tmp_path / "c"), dtype="float32", accumulation=1, evaluates=False,
    )  # fmt: skip
    assert pushed.push_to_hub is True and pushed.hub_model_id == "me/tamper-lora"
    # the hub repository is not a setting of the result: changing it must not block a resume
    assert "push_to_hub" not in _config(tmp_path, push_to_hub="me/x").fingerprint()
