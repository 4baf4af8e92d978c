"""``mmrobust tamper-data`` -> ``finetune`` (frames as images) -> ``eval`` before/after -> ``compare``.

Issue 31's loop for video, on CPU: two bundled sample clips (``bikes`` for training,
``carphone_pristine`` held out: the split is by source video, asserted), three effects at
two training positions, the detect / type / when questions as ``eval`` asks them, the 8
frames ``eval`` shows (``sample_clip``, the same JPEG bytes); a tiny Idefics3 trained a
few LoRA steps: loss falls, only the answer letter and the end-of-turn token carry loss,
the adapter loads in ``hf:``, and the held-out clips are evaluated before and after, with
the paired test of ``compare``.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips

if not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "peft", "trl")):
    pytest.skip("needs the train extra: pip install -e '.[train]'", allow_module_level=True)

EFFECTS = "dropping,masking,rotation"


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tamper_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    clips = sample_clips()
    out = tmp_path_factory.mktemp("tamper-data") / "td"
    args = ["tamper-data", str(clips["bikes"]), str(clips["carphone_pristine"]), "--out", str(out)]
    args += ["--effects", EFFECTS, "--positions", "start,end", "--eval-fraction", "0.5"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "24 training conversations from 1 sources, 12 held out from 1" in result.output
    for build in ("train/clips-start-1s", "train/clips-end-1s", "eval"):  # codec control on
        assert f"leak audit {build} (1 original, 3 tampered clips): no leak;" in result.output
    return out


def _records(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8")))


def test_split_by_source_balance_and_eval_frames(tamper_data: Path) -> None:
    from mmrobust.media.frames import sample_clip
    from mmrobust.media.jpeg import FrameEncoding
    from mmrobust.media.sampling import FramePolicy
    from mmrobust.schema.vocab import TAMPER_QUESTION

    manifest = json.loads((tamper_data / "tamper_data.json").read_text())
    train = {s["sha256"] for s in manifest["sources"]["train"]}
    held = {s["sha256"] for s in manifest["sources"]["eval"]}
    assert len(train) == len(held) == 1 and not train & held and manifest["split_disjoint"]
    assert [Path(s["path"]).name for s in manifest["sources"]["eval"]] == ["carphone_pristine.mp4"]
    # every record's source is on its own side only
    assert {r["source"] for r in manifest["records"]["train"]} == train
    assert {r["source"] for r in manifest["records"]["eval"]} == held
    # originals and each effect 1:1 (two positions for training, the paper's middle for eval)
    assert manifest["clips"]["train"] == {"original": 2, "dropping": 2, "masking": 2, "rotation": 2}
    assert manifest["clips"]["eval"] == {"original": 1, "dropping": 1, "masking": 1, "rotation": 1}
    assert manifest["conversations"]["train"] == {"detect": 8, "type": 8, "when": 8}
    audit = manifest["audit"]["builds"]  # the leak audit of every build: nothing separates
    assert {n: a["status"] for n, a in audit.items()} == {
        "train/clips-start-1s": "clean", "train/clips-end-1s": "clean", "eval": "clean",
    }  # fmt: skip
    # chance on the 4 held-out clips (original + 3 effects, middle 1 s), by hand: always
    # Yes F1 2t/(2t+o) = 2/3 per type, accuracy 3/4; type 1/4 (each key once); when 1/4,
    # majority "middle" 3/4 (the original's truth is "nowhere")
    chance = manifest["chance"]
    assert chance["detect"]["always_yes_f1"] == pytest.approx(2 / 3)
    assert chance["detect"]["always_yes_accuracy"] == chance["detect"]["majority_accuracy"] == 0.75
    assert (chance["type"]["uniform_accuracy"], chance["type"]["majority_accuracy"]) == (0.25, 0.25)
    assert (chance["when"]["majority"], chance["when"]["majority_accuracy"]) == ("middle", 0.75)

    records = _records(tamper_data / "train" / "llava.json")
    detect = [r for r in records if r["meta"]["task"] == "detect"]
    answers = {r["meta"]["effect"]: r["conversations"][1]["value"] for r in detect}
    assert answers == {"original": "B", "dropping": "A", "masking": "A", "rotation": "A"}
    question = detect[0]["conversations"][0]["value"]
    assert question == "<image>\n" * 8 + f"{TAMPER_QUESTION}\nOptions:\nA. Yes\nB. No"
    # the frames are the JPEGs eval would show: 8 segment centres, q95, decoded size
    first = records[0]
    clip = tamper_data / "train" / first["meta"]["tag"] / "videos" / "bikes"
    video = clip / first["meta"]["clip"]
    expected = sample_clip(video, FramePolicy(), FrameEncoding()).jpegs
    shown = [(tamper_data / "train" / p).read_bytes() for p in first["image"]]
    assert shown == list(expected)
    # re-running resumes: nothing rebuilt, the same records
    again = CliRunner().invoke(
        app,
        ["tamper-data", *[s["path"] for s in manifest["sources"]["train"]],
         *[s["path"] for s in manifest["sources"]["eval"]], "--out", str(tamper_data),
         "--effects", EFFECTS, "--positions", "start,end", "--eval-fraction", "0.5"],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert _records(tamper_data / "train" / "llava.json") == records


def test_labels_are_the_answer_letter_and_the_stop_token(tamper_data: Path, tmp_path: Path) -> None:
    from transformers import AutoProcessor

    from mmrobust.finetune.collate import IGNORE_INDEX, ChatRenderer, Encoder
    from mmrobust.finetune.data import load_training_data
    from tests.hf_tiny import build_tiny_idefics3

    processor = AutoProcessor.from_pretrained(build_tiny_idefics3(tmp_path / "m", seed=0))
    conversations, report = load_training_data([tamper_data / "train" / "llava.json"])
    assert len(conversations) == 24 and not report.problems
    first = conversations[0]
    batch = Encoder(processor).encode([ChatRenderer(processor).render(first)], [first.images])
    answer = [int(t) for t in batch["labels"][0] if t != IGNORE_INDEX]
    assert processor.tokenizer.decode(answer) == first.turns[-1].text + "<end_of_utterance>"


def _eval(base: Path, data: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = ["eval", "--data", str(data), "--model", f"hf:{base}", "--model-arg", "device=cpu"]
    args += ["--model-arg", "max_new_tokens=2", "--out", str(out), "--bootstrap", "0", "-q"]
    result = CliRunner().invoke(app, [*args, *extra])
    # a random base model may answer nothing parseable: exit 1, rows stored all the same
    assert result.exit_code in (0, 1), result.output
    return dict(json.loads((out / "metrics.json").read_text()))


@pytest.mark.slow
def test_finetune_on_tamper_frames_and_measure_held_out(tamper_data: Path, tmp_path: Path) -> None:
    from tests.finetune_data import widen_text_model
    from tests.hf_tiny import build_tiny_idefics3

    base = widen_text_model(build_tiny_idefics3(tmp_path / "base", seed=0))
    held_out = tamper_data / "eval"
    _eval(base, held_out, tmp_path / "before")
    out = tmp_path / "ft"
    args = ["finetune", "--model", f"hf:{base}", "--data", str(tamper_data / "train"),
            "--eval-data", str(held_out / "llava.json"), "--out", str(out), "--device", "cpu",
            "--global-batch", "8", "--per-device-batch", "8", "--max-steps", "12",
            "--lr", "5e-3", "--lora-r", "16", "--lora-alpha", "32", "--warmup-ratio", "0",
            "--max-length", "4096", "--seed", "0", "-q"]  # fmt: skip
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    card = json.loads((out / "training_card.json").read_text())
    result = card["result"]
    print("tamper fine-tune:", {k: result[k] for k in ("first_loss", "final_loss", "steps")})
    print("held-out eval loss:", result["eval_loss_before"], "->", result["eval_loss_after"])
    assert card["data"]["trained"] == 24 and result["steps"] == 12
    assert result["final_loss"] < 0.5 * result["first_loss"]
    _eval(base, held_out, tmp_path / "after", "--model-arg", f"adapter={out}")
    run_args = json.loads((tmp_path / "after" / "run.json").read_text())["run"]["model_args"]
    assert run_args["adapter"] == str(out)  # the adapter loaded in hf:
    compared = CliRunner().invoke(
        app, ["compare", str(tmp_path / "before"), str(tmp_path / "after"), "--json"]
    )
    assert compared.exit_code == 0, compared.output
    paired = json.loads(compared.output)
    right = {name: _correct(tmp_path / name) for name in ("before", "after")}
    print("held-out detect right before/after:", right, "compare:", paired)
    assert paired["n"] == 4  # the 4 held-out clips (original + 3 effects), paired by id
    # held-out answers move toward the truth, and the held-out loss falls
    assert right["after"] > right["before"]  # measured 0 -> 2 of 4 (McNemar p = 0.5 on 4)
    assert result["eval_loss_after"] < result["eval_loss_before"]


def _correct(run: Path) -> int:
    from tests.runs import stored_rows

    return sum(r["letter"] == r["answer"] for r in stored_rows(run).values())
