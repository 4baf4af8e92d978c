"""MMR loader: question parsing, pairing by id, defects, categories, images, demo set."""

from __future__ import annotations

import json
import random
import zipfile
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest

from mmrobust.datasets import Sample, load_dataset
from mmrobust.datasets.mmr import (
    CATEGORY_ORDER,
    DEMO_IMAGES,
    MMRFormatError,
    load_mmr,
    materialize_demo,
    mmr_samples,
    parse_question,
)
from tests.shared_data import MMR_JSON, needs_shared

REAL = MMR_JSON
needs_real = needs_shared(REAL)


def test_parse_regular_question() -> None:
    q = parse_question("What is it?\nA. a cat\nB. a dog\nC. a cow\nD. a hen")
    assert q.stem == "What is it?"
    assert q.options == {"A": "a cat", "B": "a dog", "C": "a cow", "D": "a hen"}
    assert q.prompt == "What is it?\nA. a cat\nB. a dog\nC. a cow\nD. a hen"


def test_parse_letters_without_period_and_stray_spaces() -> None:
    # The real record context/concrete/20, options inline, two letters without periods.
    q = parse_question(
        "Which option is the tragic work of the person in the picture? A. Hamlet B The "
        "Merchant of Venice C Journey to the West. D. This person is not a writer.\n"
    )
    assert q.stem == "Which option is the tragic work of the person in the picture?"
    assert q.options == {
        "A": "Hamlet",
        "B": "The Merchant of Venice",
        "C": "Journey to the West.",
        "D": "This person is not a writer.",
    }


def test_parse_options_on_one_line_with_double_spaces() -> None:
    q = parse_question(
        "Is this group jumping long? A.  they are doing long jump. B.  they are running. "
        "C. It can't be confirmed. D.  they are riding bicycles.\n"
    )
    assert q.options["A"] == "they are doing long jump."
    assert q.options["C"] == "It can't be confirmed."
    assert q.options["D"] == "they are riding bicycles."


def test_parse_no_space_after_period_and_out_of_order() -> None:
    q = parse_question("Is this cotton?\nA.a cloud.\nD. cotton.\nC. a snowflake.\nB. a dandelion.")
    assert list(q.options) == ["A", "D", "C", "B"]  # display order kept
    assert q.options["D"] == "cotton."
    assert q.options["A"] == "a cloud."


def test_parse_rejects_missing_option() -> None:
    with pytest.raises(ValueError, match="four options"):
        parse_question("What is it?\nA. a cat\nB. a dog\nC. a cow")


def _rec(pid: str, qtype: str, answer: str = "A", image: str | None = None) -> dict[str, str]:
    return {
        "id": pid,
        "image": image or f"{pid}.jpg",
        "question": f"Q {pid} {qtype}?\nA. one\nB. two\nC. three\nD. four",
        "ground_truth": answer,
        "question_type": qtype,
    }


def test_pairs_by_id_not_position() -> None:
    records = [
        _rec("context/activity/01", "NEG", "B"),
        _rec("attribute/shape/02", "POS", "C"),
        _rec("context/activity/01", "POS", "D"),
        _rec("attribute/shape/02", "NEG", "A"),
    ]
    samples, defects = mmr_samples(records, text_only=True)
    assert defects == []
    assert [s.id for s in samples] == [
        "context/activity/01#pos",
        "context/activity/01#neg",
        "attribute/shape/02#pos",
        "attribute/shape/02#neg",
    ]
    first = samples[0]
    assert (first.answer, first.polarity, first.group, first.category) == (
        "D",
        "positive",
        "context/activity/01",
        "Activity",
    )
    assert first.meta == {
        "record_index": 2,
        "question_type": "POS",
        "question_raw": records[2]["question"],
    }
    assert samples[3].category == "Shape" and samples[3].answer == "A"
    assert all(s.benchmark == "mmr" and s.image is None and s.error is None for s in samples)


