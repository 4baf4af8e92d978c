"""Tamper effects, one small class each, registered by name in ``EFFECTS``."""

from __future__ import annotations

from mmrobust.tamper.effects.base import (
    EFFECTS,
    PAPER_EFFECTS,
    Effect,
    EffectContext,
    EffectParamError,
    make_effect,
    parse_param_specs,
    register_effect,
)
from mmrobust.tamper.effects.extra import Blur, Flip, Noise, PartialMask, Shuffle, Speed
from mmrobust.tamper.effects.paper import Dropping, Masking, Repetition, Rotation, Substitution

__all__ = [
    "EFFECTS",
    "PAPER_EFFECTS",
    "Blur",
    "Dropping",
    "Effect",
    "EffectContext",
    "EffectParamError",
    "Flip",
    "Masking",
    "Noise",
    "PartialMask",
    "Repetition",
    "Rotation",
    "Shuffle",
    "Speed",
    "Substitution",
    "make_effect",
    "parse_param_specs",
    "register_effect",
]
