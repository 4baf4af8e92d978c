"""``mmrobust finetune``: data composition, assistant-only labels, the closed MMR loop, resume.

The loop runs for real on CPU: ``mmrobust mmr-data`` against the local fake
server writes 8 paired questions (``tests/finetune_data.py``); a tiny random
checkpoint of two real families (Idefics3 / SmolVLM, and Qwen2-VL), built
here from their config and processor classes, is evaluated with ``mmrobust
eval``, fine-tuned with ``mmrobust finetune`` (LoRA, TRL's SFT trainer) on the
generated ``mmr.json``, evaluated again with ``--model-arg adapter=OUT``, and the two
runs go through ``mmrobust compare``.

Torch runs on one thread here: on 2 shared cores, intra-op threads on these
tiny matrices only add synchronisation (measured: 29 ms vs 533 ms per training
step under load).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets.mmr import load_mmr
from mmrobust.finetune.data import (
    Conversation,
    DataReport,
    Turn,
    compose,
    load_training_data,
    read_file,
)
from mmrobust.prompts import build_prompt
from tests.finetune_data import generate_pairs, widen_text_model
from tests.runs import stored_rows

if not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "peft", "trl")):
    pytest.skip("needs the train extra: pip install -e '.[train]'", allow_module_level=True)

FAMILIES = ["idefics3", "qwen2vl"]
# the closed-loop run: 30 optimizer steps over the 16 generated questions (batch 8)
LOOP_ARGS = [
    "--global-batch", "8", "--per-device-batch", "8", "--max-steps", "30", "--lr", "5e-3",
    "--lora-r", "64", "--lora-alpha", "128", "--device", "cpu", "--seed", "0", "--merge", "-q",
]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mmrobust mmr-data`` output: llava.json (16 samples) and mmr.json (8 pairs)."""
    return generate_pairs(tmp_path_factory.mktemp("finetune-data"))


def _build(family: str, folder: Path) -> Path:
    if family == "idefics3":
        from tests.hf_tiny import build_tiny_idefics3

        return widen_text_model(build_tiny_idefics3(folder, seed=0))
    try:
        import torchvision  # noqa: F401
    except Exception as exc:  # ImportError, or a torch/torchvision mismatch
        pytest.skip(f"Qwen2-VL's processor needs a working torchvision ({exc})")
    from tests.hf_tiny_qwen2vl import build_tiny_qwen2vl

    return build_tiny_qwen2vl(
        folder, seed=0, hidden=64, layers=2, lm_head_std=0.5, initializer_range=0.2
    )