def test_defects_are_reported_not_fatal() -> None:
    records = [
        _rec("a/b/01", "POS"),
        _rec("a/b/01", "POS", "C"),  # POS/POS, not a known defect: asked, not paired
        _rec("a/b/02", "NEG"),  # alone
        _rec("a/b/03", "POS"),
        _rec("a/b/03", "NEG", "E"),  # bad ground truth: dropped
        {**_rec("a/b/04", "POS"), "question": "no options here"},
        _rec("a/b/04", "NEG"),
    ]
    samples, defects = mmr_samples(records, text_only=True)
    by_id = {s.id: s for s in samples}
    pos_pos = sorted((s for s in samples if s.group == "a/b/01"), key=lambda s: s.answer)
    assert [s.answer for s in pos_pos] == ["A", "C"]
    assert all(s.polarity == "positive" and s.id.startswith("a/b/01#pos-") for s in pos_pos)
    assert pos_pos[0].id != pos_pos[1].id
    assert "a/b/03#neg" not in by_id
    assert by_id["a/b/04#pos"].error is not None  # kept: the runner records data_error
    assert len(defects) == 4
    assert defects[0].startswith("a/b/01: both records labelled POS/POS; which one is the leading")
    assert any(d.startswith("a/b/02: only one record") for d in defects)
    assert any("'E' is not an option letter" in d for d in defects)
    assert any(d.startswith("a/b/04#pos: could not find four options") for d in defects)


@needs_real
def test_real_file_facts() -> None:
    data = load_mmr(REAL, text_only=True)
    assert data.benchmark == "mmr" and len(data.samples) == 600
    assert all(len(s.options) == 4 and set(s.options) == set("ABCD") for s in data.samples)
    assert len({s.id for s in data.samples}) == 600
    assert data.defects == [
        "attribute/number/04: both records labelled POS/POS; resolved by content (a known "
        "defect of the released file): 'Are all five people in total have laptops'... is the "
        "leading question"
    ]
    pair = {s.polarity: s for s in data.samples if s.group == "attribute/number/04"}
    assert pair["positive"].question == "How many people in total have laptops?"
    assert pair["negative"].answer == "A" and pair["negative"].meta["record_index"] == 273
    polarity = Counter(s.polarity for s in data.samples)
    assert polarity == {"positive": 300, "negative": 300}
    pairs = Counter(s.category for s in data.samples if s.polarity == "positive")
    assert pairs == {
        "Character/Number": 40,
        "Presence": 22,
        "Color/Texture": 24,
        "Number": 24,
        "Shape": 24,
        "Posture": 24,
        "Position": 22,
        "Abstract Knowledge": 22,
        "Concrete Knowledge": 21,
        "Expertise": 31,
        "Activity": 24,
        "Relationships": 22,
    }
    assert data.data_hash == "e55290e603f41c7444cb8a8a6f355dab6a521a4fa845ca8757b40b817e5f7dc3"


@needs_real
def test_real_file_missing_images_are_typed_errors(tmp_path: Path) -> None:
    data = load_dataset(REAL)  # detected as mmr
    assert data.benchmark == "mmr"
    assert all(s.error and s.error.startswith("image not found: ") for s in data.samples)
    # An --images folder with one image resolves that image only.
    image = tmp_path / "character" / "character" / "01.jpg"
    image.parent.mkdir(parents=True)
    cv2.imwrite(str(image), np.zeros((8, 8, 3), np.uint8))
    data = load_dataset(REAL, images=tmp_path)
    found = [s for s in data.samples if s.error is None]
    assert [s.id for s in found] == ["character/character/01#pos", "character/character/01#neg"]
    assert all(s.image == image for s in found)


