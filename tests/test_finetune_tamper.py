"""``mmrobust tamper-data`` -> ``finetune`` (frames as images) -> ``eval`` before/after -> ``compare``.

Issue 31's loop for video, on CPU: two bundled sample clips (``bikes`` for training,
``carphone_pristine`` held out: the split is by source video, asserted), three effects at
two training positions, the detect / type / when questions as ``eval`` asks them, the 8
frames ``eval`` shows (``sample_clip``, the same JPEG bytes); a tiny Idefics3 trained a
few LoRA steps: loss falls, only the answer letter and the end-of-turn token carry loss,
the adapter loads in ``hf:``, and the held-out clips are evaluated before and after, with
the paired test of ``compare``.

Native video (``finetune --video-input video``): the records carry the clips' timing
(``video_metadata``); for every family with a video processor a held-out clip's training
ids start with exactly the ids ``hf:`` builds with ``video_input=video`` (same video
tensors, same frame times), the labels are the answer and its stop token; a tiny Qwen2-VL
is trained on the clips as video and evaluated with ``video_input=video`` (loss falls,
held-out answers move toward the truth, ``compare``'s paired test); the refusals (no
``video_metadata``, no video processor, clips mixed with images in a batch) are one line.
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

from tests.hf_families import FAMILIES, build_qwen2_vl

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
    assert "24 training conversations from 1 source(s), 12 held out from 1" in result.output
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
    sampled = sample_clip(video, FramePolicy(), FrameEncoding())
    shown = [(tamper_data / "train" / p).read_bytes() for p in first["image"]]
    assert shown == list(sampled.jpegs)
    # and their timing, for --video-input video: this clip is bikes (250 frames at 25 fps)
    # with 1 s dropped, 225 frames; eval's 8 segment centres of 225
    assert first["meta"]["effect"] == "dropping"
    assert first["video_metadata"] == {
        "fps": 25.0, "frames_indices": list(sampled.indices), "total_num_frames": 225,
        "duration": 9.0,
    }  # fmt: skip
    assert sampled.n_frames == 225 and float(sampled.fps) == 25.0
    # re-running resumes: nothing rebuilt, the same records
    again = CliRunner().invoke(
        app,
        ["tamper-data", *[s["path"] for s in manifest["sources"]["train"]],
         *[s["path"] for s in manifest["sources"]["eval"]], "--out", str(tamper_data),
         "--effects", EFFECTS, "--positions", "start,end", "--eval-fraction", "0.5"],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert _records(tamper_data / "train" / "llava.json") == records


def test_the_held_out_clips_pass_the_overlap_check_clip_by_clip(tamper_data: Path) -> None:
    from mmrobust.finetune.data import load_training_data
    from mmrobust.finetune.overlap import MediaKeys, find_overlap

    train, _ = load_training_data([tamper_data / "train" / "llava.json"])
    held, _ = load_training_data([tamper_data / "eval" / "llava.json"])
    assert (len(train), len(held)) == (24, 12)
    # every sample is a clip (video_metadata), fingerprinted once per clip: 8 training clips
    # (2 positions x original + 3 effects), 4 held out, 3 questions each
    media = MediaKeys()
    assert all(media.clip(c) for c in [*train, *held]) and len(media.clips) == 12
    assert find_overlap(train, held).line() is None
    assert find_overlap(held, held).same_media == 12


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
    paired, right = _compare_before_after(tmp_path)
    assert paired["n"] == 4  # the 4 held-out clips (original + 3 effects), paired by id
    # held-out answers move toward the truth, and the held-out loss falls
    assert right["after"] > right["before"]  # measured 0 -> 2 of 4 (McNemar p = 0.5 on 4)
    assert result["eval_loss_after"] < result["eval_loss_before"]


def _compare_before_after(tmp_path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """``compare --json`` of ``tmp_path/before`` and ``tmp_path/after`` (the paired test), and
    the held-out answers right in each run."""
    compared = CliRunner().invoke(
        app, ["compare", str(tmp_path / "before"), str(tmp_path / "after"), "--json"]
    )
    assert compared.exit_code == 0, compared.output
    paired = json.loads(compared.output)
    right = {name: _correct(tmp_path / name) for name in ("before", "after")}
    print("held-out detect right before/after:", right, "compare:", paired)
    return paired, right


def _correct(run: Path) -> int:
    from tests.runs import stored_rows

    return sum(r["letter"] == r["answer"] for r in stored_rows(run).values())


# --- native video (``finetune --video-input video``, as ``hf:`` with ``video_input=video``) --


def _held_out_request(tamper_data: Path, effect: str) -> tuple[Any, str]:
    """The ``hf:`` request of one held-out ``detect`` clip, built as ``mmrobust eval`` builds
    it (``run/process.py``: the clip sampled and JPEG-cached, decoded; ``eval``'s prompt),
    independently of ``tamper-data``'s records; and the id of the matching record."""
    from mmrobust.datasets import load_dataset
    from mmrobust.media.frames import sample_clip
    from mmrobust.media.jpeg import FrameEncoding
    from mmrobust.media.sampling import FramePolicy
    from mmrobust.models.base import Request
    from mmrobust.prompts import build_prompt

    dataset = load_dataset(tamper_data / "eval")
    sample = next(s for s in dataset.samples if (s.tamper_type or "original") == effect)
    clip = sample_clip(sample.video, FramePolicy(), FrameEncoding())
    prompt = build_prompt(sample)
    request = Request(
        sample_id=sample.id, prompt=prompt.text, question=prompt.question,
        options=prompt.options, system=prompt.system, assistant_prefill=prompt.assistant_prefill,
        frames=clip.arrays(), frame_indices=clip.indices, video_fps=float(clip.fps),
        video_frame_count=clip.n_frames, media_offset=prompt.media_offset,
    )  # fmt: skip
    return request, f"llava:detect/clips-middle-1s/{sample.id}"


# every family with a video processor but LLaVA-OneVision, whose template is not
# prefix-preserving (refused with the fix, tests/test_finetune_fixes.py)
VIDEO_FAMILIES = [n for n, f in FAMILIES.items() if f.video and n != "llava_onevision"]


@pytest.mark.parametrize("name", VIDEO_FAMILIES)
def test_video_training_ids_start_with_the_ids_hf_eval_builds(
    name: str, tamper_data: Path, tmp_path: Path
) -> None:
    """The training input of a held-out clip as native video starts with exactly the ids
    ``hf:`` evaluation builds with ``video_input=video`` (the prompt up to the assistant
    turn, the video tokens expanded), the same video tensors, and the loss is on the
    answer only."""
    from mmrobust.finetune.collate import IGNORE_INDEX, ChatRenderer, Encoder
    from mmrobust.finetune.data import load_training_data
    from mmrobust.models.hf import HFModel, HFOptions

    folder = FAMILIES[name].build(tmp_path / name, seed=0)
    model = HFModel(str(folder), HFOptions(video_input="video", device="cpu"))
    request, record_id = _held_out_request(tamper_data, "dropping")
    expected, _ = model._inputs([request])
    conversations, report = load_training_data([tamper_data / "eval" / "llava.json"])
    assert not report.problems
    conversation = next(c for c in conversations if c.id == record_id)
    assert conversation.video is not None and len(conversation.images) == 8
    processor = model.processor
    rendered = ChatRenderer(processor).render(conversation, video=True)
    batch = Encoder(processor).encode([rendered], [conversation.images], [conversation.video])
    ids, want = batch["input_ids"][0].tolist(), expected["input_ids"][0].tolist()
    assert ids[: len(want)] == want  # the prompt, video tokens included, token for token
    assert len(ids) > len(want)
    for key in ("pixel_values_videos", "video_grid_thw", "second_per_grid_ts"):
        if key in expected:  # the same frames, and the same times where the family uses them
            assert batch[key].tolist() == expected[key].tolist(), key
    labels = batch["labels"][0].tolist()
    assert all(t == IGNORE_INDEX for t in labels[: len(want)])  # nothing of the prompt
    answer = processor.tokenizer.decode([t for t in labels if t != IGNORE_INDEX]).strip()
    assert answer.startswith(conversation.turns[-1].text)  # the letter, then the stop token
    assert answer[1:].strip() in {processor.tokenizer.eos_token, "<end_of_utterance>"}


def test_video_labels_and_video_tokens_on_qwen2_vl(tamper_data: Path, tmp_path: Path) -> None:
    from transformers import AutoProcessor

    from mmrobust.finetune.collate import IGNORE_INDEX, ChatRenderer, Encoder, prepare_rows
    from mmrobust.finetune.data import Problem, load_training_data

    processor = AutoProcessor.from_pretrained(build_qwen2_vl(tmp_path / "q", seed=0))
    conversations, _ = load_training_data([tamper_data / "train" / "llava.json"])
    problems: list[Problem] = []
    renderer, encoder = ChatRenderer(processor), Encoder(processor)
    rows = prepare_rows(conversations, renderer, encoder, 4096, problems, video_input="video")
    assert len(rows) == 24 and not problems
    assert all(json.loads(r["video"])["fps"] == 25.0 for r in rows)  # bikes: 25 fps
    first = conversations[0]
    rendered = renderer.render(first, video=True)
    assert rendered.text.count("<|video_pad|>") == 1 and "<|image_pad|>" not in rendered.text
    batch = encoder.encode([rendered], [first.images], [first.video])
    ids = batch["input_ids"][0].tolist()
    video_id = processor.tokenizer.convert_tokens_to_ids("<|video_pad|>")
    image_id = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    # 8 frames -> 4 temporal patches (2 frames each) of 2x2-merged patch tokens
    (t, h, w), *more = batch["video_grid_thw"].tolist()
    assert t == 4 and not more and "image_grid_thw" not in batch
    assert ids.count(video_id) == t * h * w // 4 > 0 and ids.count(image_id) == 0
    answer = [t for t in batch["labels"][0].tolist() if t != IGNORE_INDEX]
    assert processor.tokenizer.decode(answer) == first.turns[-1].text + "<|im_end|>"
    # the images path of the same sample: image tokens, no video tokens
    as_images = encoder.encode([renderer.render(first)], [first.images])
    ids = as_images["input_ids"][0].tolist()
    per_image = [t * h * w // 4 for t, h, w in as_images["image_grid_thw"].tolist()]
    assert len(per_image) == 8 and ids.count(image_id) == sum(per_image)
    assert ids.count(video_id) == 0


def test_video_input_refusals(tamper_data: Path, tmp_path: Path) -> None:
    """No video metadata in the data, or a processor without video: one line each, the fix."""
    from tests.hf_tiny import build_tiny_idefics3

    plain = tmp_path / "plain.json"
    records = _records(tamper_data / "train" / "llava.json")
    plain.write_text(json.dumps([{k: v for k, v in r.items() if k != "video_metadata"}
                                 for r in records]))  # fmt: skip
    qwen = build_qwen2_vl(tmp_path / "q", seed=0)
    base = ["finetune", "--max-steps", "1", "--device", "cpu", "-q", "--video-input", "video"]
    run = CliRunner().invoke(
        app, [*base, "--model", str(qwen), "--data", str(plain), "--media", str(tamper_data / "train"),
              "--out", str(tmp_path / "a")],
    )  # fmt: skip
    assert run.exit_code == 2
    assert "no training sample carries video_metadata" in run.output
    assert "mmrobust tamper-data" in run.output and "--video-input images" in run.output
    mixed = tmp_path / "mixed.json"  # half the samples clips, half images
    mixed.write_text(json.dumps([r if i % 2 else {k: v for k, v in r.items() if k != "video_metadata"}
                                 for i, r in enumerate(records)]))  # fmt: skip
    run = CliRunner().invoke(
        app, [*base, "--model", str(qwen), "--data", str(mixed), "--media", str(tamper_data / "train"),
              "--out", str(tmp_path / "m"), "--per-device-batch", "2"],
    )  # fmt: skip
    assert run.exit_code == 2
    assert "12 of 24 training samples are clips, the others images" in run.output
    assert "--per-device-batch 1" in run.output
    idefics = build_tiny_idefics3(tmp_path / "i", seed=0)
    run = CliRunner().invoke(
        app, [*base, "--model", str(idefics), "--data", str(tamper_data / "train"),
              "--out", str(tmp_path / "b")],
    )  # fmt: skip
    assert run.exit_code == 2
    assert "needs a processor with a video input; Idefics3Processor has none" in run.output


def test_a_malformed_video_metadata_is_a_reported_record(tmp_path: Path) -> None:
    from mmrobust.finetune.data import read_file

    frame = tmp_path / "f.jpg"
    frame.write_bytes(b"x")
    record = {"image": ["f.jpg", "f.jpg"], "conversations": [
        {"from": "human", "value": "<image>\n<image>\nQ"}, {"from": "gpt", "value": "A"}]}  # fmt: skip
    cases = {
        "good": {"fps": 25, "frames_indices": [3, 9], "total_num_frames": 10},
        "few": {"fps": 25, "frames_indices": [3]},
        "fps": {"fps": 0, "frames_indices": [3, 9]},
        "total": {"fps": 25, "frames_indices": [3, 9], "total_num_frames": 9},
    }
    data = tmp_path / "d.json"
    data.write_text(
        json.dumps([{**record, "id": k, "video_metadata": v} for k, v in cases.items()])
    )
    conversations, problems, _ = read_file(data, "generated")
    assert [c.id for c in conversations] == ["d:good"]
    assert conversations[0].video is not None
    assert conversations[0].video.frames_indices == (3, 9)
    assert {p.id: p.detail for p in problems} == {
        "d:few": "video_metadata has 1 frames_indices for 2 images",
        "d:fps": "video_metadata.fps must be a positive number",
        "d:total": "video_metadata.total_num_frames must be an integer above every frame index",
    }


@pytest.mark.slow
def test_finetune_native_video_and_measure_held_out(tamper_data: Path, tmp_path: Path) -> None:
    """A tiny Qwen2-VL trained on the clips as native video, evaluated the same way."""
    from tests.finetune_data import widen_text_model

    manifest = json.loads((tamper_data / "tamper_data.json").read_text())
    train = {s["sha256"] for s in manifest["sources"]["train"]}
    held = {s["sha256"] for s in manifest["sources"]["eval"]}
    assert train and held and not train & held  # the split by source
    assert {r["source"] for r in manifest["records"]["eval"]} == held
    base = widen_text_model(build_qwen2_vl(tmp_path / "base", seed=0))
    held_out = tamper_data / "eval"
    video = ("--model-arg", "video_input=video")
    _eval(base, held_out, tmp_path / "before", *video)
    out = tmp_path / "ft"
    args = ["finetune", "--model", f"hf:{base}", "--data", str(tamper_data / "train"),
            "--eval-data", str(held_out / "llava.json"), "--out", str(out), "--device", "cpu",
            "--global-batch", "8", "--per-device-batch", "8", "--max-steps", "12",
            "--lr", "5e-3", "--lora-r", "16", "--lora-alpha", "32", "--warmup-ratio", "0",
            "--max-length", "4096", "--seed", "0", "-q", "--video-input", "video"]  # fmt: skip
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    card = json.loads((out / "training_card.json").read_text())
    result = card["result"]
    print("video fine-tune:", {k: result[k] for k in ("first_loss", "final_loss", "steps")})
    print("held-out eval loss:", result["eval_loss_before"], "->", result["eval_loss_after"])
    assert card["hyperparameters"]["video_input"] == "video"
    assert "--model-arg video_input=video`" in (out / "README.md").read_text()
    assert card["data"]["trained"] == 24 and result["steps"] == 12
    assert result["final_loss"] < 0.5 * result["first_loss"]  # measured 9.06 -> 1.17
    assert result["eval_loss_after"] < result["eval_loss_before"]  # measured 9.34 -> 1.53
    _eval(base, held_out, tmp_path / "after", *video, "--model-arg", f"adapter={out}")
    run_args = json.loads((tmp_path / "after" / "run.json").read_text())["run"]["model_args"]
    assert run_args["adapter"] == str(out) and run_args["video_input"] == "video"
    paired, right = _compare_before_after(tmp_path)
    assert paired["n"] == 4 and right["after"] > right["before"]  # measured 0 -> 3 of 4
    assert paired["p_value"] == pytest.approx(0.25)  # McNemar, 3 discordant pairs of 4
