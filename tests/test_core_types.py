"""Core typed values: Sample validation, registry lookups, model spec parsing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mmrobust.models.spec import MODELS, parse_model_args, parse_spec
from mmrobust.registry import Registry, UnknownNameError
from mmrobust.schema import Sample, Window
from mmrobust.status import Status


def test_sample_rejects_answer_outside_options() -> None:
    with pytest.raises(ValidationError, match="not one of"):
        Sample(id="x", question="q", options={"A": "Yes", "B": "No"}, answer="C")


def test_window_rejects_reversed_bounds() -> None:
    with pytest.raises(ValidationError):
        Window(start_frame=5, end_frame=4, start_s=0.2, end_s=0.1)
    assert Window(start_frame=3, end_frame=3, start_s=0.1, end_s=0.1).n_frames == 0


def test_registry_suggests_close_names() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("dropping", 1)
    reg.register("masking", 2)
    with pytest.raises(UnknownNameError, match="Did you mean: dropping"):
        reg.get("droping")


def test_model_registry_lazy_names_and_spec_grammar() -> None:
    assert {"constant", "random", "forensic", "openai", "hf"} <= set(MODELS.names())
    spec = parse_spec("hf:/models/a:b")
    assert (spec.name, spec.arg) == ("hf", "/models/a:b")
    assert parse_spec("forensic").arg is None
    assert parse_model_args(["base_url=http://h:1/v1", "k=a=b"]) == {
        "base_url": "http://h:1/v1",
        "k": "a=b",
    }
    with pytest.raises(ValueError):
        parse_model_args(["novalue"])


def test_status_error_classes() -> None:
    assert not Status.OK.is_error
    assert not Status.PARSE_FAIL.is_error
    assert Status.TIMEOUT.is_error and Status.MEDIA_ERROR.is_error