def test_hf_folder_with_image_zip(tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    folder.mkdir()
    records = [_rec("x/y/01", "POS"), _rec("x/y/01", "NEG", "B")]
    (folder / "MMR-benchmark.json").write_text(json.dumps(records))
    ok, buf = cv2.imencode(".jpg", np.full((4, 4, 3), 200, np.uint8))
    assert ok
    with zipfile.ZipFile(folder / "images.zip", "w") as archive:
        archive.writestr("images/x/y/01.jpg", buf.tobytes())
    data = load_mmr(folder, cache_dir=tmp_path / "cache")
    assert [s.error for s in data.samples] == [None, None]
    assert data.samples[0].image is not None and data.samples[0].image.is_file()
    assert (tmp_path / "cache").is_dir()


def test_not_mmr_json_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(MMRFormatError, match="expected a JSON array"):
        load_mmr(bad)
    with pytest.raises(FileNotFoundError):
        load_mmr(tmp_path / "missing.json")


def test_demo_set(tmp_path: Path) -> None:
    annotation = materialize_demo(tmp_path / "demo")
    records = json.loads(annotation.read_text())
    assert len(records) == 48
    samples, defects = mmr_samples(records, image_roots=[annotation.parent / "images"])
    assert defects == []
    assert all(s.error is None and s.image is not None and s.image.is_file() for s in samples)
    per_category = Counter(s.category for s in samples if s.polarity == "positive")
    assert per_category == dict.fromkeys(CATEGORY_ORDER, 2)
    answers = Counter((s.polarity, s.answer) for s in samples)
    assert set(answers.values()) == {6}  # balanced letters per polarity
    assert {p.name for p in (annotation.parent / "images").iterdir()} == set(DEMO_IMAGES)
    coins = cv2.imread(str(annotation.parent / "images" / "coins.jpg"))
    assert coins.shape == (303, 384, 3)
    # Loading by name works through load_dataset and the cache.
    data = load_dataset("mmr-demo", cache_dir=tmp_path / "cache")
    assert data.name == "mmr-demo" and len(data.samples) == 48


def test_one_invalid_label_is_decided_by_the_valid_one() -> None:
    from mmrobust.datasets.mmr import mmr_samples

    q = "What is it?\nA. a\nB. b\nC. c\nD. d"
    records = [
        {
            "id": "a/b/01",
            "image": "x.jpg",
            "question": q,
            "ground_truth": "A",
            "question_type": "WEIRD",
        },
        {
            "id": "a/b/01",
            "image": "x.jpg",
            "question": q,
            "ground_truth": "B",
            "question_type": "POS",
        },
    ]
    samples, defects = mmr_samples(records, text_only=True)
    by_polarity = {s.polarity: s.meta["record_index"] for s in samples}
    assert by_polarity == {"positive": 1, "negative": 0}
    assert defects[0].startswith("a/b/01: labels POS/WEIRD; the valid label POS decides")


def _without_position(samples: list[Sample]) -> dict[str, Sample]:
    out = {}
    for s in samples:
        meta = {k: v for k, v in s.meta.items() if k != "record_index"}
        out[s.id] = s.model_copy(update={"meta": meta})
    return out


def test_samples_and_defects_do_not_depend_on_record_order() -> None:
    records = [
        _rec("a/b/01", "NEG", "B"),
        _rec("a/b/01", "POS", "D"),
        _rec("a/b/02", "POS", "A"),
        _rec("a/b/02", "POS", "C"),  # unresolvable POS/POS
        _rec("a/b/03", "POS", "A"),
        _rec("a/b/03", "NEG", "B"),
        _rec("a/b/03", "NEG", "C"),  # three records, two NEG: not paired
        _rec("a/b/04", "XYZ", "A"),
        _rec("a/b/04", "NEG", "B"),
        _rec("a/b/05", "POS", "A"),
        _rec("a/b/05", "NEG", "B"),
        _rec("a/b/05", "OTHER", "C"),  # three records, one POS and one NEG: those kept
    ]
    base, base_defects = mmr_samples(records, text_only=True)
    assert len(base) == 12 - 1
    for seed in range(3):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        samples, defects = mmr_samples(shuffled, text_only=True)
        assert _without_position(samples) == _without_position(base)
        assert sorted(defects) == sorted(base_defects)


@needs_real
def test_real_file_shuffled_gives_the_same_samples() -> None:
    records = json.loads(REAL.read_text(encoding="utf-8"))
    base, base_defects = mmr_samples(records, text_only=True)
    shuffled = records[:]
    random.Random(0).shuffle(shuffled)
    samples, defects = mmr_samples(shuffled, text_only=True)
    assert _without_position(samples) == _without_position(base) and defects == base_defects
