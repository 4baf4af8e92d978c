"""Model backends behind one protocol: baselines, forensic detector, OpenAI-compatible, HF."""

from __future__ import annotations

from mmrobust.models.base import MediaInput, Model, Request, Response
from mmrobust.models.spec import MODELS, ModelSpec, load_model, parse_model_args, parse_spec

__all__ = [
    "MODELS",
    "MediaInput",
    "Model",
    "ModelSpec",
    "Request",
    "Response",
    "load_model",
    "parse_model_args",
    "parse_spec",
]
