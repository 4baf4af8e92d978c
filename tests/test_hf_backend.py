"""The hf backend on a tiny random Idefics3 built offline in the test, with real frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmrobust.media import read_frames, sample_clips
from mmrobust.models import Request, load_model
from mmrobust.models.hf import HFModel, build_messages, make
from mmrobust.status import Status
from tests.hf_tiny import CHAT_TEMPLATE, build_tiny_idefics3

pytest.importorskip("transformers")

INDICES = (0, 35, 70, 105, 140, 175, 210, 245)
PROMPT = "Does this video exhibit any signs of tampering?\nA. Yes\nB. No"


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_idefics3(tmp_path_factory.mktemp("tiny-idefics3"))


@pytest.fixture(scope="session")
def frames() -> np.ndarray:
    return read_frames(sample_clips()["bikes"], list(INDICES))


@pytest.fixture(scope="session")
def model(tiny_vlm: Path) -> HFModel:
    built = make(str(tiny_vlm), {"max_new_tokens": "6", "device": "cpu"})
    assert isinstance(built, HFModel)
    return built


def _request(frames: np.ndarray | tuple[np.ndarray, ...] = (), **kw: object) -> Request:
    base: dict[str, object] = {
        "sample_id": "s",
        "prompt": PROMPT,
        "question": "Does this video exhibit any signs of tampering?",
        "options": {"A": "Yes", "B": "No"},
        "frames": tuple(frames),
    }
    base.update(kw)
    return Request(**base)  # type: ignore[arg-type]


def test_generates_on_real_frames(model: HFModel, frames: np.ndarray) -> None:
    [resp] = model.generate([_request(frames)])
    assert resp.status == Status.OK, resp.error
    assert isinstance(resp.text, str)
    assert resp.completion_tokens is not None and 1 <= resp.completion_tokens <= 6
    # 8 images x (4 image tokens + 2 fake-image wrappers) are part of the prompt.
    assert resp.prompt_tokens is not None and resp.prompt_tokens > 8 * 6
    assert resp.extra == {"n_images": 8}


def test_deterministic_across_two_loads(tiny_vlm: Path, model: HFModel, frames: np.ndarray) -> None:
    again = load_model(f"hf:{tiny_vlm}", {"max_new_tokens": "6", "device": "cpu"})
    reqs = [_request(frames), _request(frames[:2]), _request()]
    first = [(r.status, r.text, r.completion_tokens) for r in model.generate(reqs)]
    second = [(r.status, r.text, r.completion_tokens) for r in again.generate(reqs)]
    assert first == second
    assert all(status == Status.OK for status, _, _ in first)
    assert model.fingerprint() == again.fingerprint()


def test_frames_reach_the_model_in_order(
    model: HFModel, frames: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, object] = {}
    original = model.model.generate

    def spy(**kwargs: object) -> object:
        seen.update(kwargs)
        return original(**kwargs)

    monkeypatch.setattr(model.model, "generate", spy)
    order = [3, 0, 7, 5]
    [resp] = model.generate([_request(frames[order])])
    assert resp.status == Status.OK
    pixel = seen["pixel_values"][0].numpy()  # type: ignore[index]
    assert pixel.shape == (4, 3, 32, 32)
    # Per-image mean brightness follows the order we sent (normalisation is affine).
    means = pixel.reshape(4, -1).mean(axis=1)
    expected = np.array([frames[i].mean() for i in order])
    assert list(np.argsort(means)) == list(np.argsort(expected))
    assert seen["do_sample"] is False and seen["max_new_tokens"] == 6


def test_batches_and_isolates_a_bad_request(tiny_vlm: Path, frames: np.ndarray) -> None:
    batched = make(str(tiny_vlm), {"batch_size": "3", "max_new_tokens": "4", "device": "cpu"})
    assert batched.batch_size == 3
    bad = np.zeros((8, 8, 3), dtype=np.float32)
    resps = batched.generate([_request(frames[:3]), _request((bad,)), _request(frames[:1])])
    assert [r.status for r in resps] == [Status.OK, Status.MODEL_ERROR, Status.OK]
    assert "uint8" in (resps[1].error or "")
    assert "\n" not in (resps[1].error or "")


def test_prompt_uses_the_chat_template_and_prefill(model: HFModel) -> None:
    text = model._prompt(_request(system="Be brief.", assistant_prefill="Best option:("), 2)
    assert text == (
        "<|im_start|>System:Be brief.<end_of_utterance>\n"
        f"User:<image><image>{PROMPT}<end_of_utterance>\nAssistant:Best option:("
    )


def test_build_messages_images_and_video_parts() -> None:
    req = _request(system="S")
    msgs = build_messages(req, 3, "images")
    assert msgs[0] == {"role": "system", "content": [{"type": "text", "text": "S"}]}
    assert [p["type"] for p in msgs[1]["content"]] == ["image", "image", "image", "text"]
    assert [p["type"] for p in build_messages(req, 3, "video")[1]["content"]] == ["video", "text"]
    assert [p["type"] for p in build_messages(req, 0, "video")[1]["content"]] == ["text"]
    # a single frame (an image sample) stays an image in video mode
    assert [p["type"] for p in build_messages(req, 1, "video")[1]["content"]] == ["image", "text"]


def test_image_max_side_downscales_before_the_processor(tiny_vlm: Path, frames: np.ndarray) -> None:
    capped = make(str(tiny_vlm), {"image_max_side": "64", "device": "cpu"})
    assert isinstance(capped, HFModel)
    assert [f.shape for f in capped._frames(_request(frames[:2]))] == [(27, 64, 3)] * 2


def test_fingerprint_identifies_the_checkpoint(model: HFModel, tiny_vlm: Path) -> None:
    fp = model.fingerprint()
    assert fp["name"] == f"hf:{tiny_vlm}"
    assert fp["local_digest"] and len(fp["local_digest"]) == 16
    assert (fp["dtype"], fp["max_new_tokens"], fp["temperature"]) == ("auto", 6, 0.0)
    assert fp["transformers"].startswith("5.")


def test_video_input_needs_a_video_processor(tiny_vlm: Path) -> None:
    with pytest.raises(ValueError, match="Idefics3Processor has none"):
        make(str(tiny_vlm), {"video_input": "video", "device": "cpu"})


def test_missing_checkpoint_is_one_line_value_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="hf: no checkpoint folder at") as info:
        make(str(tmp_path / "no-such-model"), {})
    assert "\n" not in str(info.value)
    (tmp_path / "empty").mkdir()  # a folder that is there but holds no checkpoint
    with pytest.raises(ValueError, match="hf: cannot load") as info:
        make(str(tmp_path / "empty"), {})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [({"max_new_token": "3"}, "did you mean 'max_new_tokens'"), ({"dtype": "fp8"}, "dtype")],
)
def test_bad_args(args: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make("anything", args)


def test_model_id_required() -> None:
    with pytest.raises(ValueError, match="hf:<id-or-path>"):
        make(None, {})


def test_unknown_hub_id_fails_in_seconds_with_a_clear_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A typo or a missing network gives one ValueError, never minutes of download retries."""
    from mmrobust.models.spec import load_model

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ValueError, match=r"hf: .*'nonexistent-org/no-such-model'"):
        load_model("hf:nonexistent-org/no-such-model")


