"""Paired-data pipeline (MMR paper section 4) end to end against a local fake server.

The server (``tests/fake_openai_server.py``, on 127.0.0.1) answers stage 1 by
the colour of the image it receives and stage 2 by the information text in
the prompt, with canned replies that include malformed, uncertain and
refusing ones; the filters must catch each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets.mmr import load_mmr
from mmrobust.mmrdata.filters import check_qa
from mmrobust.mmrdata.parse import GeneratedQA, GenerationParseError, parse_generation
from mmrobust.mmrdata.pipeline import ItemStatus, item_key, run_mmr_data
from mmrobust.mmrdata.prompts import EXTRACTION_PROMPT
from mmrobust.models import load_model
from tests.fake_openai_server import FakeOpenAIServer, RecordedRequest, Reply

COLOURS = {
    "red": (220, 30, 30),
    "green": (30, 200, 40),
    "blue": (20, 40, 210),
    "gray": (128, 128, 128),
}


def qa(question: str, options: list[str], answer: str) -> dict[str, Any]:
    return {"question": question, "options": options, "answer": answer}


RED_PAIRS = {
    "pairs": [
        {
            "category": "attribute/color&texture",
            "positive": qa("What colour is the square?", ["Red.", "Blue.", "Green.", "Gray."], "A"),
            "negative": qa(
                "Why is the blue square so dark?",
                ["It is dark.", "The square is red, not blue.", "It is night.", "No square."],
                "B",
            ),
        },
        {  # negative answer is a refusal: negative dropped, positive kept
            "category": "shape",
            "positive": qa("What shape is it?", ["Circle.", "Square.", "Star.", "Line."], "B"),
            "negative": qa(
                "Why is the circle round?",
                ["Sorry, I cannot tell.", "It is a star.", "Because.", "It is thin."],
                "A",
            ),
        },
    ]
}
GREEN_REPLY = (
    "Sure! Here you go:\n```json\n"
    + json.dumps(
        {
            "pairs": [
                {  # malformed: three options
                    "category": "attribute/number",
                    "positive": qa("How many?", ["One.", "Two.", "Three."], "A"),
                    "negative": qa("Why three?", ["a", "b", "c", "d"], "A"),
                },
                {  # uncertain positive, duplicate options in negative: both dropped
                    "category": "context/abstract",
                    "positive": qa("Mood?", ["It is uncertain.", "Sad.", "Happy.", "Calm."], "A"),
                    "negative": qa("Why angry?", ["Calm.", "calm", "Sad.", "Happy."], "A"),
                },
                {
                    "category": "context/relation",
                    "positive": qa("Is it green?", ["Yes, green.", "No.", "Red.", "Blue."], "a"),
                    "negative": qa(
                        "Why is the red square bright?",
                        ["It is green, not red.", "Sun.", "Lamp.", "Paint."],
                        "(A)",
                    ),
                },
            ]
        }
    )
    + "\n```"
)


def responder(request: RecordedRequest) -> Reply:
    text = request.text
    if EXTRACTION_PROMPT.splitlines()[0] in text:
        mean = request.images()[0].reshape(-1, 3).mean(axis=0)
        colour = min(COLOURS, key=lambda c: float(np.abs(mean - COLOURS[c]).sum()))
        if colour == "blue":
            return Reply.ok("I'm sorry, but I can't help with that request.")
        return Reply.ok(f"INFO-{colour.upper()}: a {colour} square.")
    if "INFO-RED" in text:
        return Reply.ok(json.dumps(RED_PAIRS))
    if "INFO-GREEN" in text:
        return Reply.ok(GREEN_REPLY)
    if "INFO-GRAY" in text:
        return Reply.ok("Here are the pairs: positive and negative, as requested.")
    return Reply.error(500)


@pytest.fixture()
def images(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "imgs"
    folder.mkdir()
    paths = []
    for name, rgb in COLOURS.items():
        path = folder / f"{name}.png"
        cv2.imwrite(str(path), np.full((32, 48, 3), rgb[::-1], np.uint8))
        paths.append(path)
    broken = folder / "broken.jpg"
    broken.write_bytes(b"not an image")
    return [*paths, broken]


def test_parse_generation_variants() -> None:
    pairs, problems = parse_generation(GREEN_REPLY)
    assert len(pairs) == 2 and problems[0].startswith("malformed: pair 0: positive.options")
    assert pairs[1].positive.answer == "A" and pairs[1].negative.answer == "A"
    assert (
        parse_generation(json.dumps(RED_PAIRS["pairs"]))[0][0].category == "attribute/color&texture"
    )
    with pytest.raises(GenerationParseError):
        parse_generation("no json at all")
    with pytest.raises(GenerationParseError):
        parse_generation('{"something": 1}')


def test_filters() -> None:
    good = GeneratedQA(question="Q?", options=("Red.", "Blue.", "Green.", "Gray."), answer="A")
    assert check_qa(good) == []
    refusal = good.model_copy(update={"options": ("I'm unable to see it.", "b", "c", "d")})
    assert check_qa(refusal) == ['uncertain: "i\'m unable"']
    dup = good.model_copy(update={"options": ("Red.", "red", "c", "d"), "answer": "C"})
    assert check_qa(dup) == ["malformed: duplicate options"]


def test_pipeline_end_to_end_and_resume(images: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(responder=responder) as server:
        model = load_model(
            "openai:fake", {"base_url": server.base_url, "max_retries": "0", "max_tokens": "2048"}
        )
        summary = run_mmr_data(images, model, out, n_pairs=3)
        first_calls = len(server.chat_requests)
        # every request carried the image
        assert all(len(r.image_urls) == 1 for r in server.chat_requests)
    assert first_calls == 7  # red 2, green 2, blue 1 (refused), gray 2, broken 0
    assert summary.statuses == {
        "ok": 2,
        "extraction_refused": 1,
        "parse_fail": 1,
        "media_error": 1,
    }
    assert (summary.pairs_parsed, summary.pairs_kept, summary.turns_kept) == (4, 2, 5)
    assert summary.dropped == {
        "malformed: duplicate options": 1,
        "malformed: schema": 1,
        "uncertain: 'sorry'": 1,
        "uncertain: 'uncertain'": 1,
    }

    llava = json.loads((out / "llava.json").read_text())
    assert [r["polarity"] for r in llava] == [
        "positive",
        "negative",
        "positive",
        "positive",
        "negative",
    ]
    red_key = item_key(images[0])
    assert llava[0]["id"] == f"{red_key}-00-pos"
    assert llava[0]["conversations"] == [
        {"from": "human", "value": "<image>\nWhat colour is the square?"},
        {"from": "gpt", "value": "Red."},
    ]
    assert llava[2]["category"] == "attribute/shape"  # "shape" normalised
    # The MMR-format file loads with the benchmark loader and pairs up.
    mmr = load_mmr(out / "mmr.json")
    assert mmr.defects == []
    assert [s.id for s in mmr.samples] == [
        f"attribute/color&texture/{red_key}-00#pos",
        f"attribute/color&texture/{red_key}-00#neg",
        f"context/relation/{item_key(images[1])}-01#pos",
        f"context/relation/{item_key(images[1])}-01#neg",
    ]
    assert mmr.samples[1].answer == "B" and mmr.samples[1].image == images[0]
    assert mmr.samples[0].category == "Color/Texture"

    item = json.loads((out / "items" / f"{red_key}.json").read_text())
    assert item["extraction_prompt"] == EXTRACTION_PROMPT
    assert "INFO-RED: a red square." in item["generation_prompt"]
    assert item["dropped"] == [{"pair": 1, "side": "negative", "reasons": ["uncertain: 'sorry'"]}]
    broken = json.loads((out / "items" / f"{item_key(images[4])}.json").read_text())
    assert broken["status"] == "media_error" and "not a readable image" in broken["error"]
    assert json.loads((out / "prompts.json").read_text())["extraction"] == EXTRACTION_PROMPT

    # Resume: finished images are reused; a transient failure is retried.
    failing = out / "items" / f"{item_key(images[3])}.json"
    data = json.loads(failing.read_text())
    data["status"] = ItemStatus.API_ERROR.value
    failing.write_text(json.dumps(data))
    with FakeOpenAIServer(responder=responder) as server:
        model = load_model("openai:fake", {"base_url": server.base_url, "max_retries": "0"})
        again = run_mmr_data(images, model, out, n_pairs=3)
        assert len(server.chat_requests) == 2  # only the gray image, both stages
    assert again.skipped == 4
    assert again.statuses == summary.statuses
    assert json.loads((out / "llava.json").read_text()) == llava


def test_server_errors_are_typed(images: list[Path], tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=lambda _r: Reply.error(500)) as server:
        model = load_model("openai:fake", {"base_url": server.base_url, "max_retries": "0"})
        summary = run_mmr_data(images[:1], model, tmp_path / "o", n_pairs=1)
    assert summary.statuses == {"api_error": 1}
    item = json.loads((tmp_path / "o" / "items" / f"{item_key(images[0])}.json").read_text())
    assert item["error"].startswith("extraction: ")


def test_cli_mmr_data(images: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "cli"
    with FakeOpenAIServer(responder=responder) as server:
        result = CliRunner().invoke(
            app,
            [
                "mmr-data",
                str(images[0].parent),
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
        # the CLI raises the backend's max_tokens default for the long stage-2 replies
        assert server.chat_requests[0].body["max_tokens"] == 2048
    assert result.exit_code == 0, result.output
    assert "pairs kept 2 of 4" in result.output
    assert json.loads((out / "summary.json").read_text())["images"] == 5

    bad = CliRunner().invoke(
        app, ["mmr-data", str(tmp_path / "nope.png"), "--model", "blind-overlap", "--out", str(out)]
    )
    assert bad.exit_code == 2 and "no such image or folder" in bad.output
