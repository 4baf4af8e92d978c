"""The ``Effect`` base class, its context, and the effect registry."""

from __future__ import annotations

import difflib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from mmrobust.registry import Registry


@dataclass
class EffectContext:
    """What an effect may use besides the window frames.

    Attributes:
        rng: seeded generator, one per (source, effect), for random effects.
        donor: for ``substitution``: ``F`` consecutive donor frames already
            resized to the target size, ``(H, W, 3) uint8`` each; else ``None``.
    """

    rng: np.random.Generator
    donor: Sequence[np.ndarray] | None = None


class Effect(BaseModel, ABC):
    """One tamper effect: turns the window's ``F`` frames into replacement frames.

    Subclasses declare their parameters as pydantic fields (validated,
    unknown names rejected) and implement ``apply``. ``apply`` is pure: it
    gets the window frames, each ``(H, W, 3) uint8 RGB``, and returns the
    frames to write in their place, each the same shape; the list may be
    shorter (dropping, speed-up) or longer (repetition, slow-down).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: ClassVar[str]
    """Registry name (also the manifest's ``tamper_type``)."""
    official_token: ClassVar[str | None] = None
    """``tamper_type`` token of the released dataset, for the paper's five effects."""
    needs_donor: ClassVar[bool] = False
    """True when ``apply`` needs ``EffectContext.donor``."""

    @abstractmethod
    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        """Replacement frames for ``window`` (``F`` frames ``(H, W, 3) uint8``)."""

    def output_length(self, length: int) -> int:
        """Frames written in place of a ``length``-frame window (default: same length)."""
        return length

    @property
    def params(self) -> dict[str, Any]:
        """Validated parameters as plain JSON values (the manifest's ``params``)."""
        return self.model_dump(mode="json")


EFFECTS: Registry[type[Effect]] = Registry("tamper effect", plugins=True)
"""All effects by name. The paper's five: dropping, masking, rotation, substitution, repetition."""

PAPER_EFFECTS = ("dropping", "masking", "rotation", "substitution", "repetition")
"""MVTamperBench section 3.2, in the order the CLI defaults to."""


def register_effect(cls: type[Effect], *, origin: str | None = None) -> type[Effect]:
    """Register an ``Effect`` subclass under its ``name`` (the same as
    ``@EFFECTS.register(cls.name)``; returns ``cls``, so it also works as a decorator).

    Raises:
        ValueError: another effect is registered under that name.
    """
    if EFFECTS.peek(cls.name) is not cls:
        EFFECTS.register(cls.name, cls, origin=origin)
    return cls


def adopt(obj: object, name: str, origin: str) -> None:
    """Register an ``Effect`` subclass that a plugin entry point names (:mod:`mmrobust.plugins`).

    Raises:
        TypeError: ``obj`` is not an ``Effect`` subclass.
    """
    if not (isinstance(obj, type) and issubclass(obj, Effect)):
        raise TypeError(f"{getattr(obj, '__name__', type(obj).__name__)} is not an Effect subclass")
    register_effect(obj, origin=origin)


class EffectParamError(ValueError):
    """Unknown effect or invalid effect parameters (one-line message)."""


def make_effect(name: str, **params: Any) -> Effect:
    """Instantiate the effect ``name`` with validated ``params``.

    Raises:
        EffectParamError: unknown name (with "did you mean") or invalid parameters.
    """
    try:
        cls = EFFECTS.get(name)
    except KeyError as exc:
        raise EffectParamError(str(exc)) from None
    try:
        return cls(**params)
    except ValidationError as exc:
        raise EffectParamError(_param_problems(name, cls, exc)) from None


def _param_problems(name: str, cls: type[Effect], exc: ValidationError) -> str:
    """One line naming each bad parameter, the effect's parameter names and a "did you mean"."""
    fields = list(cls.model_fields)
    known = f"{name} takes {', '.join(fields)}" if fields else f"{name} takes no parameters"
    problems = []
    for e in exc.errors():
        key = ".".join(str(p) for p in e["loc"]) or "params"
        if e["type"] == "extra_forbidden":
            close = difflib.get_close_matches(key, fields, n=1, cutoff=0.5)
            hint = f" (did you mean {name}.{close[0]}?)" if close else ""
            problems.append(f"unknown parameter {name}.{key}{hint}")
        else:
            problems.append(f"{name}.{key}={e.get('input')!r}: {e['msg']}")
    return f"{'; '.join(problems)}; {known}"


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if "," in text:
            return [_parse_value(t.strip()) for t in text.split(",")]
        return text


def parse_param_specs(specs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Parse ``EFFECT.KEY=VALUE`` strings into ``{effect: {key: value}}``.

    Values are JSON when they parse (``180``, ``0.5``, ``null``, ``[0,0,0.5,0.5]``),
    comma lists become lists (``0.1,0.1,0.5,0.5``), anything else stays a string.

    Raises:
        EffectParamError: a spec without ``.`` or ``=``.
    """
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        lhs, eq, rhs = spec.partition("=")
        effect, dot, key = lhs.strip().partition(".")
        if not eq or not dot or not effect or not key:
            raise EffectParamError(f"effect parameter {spec!r} is not EFFECT.KEY=VALUE")
        out.setdefault(effect, {})[key] = _parse_value(rhs.strip())
    return out


__all__ = [
    "EFFECTS",
    "PAPER_EFFECTS",
    "Effect",
    "EffectContext",
    "EffectParamError",
    "adopt",
    "make_effect",
    "parse_param_specs",
    "register_effect",
]