# -- reasoning knobs (issue 28) ------------------------------------------------------------

THINKING_TEMPLATE = CHAT_TEMPLATE + (
    "{% if add_generation_prompt and enable_thinking is defined and enable_thinking %}"
    "<think>\n{% endif %}"
)


@pytest.fixture(scope="module")
def thinking_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tpl") / "thinking.jinja"
    path.write_text(THINKING_TEMPLATE, encoding="utf-8")
    return path


def test_a_reasoning_template_raises_the_default_budget_and_takes_template_kwargs(
    tiny_vlm: Path, thinking_template: Path
) -> None:
    base = {"device": "cpu", "chat_template": str(thinking_template)}
    on = make(str(tiny_vlm), {**base, "chat_template_kwargs": '{"enable_thinking": true}'})
    off = make(str(tiny_vlm), {**base, "chat_template_kwargs": '{"enable_thinking": false}'})
    told = make(str(tiny_vlm), {**base, "max_new_tokens": "6"})
    plain = make(str(tiny_vlm), {"device": "cpu"})
    assert isinstance(on, HFModel) and isinstance(off, HFModel) and isinstance(plain, HFModel)
    assert [m.fingerprint()["max_new_tokens"] for m in (on, off, told, plain)] == [
        4096,
        128,
        6,
        128,
    ]
    assert on.fingerprint()["chat_template_kwargs"] == {"enable_thinking": True}
    assert "chat_template_kwargs" not in plain.fingerprint()  # old run keys unchanged
    assert on._prompt(_request(), 0).endswith("Assistant:<think>\n")  # reached the template
    assert off._prompt(_request(), 0).endswith("Assistant:")


def test_reasoning_drop_removes_a_closed_think_block(
    tiny_vlm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = make(str(tiny_vlm), {"device": "cpu", "max_new_tokens": "2", "reasoning": "drop"})
    assert isinstance(model, HFModel) and model.fingerprint()["reasoning"] == "drop"
    monkeypatch.setattr(
        model.processor, "batch_decode", lambda *_a, **_k: ["<think>A is wrong.</think>\n\nB"]
    )
    [resp] = model.generate([_request()])
    assert (resp.status, resp.text, resp.reasoning) == (Status.OK, "B", None)
    assert resp.extra["reasoning_dropped_chars"] == 28
