"""Paired training data and tiny trainable checkpoints for the fine-tuning tests.

``generate_pairs`` runs the real ``mmrobust mmr-data`` command against the
local fake OpenAI server (``tests/fake_openai_server.py``, 127.0.0.1): four
plain-colour images, two positive/negative pairs each, 8 pairs in all, with
the correct letters spread over A-D. ``widen_text_model`` re-initialises a
tiny checkpoint's language model wider and deeper from its own config class
(random, seeded). Two settings make a random model stand in for a pretrained
one under LoRA (frozen base, frozen output layer): weights drawn with std 0.2
instead of 0.02, so the last position's hidden state carries the question
(with 0.02 it is nearly the same for every prompt), and an output layer with
std 0.5, so logits can be confident. Measured on the 8 generated pairs, 30
LoRA steps: 8 of 8 pairs learnt with these, 0 of 8 (loss stuck at ln 4 per
letter) with std 0.02 after 60 steps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.mmrdata.prompts import EXTRACTION_PROMPT
from tests.fake_openai_server import FakeOpenAIServer, RecordedRequest, Reply
from tests.test_mmr_pipeline import COLOURS
from tests.test_mmr_pipeline import qa as _qa

PAIRS: dict[str, list[dict[str, Any]]] = {
    "red": [
        {
            "category": "attribute/color&texture",
            "positive": _qa(
                "What colour is the square?", ["Red.", "Blue.", "Green.", "Gray."], "A"
            ),
            "negative": _qa(
                "Why is the blue square dark?",
                ["It is night.", "The square is red, not blue.", "It is wet.", "It is far."],
                "B",
            ),
        },
        {
            "category": "attribute/shape",
            "positive": _qa("What shape is drawn?", ["Circle.", "Star.", "Square.", "Line."], "C"),
            "negative": _qa(
                "Why is the circle red?",
                ["Paint.", "Light.", "Ink.", "It is a square, not a circle."],
                "D",
            ),
        },
    ],
    "green": [
        {
            "category": "attribute/color&texture",
            "positive": _qa(
                "Which colour fills the image?", ["Blue.", "Green.", "Red.", "Gray."], "B"
            ),
            "negative": _qa(
                "Why is the image so red?",
                ["It is green, not red.", "Sunset.", "Fire.", "Filter."],
                "A",
            ),
        },
        {
            "category": "attribute/number",
            "positive": _qa(
                "How many squares are there?", ["Two.", "Three.", "Four.", "One."], "D"
            ),
            "negative": _qa(
                "Why are there three squares?",
                ["Copies.", "Tiles.", "There is one square, not three.", "Mirrors."],
                "C",
            ),
        },
    ],
    "blue": [
        {
            "category": "attribute/color&texture",
            "positive": _qa("What is the main colour?", ["Gray.", "Red.", "Blue.", "Green."], "C"),
            "negative": _qa(
                "Why is the green area bright?",
                ["Lamp.", "Sun.", "Glow.", "The area is blue, not green."],
                "D",
            ),
        },
        {
            "category": "context/abstract",
            "positive": _qa("What mood does it give?", ["Calm.", "Angry.", "Loud.", "Busy."], "A"),
            "negative": _qa(
                "Why does it feel angry?",
                ["Red tones.", "It feels calm, not angry.", "Noise.", "Crowds."],
                "B",
            ),
        },
    ],
    "gray": [
        {
            "category": "attribute/color&texture",
            "positive": _qa("What tone is the picture?", ["Red.", "Gray.", "Blue.", "Green."], "B"),
            "negative": _qa(
                "Why is the gray picture pink?",
                ["Dye.", "Light.", "It is gray, not pink.", "Age."],
                "C",
            ),
        },
        {
            "category": "attribute/existence",
            "positive": _qa(
                "Is there any text?",
                ["Yes, a word.", "Yes, a number.", "A sign.", "No, there is none."],
                "D",
            ),
            "negative": _qa(
                "What does the large word say?",
                ["There is no word.", "Hello.", "Stop.", "Exit."],
                "A",
            ),
        },
    ],
}
"""The pairs the fake server generates per image colour; answers: 4 x A, 4 x B, 4 x C, 4 x D."""


def responder(request: RecordedRequest) -> Reply:
    """Stage 1: name the image's colour; stage 2: that colour's two pairs as JSON."""
    text = request.text
    if EXTRACTION_PROMPT.splitlines()[0] in text:
        mean = request.images()[0].reshape(-1, 3).mean(axis=0)
        colour = min(COLOURS, key=lambda c: float(np.abs(mean - COLOURS[c]).sum()))
        return Reply.ok(f"INFO-{colour.upper()}: a {colour} square.")
    for colour, pairs in PAIRS.items():
        if f"INFO-{colour.upper()}" in text:
            return Reply.ok(json.dumps({"pairs": pairs}))
    return Reply.error(500)


def generate_pairs(root: Path) -> Path:
    """Images under ``root/images`` and ``mmrobust mmr-data`` output in ``root/mmr-data``."""
    images = root / "images"
    images.mkdir(parents=True, exist_ok=True)
    for name, rgb in COLOURS.items():
        cv2.imwrite(str(images / f"{name}.png"), np.full((32, 32, 3), rgb[::-1], np.uint8))
    out = root / "mmr-data"
    with FakeOpenAIServer(responder=responder) as server:
        result = CliRunner().invoke(
            app,
            [
                "mmr-data",
                str(images),
                "--model",
                "openai:fake",
                "--model-arg",
                f"base_url={server.base_url}",
                "--model-arg",
                "max_retries=0",
                "--out",
                str(out),
                "--pairs",
                "2",
            ],
        )
    assert result.exit_code == 0, result.output
    assert "pairs kept 8 of 8" in result.output
    return out


def widen_text_model(
    folder: Path,
    *,
    hidden: int = 64,
    layers: int = 2,
    initializer_range: float = 0.2,
    lm_head_std: float = 0.5,
    seed: int = 0,
) -> Path:
    """Re-initialise ``folder``'s model (random, seeded) with a wider, deeper language model.

    Built from the checkpoint's own config class (``from_config``); the
    processor files are left as they are (see the module docstring for the
    two standard deviations). A per-layer ``layer_types`` list (Qwen2-VL) is
    resized to the new depth, its first entry repeated.
    """
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText, GenerationConfig

    config = AutoConfig.from_pretrained(folder)
    text = config.get_text_config()
    head_dim = text.hidden_size // text.num_attention_heads
    text.hidden_size = hidden
    text.intermediate_size = 2 * hidden
    text.num_hidden_layers = layers
    if getattr(text, "layer_types", None):
        text.layer_types = [text.layer_types[0]] * layers
    text.num_attention_heads = hidden // head_dim
    text.num_key_value_heads = 1
    text.initializer_range = config.initializer_range = initializer_range
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
    with torch.no_grad():
        model.lm_head.weight.normal_(0.0, lm_head_std)
    model.generation_config = GenerationConfig.from_pretrained(folder)
    model.save_pretrained(folder)
    return folder


__all__ = ["COLOURS", "PAIRS", "generate_pairs", "responder", "widen_text_model"]