@pytest.fixture(scope="module", params=FAMILIES)
def checkpoint(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    family = str(request.param)
    return family, _build(family, tmp_path_factory.mktemp(f"tiny-{family}"))


@pytest.fixture(scope="module")
def idefics3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build("idefics3", tmp_path_factory.mktemp("tiny-idefics3-resume"))


def _conv(
    cid: str, image: str | None, *rounds: tuple[str, str], polarity: str | None = None
) -> Conversation:
    turns = []
    for question, answer in rounds:
        turns += [Turn("user", question), Turn("assistant", answer)]
    return Conversation(cid, "x", (Path(image),) if image else (), tuple(turns), polarity)


# --- data: formats, bad records, compositions --------------------------------------------


def test_bad_records_are_reported_not_fatal(tmp_path: Path) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(b"")  # existence is checked here; readability when encoding
    records: list[Any] = [
        {"id": "ok", "image": "a.png", "conversations": [
            {"from": "human", "value": "<image>\nQ?"}, {"from": "gpt", "value": "A."}]},
        {"id": "no-mark", "image": "a.png", "conversations": [
            {"from": "human", "value": "Q?"}, {"from": "gpt", "value": "A."}]},
        {"id": "text-only", "conversations": [
            {"from": "system", "value": "Be brief."},
            {"from": "human", "value": "Hi?"}, {"from": "gpt", "value": "Hello."}]},
        {"id": "order", "image": "a.png", "conversations": [
            {"from": "gpt", "value": "A."}, {"from": "human", "value": "<image>\nQ?"}]},
        {"id": "marks", "image": "a.png", "conversations": [
            {"from": "human", "value": "<image><image>\nQ?"}, {"from": "gpt", "value": "A."}]},
        {"id": "gone", "image": "missing.png", "conversations": [
            {"from": "human", "value": "<image>\nQ?"}, {"from": "gpt", "value": "A."}]},
        {"id": "empty", "image": "a.png", "conversations": [
            {"from": "human", "value": "<image>\nQ?"}, {"from": "gpt", "value": " "}]},
        "not a record",
    ]  # fmt: skip
    path = tmp_path / "llava.json"
    path.write_text(json.dumps(records))
    conversations, problems, info = read_file(path, "generated")
    assert [c.id for c in conversations] == ["llava:ok", "llava:no-mark", "llava:text-only"]
    # one image and no mark: the image goes before the first question (LLaVA convention)
    assert conversations[1].turns[0].text == "<image>\nQ?"
    assert conversations[2].images == () and conversations[2].turns[0].role == "system"
    assert [(p.kind, p.id) for p in problems] == [
        ("malformed", "llava:order"),
        ("malformed", "llava:marks"),
        ("missing_image", "llava:gone"),
        ("malformed", "llava:empty"),
        ("malformed", "llava:7"),
    ]
    assert info.records == 8 and len(info.sha256) == 64
    with pytest.raises(ValueError, match="expected a JSON list"):
        path.write_text("{}")
        read_file(path, "generated")


def test_mmr_format_becomes_the_eval_prompt(generated: Path) -> None:
    conversations, problems, info = read_file(generated / "mmr.json", "generated")
    assert info.format == "mmr" and problems == [] and len(conversations) == 16
    samples = load_mmr(generated / "mmr.json").samples
    for conversation, sample in zip(conversations, samples, strict=True):
        user, answer = conversation.turns
        assert user.text == "<image>\n" + build_prompt(sample).text  # what `eval` sends
        assert answer.text == sample.answer and answer.text in "ABCD"
        assert conversation.polarity == sample.polarity
    assert sorted(c.turns[1].text for c in conversations) == sorted("AAAABBBBCCCCDDDD")


def test_compositions_follow_the_paper() -> None:
    gen = [
        _conv("p1", "/i/1.png", ("<image>\nWhat colour?", "Red."), polarity="positive"),
        _conv("n1", "/i/1.png", ("<image>\nWhy blue?", "It is red."), polarity="negative"),
        _conv("p2", "/i/2.png", ("<image>\nHow many?", "One."), polarity="positive"),
        _conv("n2", "/i/2.png", ("<image>\nWhy three?", "There is one."), polarity="negative"),
    ]
    extra = [_conv("llava", "/i/1.png", ("<image>\nDescribe it.", "A red square."))]

    assert compose(gen) == gen  # generated alone: pos. and neg. as separate samples (Table 6)
    assert [c.id for c in compose(gen, extra, composition="combination")] == [
        "llava", "p1", "n1", "p2", "n2",
    ]  # fmt: skip
    assert [c.id for c in compose(gen, polarity="negative")] == ["n1", "n2"]

    report = DataReport()
    concat = compose(gen, extra, composition="concatenation", rounds=1, report=report)
    # image 1: the sampled sample plus one generated round (its <image> mark dropped);
    # image 2 has no sampled sample: its generated rounds form one sample
    assert [c.id for c in concat] == ["llava", "p2"]
    assert [t.text for t in concat[0].turns] == [
        "<image>\nDescribe it.", "A red square.", "What colour?", "Red.",
    ]  # fmt: skip
    assert [t.text for t in concat[1].turns] == ["<image>\nHow many?", "One."]
    assert (report.samples, report.rounds_total, report.rounds_left_out) == (2, 3, 2)

    merged = compose(gen, composition="concatenation")  # Table 6 "merge neg. and pos."
    assert [c.rounds for c in merged] == [2, 2] and merged[0].polarity is None
    assert merged[0].turns[2].text == "Why blue?"

    with pytest.raises(ValueError, match="concatenation only"):
        compose(gen, rounds=2)
    with pytest.raises(ValueError, match="combination or concatenation"):
        compose(gen, extra, composition="generated")


def test_load_training_data_defaults(generated: Path) -> None:
    conversations, report = load_training_data([generated], [generated / "mmr.json"])
    assert report.composition == "combination"  # extra data given
    assert len(conversations) == 32 and report.summary()["skipped"] == {}
    with pytest.raises(FileNotFoundError, match=r"no llava\.json"):
        load_training_data([generated.parent])


# --- labels: only the assistant turns are in the loss ---------------------------------------


def test_labels_cover_only_the_answers(checkpoint: tuple[str, Path], tmp_path: Path) -> None:
    from transformers import AutoProcessor

    from mmrobust.finetune.collate import IGNORE_INDEX, ChatRenderer, Encoder
    from mmrobust.finetune.data import Problem
    from mmrobust.finetune.train import prepare_rows

    processor = AutoProcessor.from_pretrained(checkpoint[1])
    image = _png(tmp_path / "x.png")
    conversation = _conv(
        "c",
        str(image),
        ("<image>\nWhat colour is the square?", "Red."),
        ("And the shape?", "A square."),
    )
    rendered = ChatRenderer(processor).render(conversation)
    batch = Encoder(processor).encode([rendered], [conversation.images])
    labels = batch["labels"][0]
    ids = batch["input_ids"][0]
    eos = processor.tokenizer.eos_token
    answer_ids = [int(t) for t in labels if t != IGNORE_INDEX]
    assert processor.tokenizer.decode(answer_ids) == f"Red.{eos}A square.{eos}"
    # every labelled position carries its own input token; image tokens are never labelled
    kept = labels != IGNORE_INDEX
    assert bool((labels[kept] == ids[kept]).all())
    image_token = getattr(processor, "image_token", "<image>")
    image_id = processor.tokenizer.convert_tokens_to_ids(image_token)
    assert int((ids == image_id).sum()) >= 2 and not bool((labels == image_id).any())

    # skipped, never truncated: too long, unreadable image
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    problems: list[Problem] = []
    rows = prepare_rows(
        [conversation, _conv("long", str(image), ("<image>\n" + "why? " * 200, "A.")),
         _conv("bad", str(broken), ("<image>\nQ?", "A."))],
        ChatRenderer(processor), Encoder(processor), 120, problems,
    )  # fmt: skip
    assert [r["id"] for r in rows] == ["c"]
    assert [(p.kind, p.id) for p in problems] == [("too_long", "long"), ("unreadable_image", "bad")]
    assert "> max_length 120" in problems[0].detail


def _png(path: Path) -> Path:
    import cv2
    import numpy as np

    cv2.imwrite(str(path), np.full((32, 32, 3), 90, np.uint8))
    return path


def test_template_that_rewrites_history_is_refused(checkpoint: tuple[str, Path]) -> None:
    from transformers import AutoProcessor

    from mmrobust.finetune.collate import ChatRenderer, TemplateError

    processor = AutoProcessor.from_pretrained(checkpoint[1])
    # drops every assistant turn but the last (as reasoning templates drop earlier thoughts)
    template = (
        "{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}"
        "<|{{ m['role'] }}|>{% for p in m['content'] %}{% if p['type'] == 'text' %}"
        "{{ p['text'] }}{% endif %}{% endfor %}\n{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    conversation = _conv("c", None, ("Q1?", "A1."), ("Q2?", "A2."))
    with pytest.raises(TemplateError, match="not prefix-preserving"):
        ChatRenderer(processor, template).render(conversation)
    processor.chat_template = None
    with pytest.raises(TemplateError, match="no chat template"):
        ChatRenderer(processor)


# --- the closed loop: mmr-data -> eval -> finetune -> eval (adapter) -> compare -----------


def _eval(
    checkpoint: Path, data: Path, out: Path, *extra: str, unscored_ok: bool = False
) -> dict[str, Any]:
    """Evaluate; with ``unscored_ok`` a run whose every reply is unparseable (a random base
    model's noise) may exit 1 ("no sample could be scored", issue 15's rule) and is still read."""
    result = CliRunner().invoke(
        app,
        [
            "eval", "--data", str(data), "--model", f"hf:{checkpoint}", "--model-arg", "device=cpu",
            "--model-arg", "max_new_tokens=3", "--out", str(out), "--bootstrap", "0", "-q", *extra,
        ],
    )  # fmt: skip
    if unscored_ok and result.exit_code == 1:
        assert "no sample could be scored" in result.output, result.output
    else:
        assert result.exit_code == 0, result.output
    return dict(json.loads((out / "metrics.json").read_text()))


def _pairs_as_trained(run: Path) -> int:
    rows = stored_rows(run)
    groups: dict[str, list[bool]] = {}
    for sample_id, row in rows.items():
        groups.setdefault(sample_id.split("#")[0], []).append(row["letter"] == row["answer"])
    return sum(all(v) for v in groups.values())


@pytest.mark.slow
def test_finetune_closes_the_mmr_loop(
    checkpoint: tuple[str, Path], generated: Path, tmp_path: Path
) -> None:
    family, base = checkpoint
    mmr = generated / "mmr.json"
    before = _eval(base, mmr, tmp_path / "before", unscored_ok=True)
    out = tmp_path / "ft"
    run = CliRunner().invoke(
        app,
        ["finetune", "--model", f"hf:{base}", "--data", str(mmr), "--out", str(out), *LOOP_ARGS],
    )
    assert run.exit_code == 0, run.output
    assert "trained on 16 samples (skipped none); 30 steps" in run.output

    # the training loss falls by at least 95% (first step vs the mean of the last five;
    # measured 11.5 -> 0.001 on Idefics3, 12.0 -> 0.005 on Qwen2-VL)
    losses = [float(r["loss"]) for r in _csv(out / "loss.csv")]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 <= 0.05 * losses[0], losses

    # the adapter loads into `hf:` and the answers move to the trained ones
    after = _eval(base, mmr, tmp_path / "after", "--model-arg", f"adapter={out}")
    assert _pairs_as_trained(tmp_path / "before") <= 2  # chance: 1/16 per pair
    assert _pairs_as_trained(tmp_path / "after") >= 7
    assert before["UR"] <= 2 and after["UR"] >= 7 and after["RA"] >= 87.5

    compared = CliRunner().invoke(
        app, ["compare", str(tmp_path / "before"), str(tmp_path / "after"), "--json"]
    )
    assert compared.exit_code == 0, compared.output
    paired = json.loads(compared.output)
    assert paired["n"] == 16 and paired["a_only_correct"] == 0
    assert paired["b_only_correct"] >= 12 and paired["p_value"] < 0.001  # McNemar exact
    run_args = json.loads((tmp_path / "after" / "run.json").read_text())["run"]["model_args"]
    assert run_args["adapter"] == str(out)
    if family == "idefics3":  # once: each of these takes seconds
        # the merged folder is a plain checkpoint giving the adapter run's answers
        _eval(out / "merged", mmr, tmp_path / "merged")
        merged_rows = stored_rows(tmp_path / "merged")
        adapter_rows = stored_rows(tmp_path / "after")
        assert {k: r["raw_text"] for k, r in merged_rows.items()} == {
            k: r["raw_text"] for k, r in adapter_rows.items()
        }
        # base and fine-tuned side by side
        report = CliRunner().invoke(
            app,
            [
                "report",
                str(tmp_path / "before"),
                str(tmp_path / "after"),
                "--out",
                str(tmp_path / "r"),
            ],
        )
        assert report.exit_code == 0, report.output
        # the command prints a summary and the paths (3598888); the table is in report.md
        table = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
        assert f"hf:{base} [before] | RA ↑ | 0.00" in table
        assert f"hf:{base} [after] | RA ↑ | 100.00" in table

    card = json.loads((out / "training_card.json").read_text())
    assert card["status"] == "finished" and card["base"]["model"] == str(base)
    assert card["data"]["files"][0]["sha256"] == _sha256(mmr)
    hyper, sources = card["hyperparameters"], card["sources"]
    assert (hyper["learning_rate"], sources["learning_rate"]) == (5e-3, "set")
    assert (hyper["lr_scheduler"], sources["lr_scheduler"]) == ("cosine", "MMR Table 10")
    assert (hyper["warmup_ratio"], hyper["weight_decay"], hyper["seed"]) == (0.03, 0.0, 0)
    assert hyper["gradient_accumulation_steps"] == 1 and hyper["effective_global_batch"] == 8
    assert {"torch", "transformers", "peft", "trl"} <= set(card["versions"])
    assert card["result"]["steps"] == 30 and card["result"]["input_tokens_seen"] > 0
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    assert (out / "README.md").read_text().startswith(f"# {base} fine-tuned with mmrobust")
    assert (out / "loss.png").read_bytes()[:4] == b"\x89PNG"

    again = CliRunner().invoke(
        app,
        ["finetune", "--model", f"hf:{base}", "--data", str(mmr), "--out", str(out), *LOOP_ARGS],
    )
    assert again.exit_code == 0 and "already holds this finished run" in again.output


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open() as handle:
        return list(csv.DictReader(handle))


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- resume after a kill --------------------------------------------------------------------


def test_resume_after_kill_ends_at_the_same_loss(
    idefics3: Path, generated: Path, tmp_path: Path
) -> None:
    """Killed at step 5, resumed from checkpoint-3 (mid-epoch): the same losses as one run,
    and the same training card: the evaluation loss before training, ``eval_loss.csv``'s
    step-0 row and ``train_loss`` (the mean over all 8 steps) come back from the checkpoint
    (before: ``eval_loss_before`` null, no step-0 row, ``train_loss`` the mean of steps 4-8).

    Tolerance: 1e-5 absolute per logged step (float32 on CPU; measured difference 0).
    """
    from transformers import TrainerCallback

    from mmrobust.finetune import FinetuneConfig, FinetuneError, run_finetune

    held = _held_out_file(tmp_path / "held")
    config = FinetuneConfig(
        model=f"hf:{idefics3}", data=[generated / "mmr.json"], out=tmp_path / "whole",
        global_batch=4, per_device_batch=4, max_steps=8, save_steps=3, learning_rate=5e-3,
        lora_r=16, lora_alpha=32, device="cpu", eval_data=[held],
    )  # fmt: skip
    whole = run_finetune(config, progress=False)

    class Kill(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 5:
                raise KeyboardInterrupt

    killed = config.model_copy(update={"out": tmp_path / "killed"})
    with pytest.raises(KeyboardInterrupt):
        run_finetune(killed, progress=False, callbacks=[Kill()])
    saved = tmp_path / "killed" / "checkpoints"
    assert sorted(p.name for p in saved.glob("checkpoint-*")) == ["checkpoint-3"]
    assert not (tmp_path / "killed" / "training_card.json").exists()
    # a save cut short by the kill is passed over
    partial = saved / "checkpoint-6"
    partial.mkdir()
    (partial / "adapter_model.safetensors").write_bytes(b"\0" * 10)

    with pytest.raises(FinetuneError, match="learning_rate"):
        run_finetune(killed.model_copy(update={"learning_rate": 1e-3}), progress=False)

    resumed = run_finetune(killed, progress=False)
    assert resumed.resumed_from is not None and resumed.resumed_from.name == "checkpoint-3"
    whole_losses = [float(r["loss"]) for r in _csv(tmp_path / "whole" / "loss.csv")]
    resumed_losses = [float(r["loss"]) for r in _csv(tmp_path / "killed" / "loss.csv")]
    assert len(whole_losses) == len(resumed_losses) == 8
    assert resumed_losses == pytest.approx(whole_losses, abs=1e-5)
    assert resumed.final_loss == pytest.approx(whole.final_loss, abs=1e-5)
    assert resumed.steps == whole.steps == 8
    assert run_finetune(killed, progress=False).already_done

    # the card of the resumed run is the uninterrupted run's (but for time, memory and resume)
    losses = [float(r["loss"]) for r in _csv(tmp_path / "whole" / "loss.csv")]
    assert whole.card["result"]["train_loss"] == pytest.approx(sum(losses) / 8, abs=1e-6)
    per_run = {"train_runtime_s", "input_tokens_per_s", "wall_s", "peak_rss_mib", "resumed_from"}
    per_run |= {"peak_gpu_memory_mib"}
    for key, value in whole.card["result"].items():
        if key not in per_run:
            assert resumed.card["result"][key] == pytest.approx(value, abs=1e-6), key
    assert resumed.card["result"]["eval_loss_before"] is not None
    assert {k: v for k, v in whole.card.items() if k != "result"} == {
        k: v for k, v in resumed.card.items() if k != "result"
    }
    eval_rows = [_csv(tmp_path / run / "eval_loss.csv") for run in ("whole", "killed")]
    assert [r["step"] for r in eval_rows[1]] == [r["step"] for r in eval_rows[0]] == ["0", "8"]
    for a, b in zip(*eval_rows, strict=True):
        assert float(a["eval_loss"]) == pytest.approx(float(b["eval_loss"]), abs=1e-5)


def _held_out_file(folder: Path) -> Path:
    """Two LLaVA records on two images of their own (colours mmr-data's images do not have)."""
    import cv2
    import numpy as np

    folder.mkdir(parents=True)
    records = []
    for name, bgr in (("purple", (128, 0, 128)), ("yellow", (0, 220, 220))):
        cv2.imwrite(str(folder / f"{name}.png"), np.full((32, 32, 3), bgr, np.uint8))
        records.append(
            {
                "id": f"held-{name}",
                "image": f"{name}.png",
                "conversations": [
                    {"from": "human", "value": "<image>\nWhat colour is the square?"},
                    {"from": "gpt", "value": name.capitalize() + "."},
                ],
            }
        )
    path = folder / "llava.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_progress_bar_shows_loss_and_tokens_per_second() -> None:
    from types import SimpleNamespace

    from mmrobust.finetune.callbacks import ProgressCallback

    bar = ProgressCallback()
    state = SimpleNamespace(
        is_world_process_zero=True, max_steps=10, global_step=4, num_input_tokens_seen=1000
    )
    bar.on_train_begin(None, state, None)  # a resumed run starts at its checkpoint's step
    task = bar._progress.tasks[0]
    assert (task.total, task.completed, task.fields["loss"]) == (10, 4, "-")
    state.global_step, state.num_input_tokens_seen = 5, 1800
    bar.on_log(None, state, None, logs={"loss": 1.23456})
    bar.on_step_end(None, state, None)
    task = bar._progress.tasks[0]
    assert task.completed == 5 and task.fields["loss"] == "1.2346"
    assert float(task.fields["tps"].replace(",", "")) > 0  # 800 tokens over the elapsed time
    bar.on_train_end(None, state, None)
    assert bar._progress is None


def test_full_finetuning_trains_the_language_model_only(
    idefics3: Path, generated: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    from mmrobust.finetune import FinetuneConfig, run_finetune

    result = run_finetune(
        FinetuneConfig(
            model=str(idefics3), data=[generated / "mmr.json"], out=tmp_path / "full",
            method="full", projector="frozen", global_batch=8, per_device_batch=8, max_steps=2,
            learning_rate=1e-3, device="cpu",
        ),
        progress=False,
    )  # fmt: skip
    assert result.steps == 2 and not (tmp_path / "full" / "adapter_config.json").exists()
    before = load_file(idefics3 / "model.safetensors")
    after = load_file(tmp_path / "full" / "model.safetensors")
    changed = {k for k in before if not bool((before[k] == after[k]).all())}
    assert changed and all(k.startswith("model.text_model.") for k in changed)
    assert any(".layers.0.self_attn.q_proj" in k for k in changed)
    assert result.card["hyperparameters"]["trained_projector"] is None


# --- command-line errors ----------------------------------------------------------------------


def test_cli_errors_are_one_line(idefics3: Path, generated: Path, tmp_path: Path) -> None:
    def run(*args: str) -> Any:
        return CliRunner().invoke(
            app, ["finetune", "--model", f"hf:{idefics3}", "--out", str(tmp_path / "o"), *args]
        )

    missing = run("--data", str(tmp_path / "nope.json"))
    assert missing.exit_code == 2 and "no such data file" in missing.output
    rounds = run("--data", str(generated), "--rounds", "2")
    assert rounds.exit_code == 2 and "concatenation only" in rounds.output
    bad = run("--data", str(generated), "--method", "qlora")
    assert bad.exit_code == 2 and "--method" in bad.output

    no_template = tmp_path / "no-template"
    shutil.copytree(idefics3, no_template)
    for item in no_template.glob("chat_template*"):
        item.unlink()
    refused = CliRunner().invoke(
        app,
        ["finetune", "--model", f"hf:{no_template}", "--data", str(generated), "--out",
         str(tmp_path / "o2"), "--device", "cpu", "-q"],
    )  # fmt: skip
    assert refused.exit_code == 2 and "no chat template" in refused.output


def test_multi_gpu_configs_parse() -> None:
    from importlib.resources import files

    from accelerate.commands.config.config_args import load_config_from_file

    folder = files("mmrobust") / "finetune" / "configs"
    cluster = load_config_from_file(str(folder / "accelerate_zero3.yaml"))
    assert str(cluster.distributed_type) in ("DEEPSPEED", "DistributedType.DEEPSPEED")
    assert cluster.deepspeed_config["zero_stage"] == 3  # MMR Table 10: DeepSpeed stage 3
    zero3 = json.loads((folder / "zero3.json").read_text())
    assert zero3["zero_optimization"]["stage"] == 3
    assert zero3["gradient_accumulation_steps"] == "auto"  # filled from --global-batch


# --- issue 27 items 9 and 10: hostile inputs end in one line, never a stall -----------------


class _WordRenderer:
    """Renders a conversation as its turns joined by spaces; the answer is the last span."""

    def render(self, conversation: Conversation, *, video: bool = False) -> Any:
        from mmrobust.finetune.collate import Rendered

        text = " ".join(t.text for t in conversation.turns)
        answer = conversation.turns[-1].text
        return Rendered(text, ((len(text) - len(answer), len(text)),))


class _WordEncoder:
    """One token per word; ``encode`` records which conversations reached the processor."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def plain(self, rendered: Any) -> tuple[list[int], list[bool]]:
        words = rendered.text.split(" ")
        return [len(w) for w in words], [False] * (len(words) - 1) + [True]

    def encode(self, rendered: Any, images: Any, videos: Any = None) -> dict[str, Any]:
        import torch

        self.encoded.append(rendered[0].text[:10])
        ids, marks = self.plain(rendered[0])
        labels = [t if m else -100 for t, m in zip(ids, marks, strict=True)]
        return {"input_ids": torch.tensor([ids]), "labels": torch.tensor([labels])}


def test_a_long_sample_is_measured_and_skipped_before_the_processor() -> None:
    from mmrobust.finetune.data import Problem
    from mmrobust.finetune.train import prepare_rows

    huge = "w " * 1_000_000  # a 2 MB human turn: 1,000,002 words with the answer
    convs = [
        _conv("short", None, ("first question", "Yes")),
        _conv("huge", None, (huge, "No")),
        _conv("after", None, ("second question", "No")),
    ]
    encoder = _WordEncoder()
    problems: list[Problem] = []
    rows = prepare_rows(convs, _WordRenderer(), encoder, 512, problems)  # type: ignore[arg-type]
    assert encoder.encoded == ["first ques", "second que"]  # the long one never reached it
    assert [r["id"] for r in rows] == ["short", "after"]
    assert [(p.kind, p.id) for p in problems] == [("too_long", "huge")]
    assert problems[0].detail == "1000002 tokens before image expansion > max_length 512"


def test_align_labels_follows_image_expansion_in_linear_passes() -> None:
    from mmrobust.finetune.collate import IGNORE_INDEX, align_labels

    # plain: <bos>=1 <image>=5 "\n"=2 answer 7 8 <eot>=3; the model expands <image> to
    # 9 5 5 5 9 and its expansion holds the answer's first id (7) as well
    plain = [1, 5, 2, 7, 8, 3]
    trainable = [False, False, False, True, True, True]
    model = [1, 9, 7, 5, 5, 5, 9, 2, 7, 8, 3]
    labels, missing = align_labels(plain, trainable, model)
    x = IGNORE_INDEX
    assert (labels, missing) == ([x, x, x, x, x, x, x, x, 7, 8, 3], 0)
    # a trainable token the model input lacks is counted, never placed elsewhere
    labels, missing = align_labels([1, 4, 6], [False, True, True], [1, 6])
    assert (labels, missing) == ([x, 6], 1)
    # 200k tokens of two ids: difflib's quadratic matcher never finished this
    n = 100_000
    plain = [1, 2] * n
    labels, missing = align_labels(plain, [True] * (2 * n), [9, *plain])
    assert missing == 0 and labels == [x, *plain]


def test_deeply_nested_training_file_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "llava.json"
    deep.write_text('[{"conversations": ' + "[" * 100_000 + "]" * 100_000 + "}]")
    with pytest.raises(ValueError, match=r"llava.json: not JSON \(nested too deeply\)$"):
        read_file(deep, "generated")
    res = CliRunner().invoke(
        app,
        ["finetune", "--model", f"hf:{tmp_path / 'none'}", "--data", str(deep), "--out",
         str(tmp_path / "o"), "--device", "cpu", "-q"],
    )  # fmt: skip
    assert res.exit_code == 2 and "nested too deeply" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    kwargs = CliRunner().invoke(
        app,
        ["finetune", "--model", "hf:x", "--data", str(deep), "--out", str(tmp_path / "o"),
         "--processor-kwargs", "[" * 100_000 + "]" * 100_000],
    )  # fmt: skip
    assert kwargs.exit_code == 2 and "--processor-kwargs is not JSON" in kwargs.output
