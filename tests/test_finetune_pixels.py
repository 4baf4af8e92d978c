"""Training sees the pixels evaluation sees (issue 31 item 6 follow-up: ``--image-max-side``).

``hf:`` evaluation reads a photo with ``run.process.load_image`` (OpenCV), a clip's frames
from their JPEGs (``decode_jpeg``), and caps each array's longer side at
``image_max_side`` (1024 by default, INTER_AREA) before the processor. ``finetune`` read
its images with PIL at their on-disk size, so a photo or frame larger than the cap gave
the processor other pixels (and more tokens) in training than at evaluation. Asserted:
the processor's ``pixel_values`` of a training sample built from a large photo (tiny
Idefics3 and Qwen2-VL) and of a large clip as native video (Qwen2-VL,
``--video-input video``) are identical to ``hf:`` evaluation's for the same media and
prompt; ``--image-max-side`` is in the training card with its source and in the resume
key (a changed value is reported as a changed setting).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "peft", "trl")):
    pytest.skip("needs the train extra: pip install -e '.[train]'", allow_module_level=True)

from tests.hf_families import FAMILIES


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _noise(height: int, width: int, seed: int) -> np.ndarray:
    """An RGB image whose every downscale differs: a gradient plus seeded noise."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, width, dtype=np.float32)[None, :, None]
    image = ramp + rng.integers(0, 56, (height, width, 3)).astype(np.float32)
    return np.clip(image, 0, 255).astype(np.uint8)


def _write_jpeg(path: Path, rgb: np.ndarray) -> Path:
    import cv2

    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95]
    )
    assert ok
    path.write_bytes(buf.tobytes())
    return path


def _request(frames: tuple[np.ndarray, ...], **kw: Any) -> Any:
    from mmrobust.models import Request

    return Request(
        sample_id="s", prompt="What is shown?", question="What is shown?", options={},
        frames=frames, **kw,
    )  # fmt: skip


@pytest.mark.parametrize("family", ["idefics3", "qwen2_vl"])
def test_a_large_photo_gives_training_the_pixels_of_evaluation(family: str, tmp_path: Path) -> None:
    """A 1600 x 1200 JPEG photo: the training sample's ``pixel_values`` equal ``hf:``'s for
    the same image and prompt (before: PIL at 1600 x 1200, the processor's own resize)."""
    import torch

    from mmrobust.finetune.collate import ChatRenderer, Encoder
    from mmrobust.finetune.data import Conversation, Turn
    from mmrobust.models.hf import HFModel, make
    from mmrobust.run.process import load_image

    photo = _write_jpeg(tmp_path / "photo.jpg", _noise(1200, 1600, seed=1))
    checkpoint = FAMILIES[family].build(tmp_path / family, seed=0)
    model = make(str(checkpoint), {"device": "cpu"})
    assert isinstance(model, HFModel) and model.options.image_max_side == 1024
    # as the runner builds an MMR sample's request (run/process.py: load_image)
    evaluation, shown = model._inputs([_request((load_image(photo),))])
    assert shown[0][0].shape == (768, 1024, 3)  # hf: capped it
    conversation = Conversation(
        "c", "x", (photo,), (Turn("user", "<image>\nWhat is shown?"), Turn("assistant", "Noise."))
    )
    processor = model.processor
    rendered = ChatRenderer(processor).render(conversation)
    batch = Encoder(processor).encode([rendered], [conversation.images])
    prompt = evaluation["input_ids"][0].tolist()
    assert batch["input_ids"][0].tolist()[: len(prompt)] == prompt  # same image tokens
    assert batch["pixel_values"].shape == evaluation["pixel_values"].shape
    assert torch.equal(batch["pixel_values"], evaluation["pixel_values"])
    for key in ("image_grid_thw", "pixel_attention_mask"):
        if key in evaluation:
            assert torch.equal(batch[key], evaluation[key]), key

    # 0 means uncapped on both sides, and then the pixels differ from the capped ones
    uncapped = Encoder(processor, image_max_side=0).encode([rendered], [conversation.images])
    whole = make(str(checkpoint), {"device": "cpu", "image_max_side": "0"})
    assert isinstance(whole, HFModel)
    raw, _ = whole._inputs([_request((load_image(photo),))])
    assert torch.equal(uncapped["pixel_values"], raw["pixel_values"])
    same_shape = uncapped["pixel_values"].shape == batch["pixel_values"].shape
    assert not same_shape or not torch.equal(uncapped["pixel_values"], batch["pixel_values"])


