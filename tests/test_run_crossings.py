"""Where run features meet (issue 27 items 1-4): the run key of a model loaded elsewhere,
Ctrl-C, resume identity, server limits some samples hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrobust.models.spec import frame_encoding_of, load_model
from mmrobust.run.config import EvalConfig
from mmrobust.run.keys import key_difference, key_parts


def test_the_frame_encoding_of_a_spec_is_the_loaded_models(tmp_path: Path) -> None:
    for spec, args in (
        ("openai:m", {}),
        ("openai:m", {"jpeg_quality": "70", "image_max_side": "512"}),
        ("constant:A", {}),
        ("forensic", {}),
    ):
        model = load_model(spec, args)
        try:
            assert frame_encoding_of(spec, args) == model.frame_encoding()
        finally:
            model.close()
    assert (frame_encoding_of("openai:m").quality, frame_encoding_of("openai:m").max_side) == (
        90,
        1024,
    )


def test_a_key_mismatch_names_the_fields_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from mmrobust.distributed.eval import RemoteModel, check_same_key

    config = EvalConfig(data="d", model="openai:m", out=str(tmp_path), frames=4)
    real = load_model("openai:m", {})
    try:
        theirs = key_parts(real, config.prompt_config(), config.policy(), text_only=False)
    finally:
        real.close()
    info = {
        "name": "m",
        "batch_size": 1,
        "max_concurrency": 4,
        "fingerprint": theirs["model"],
        "media_input": "frames",
        "key_parts": theirs,
    }
    check_same_key(config, RemoteModel.from_info(info, frame_encoding_of("openai:m")), info)
    stand_in = RemoteModel.from_info(info)  # the old driver: default encoding (q95, full size)
    with pytest.raises(ValueError) as err:
        check_same_key(config, stand_in, info)
    line = str(err.value)
    assert "\n" not in line
    assert "frame_encoding.quality 95 here, 90 there" in line
    assert "frame_encoding.max_side None here, 1024 there" in line
    assert "media.encoding" not in line and "install the same mmrobust" in line
    ours = key_parts(stand_in, config.prompt_config(), config.policy(), text_only=False)
    assert key_difference(ours, ours) is None