def test_a_large_clip_as_native_video_gives_training_the_pixels_of_evaluation(
    tmp_path: Path,
) -> None:
    """Eight 1280 x 720 frames as one native video on Qwen2-VL (``--video-input video``):
    ``pixel_values_videos`` and the grid equal ``hf:``'s with ``video_input=video``."""
    import torch

    from mmrobust.finetune.collate import ChatRenderer, Encoder
    from mmrobust.finetune.data import Conversation, Turn, VideoTiming
    from mmrobust.media.jpeg import decode_jpeg
    from mmrobust.models.hf import HFModel, HFOptions

    indices = tuple(12 + 25 * i for i in range(8))
    paths = tuple(
        _write_jpeg(tmp_path / f"frame-{i}.jpg", _noise(720, 1280, seed=10 + i)) for i in range(8)
    )
    checkpoint = FAMILIES["qwen2_vl"].build(tmp_path / "qwen2_vl", seed=0)
    model = HFModel(str(checkpoint), HFOptions(video_input="video", device="cpu"))
    # as the runner hands a clip's cached JPEGs to hf: (SampledClip.arrays: decode_jpeg)
    frames = tuple(decode_jpeg(p.read_bytes()) for p in paths)
    request = _request(frames, frame_indices=indices, video_fps=25.0, video_frame_count=200)
    evaluation, shown = model._inputs([request])
    assert shown[0][0].shape == (576, 1024, 3)
    text = "".join("<image>" for _ in paths) + "\nWhat is shown?"
    conversation = Conversation(
        "c", "x", paths, (Turn("user", text), Turn("assistant", "Noise.")),
        video=VideoTiming(25.0, indices, 200),
    )  # fmt: skip
    processor = model.processor
    rendered = ChatRenderer(processor).render(conversation, video=True)
    batch = Encoder(processor).encode([rendered], [paths], [conversation.video])
    prompt = evaluation["input_ids"][0].tolist()
    assert batch["input_ids"][0].tolist()[: len(prompt)] == prompt
    assert torch.equal(batch["video_grid_thw"], evaluation["video_grid_thw"])
    assert torch.equal(batch["pixel_values_videos"], evaluation["pixel_values_videos"])


def _llava(folder: Path, n: int) -> Path:
    """``n`` one-image conversations on 40 x 40 images (LLaVA format); returns the file."""
    records = []
    for i in range(n):
        _write_jpeg(folder / f"{i}.jpg", _noise(40, 40, seed=i))
        records.append(
            {
                "id": f"s{i}",
                "image": f"{i}.jpg",
                "conversations": [
                    {"from": "human", "value": "<image>\nWhat is it?"},
                    {"from": "gpt", "value": "Noise."},
                ],
            }
        )
    out = folder / "llava.json"
    out.write_text(json.dumps(records), encoding="utf-8")
    return out


def test_image_max_side_is_in_the_card_and_the_resume_key(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mmrobust.cli import app
    from mmrobust.finetune.outputs import card_markdown
    from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE
    from mmrobust.models.hf import HFOptions

    checkpoint = FAMILIES["idefics3"].build(tmp_path / "idefics3", seed=0)
    data = _llava(tmp_path, 2)
    out = tmp_path / "ft"
    args = ["finetune", "--model", f"hf:{checkpoint}", "--data", str(data), "--out", str(out)]
    args += ["--device", "cpu", "--lora-r", "4", "--lora-alpha", "8", "--lr", "5e-3", "-q"]
    args += ["--global-batch", "1", "--per-device-batch", "1", "--max-steps", "1"]
    args += ["--warmup-ratio", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    card = json.loads((out / "training_card.json").read_text())
    assert card["hyperparameters"]["image_max_side"] == DEFAULT_IMAGE_MAX_SIDE == 1024
    assert HFOptions().image_max_side == DEFAULT_IMAGE_MAX_SIDE  # one default for both
    assert card["sources"]["image_max_side"] == "same as hf: evaluation"
    settings = json.loads((out / "run_config.json").read_text())["settings"]
    assert settings["image_max_side"] == 1024
    assert "image_max_side=" not in (out / "README.md").read_text()

    changed = CliRunner().invoke(app, [*args, "--image-max-side", "512"])
    assert changed.exit_code == 2, changed.output
    assert f"error: {out} holds a run with other settings (image_max_side); " in changed.output

    # a card with another cap tells how to evaluate on the same pixels
    card["hyperparameters"]["image_max_side"] = 512
    assert "--model-arg adapter=<this folder> --model-arg image_max_side=512`" in card_markdown(
        card
    )
    card["hyperparameters"]["video_input"] = "video"  # trained on clips as native video
    assert (
        "--model-arg adapter=<this folder> --model-arg image_max_side=512 "
        "--model-arg video_input=video`"
    ) in card_markdown(card)
    bad = CliRunner().invoke(app, [*args, "--image-max-side", "-1"])
    assert bad.exit_code == 2 and "--image-max-side:" in bad.output


def _video_config(checkpoint: Path, **settings: Any) -> Path:
    """``checkpoint``'s video processor configuration with ``settings`` written in."""
    path = checkpoint / "processor_config.json"
    config = json.loads(path.read_text())
    config["video_processor"].update(settings)
    path.write_text(json.dumps(config))
    return checkpoint


def test_native_video_pixel_cap_is_the_configurations_and_recorded(
    family_checkpoints: Callable[[str], Path], tmp_path: Path
) -> None:
    """A 1280 x 720 clip (8 frames) as native video on Qwen2-VL: ``hf:`` passes
    ``cap_pixels_per_frame`` explicitly, the value the video processor's configuration implies
    (stated: that; unstated: ``False``), so its token count equals the processor's with that
    setting whatever the library's default; the value is in the run key (``fingerprint``,
    hence ``run.json``), training passes the same, and the library's warning about the
    unset option is not raised (before: unset, warned on every load, not recorded)."""
    import logging

    from mmrobust.finetune.collate import Encoder
    from mmrobust.models.hf import HFModel, HFOptions

    indices = tuple(12 + 25 * i for i in range(8))
    frames = tuple(_noise(720, 1280, seed=20 + i) for i in range(8))
    request = _request(frames, frame_indices=indices, video_fps=25.0, video_frame_count=200)
    # frames sized by the configuration up to 256 merged tokens, the whole-clip budget
    # (max_video_tokens) small enough that the reference cap binds on this clip
    sizes = {"size": {"shortest_edge": 28 * 28, "longest_edge": 1024 * 28 * 28}}
    warnings: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
    library = logging.getLogger("transformers")
    library.addHandler(handler)
    try:
        built = family_checkpoints("qwen2_vl")  # the session's tiny Qwen2-VL, copied below
        for stated, implied in ((None, False), (True, True)):
            checkpoint = Path(shutil.copytree(built, tmp_path / f"q-{stated}"))
            extra = {} if stated is None else {"cap_pixels_per_frame": stated}
            _video_config(checkpoint, **sizes, max_video_tokens=64, **extra)
            model = HFModel(str(checkpoint), HFOptions(video_input="video", device="cpu"))
            inputs, shown = model._inputs([request])
            assert shown[0][0].shape == (576, 1024, 3)
            video = model.processor.video_processor

            def tokens(cap: bool, clip: Any = np.stack(shown[0]), video: Any = video) -> int:
                grid = video(videos=[clip], do_sample_frames=False, cap_pixels_per_frame=cap)
                return int(grid["video_grid_thw"].prod()) // 4  # 2x2 merge

            pad = model.processor.tokenizer.convert_tokens_to_ids("<|video_pad|>")
            counted = int((inputs["input_ids"] == pad).sum())
            assert counted == tokens(implied) == int(inputs["video_grid_thw"].prod()) // 4
            assert tokens(not implied) != tokens(implied)  # the setting matters on this clip
            assert model.fingerprint()["cap_pixels_per_frame"] is implied
            assert Encoder(model.processor).pixel_cap is implied  # training passes the same
        images = HFModel(str(checkpoint), HFOptions(device="cpu"))
        assert "cap_pixels_per_frame" not in images.fingerprint()  # frames as images
    finally:
        library.removeHandler(handler)
    assert not [w for w in warnings if "cap_pixels_per_frame" in w], warnings
