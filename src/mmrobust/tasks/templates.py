"""The question templates of the tasks ``type``, ``when`` and ``leading``, loaded from data.

The wording lives in one file, ``mmrobust/data/tasks/questions.json``, with the
source of every choice next to it (``docs/tasks.md`` prints them). This module
validates it (pydantic) and picks the wording of one effect at its parameters
(``variants``: a 90-degree rotation is not "upside down").
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

TEMPLATES_RESOURCE = ("mmrobust", "data/tasks/questions.json")
"""Package and path of the template file."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EffectWording(_Frozen):
    """How the tasks speak of one effect.

    Attributes:
        type: the ``type`` option ("Some frames are upside down").
        premise: the false premise of a ``leading`` question, with ``{part}``
            ("The frames {part} of this video are upside down.", ``{part}``
            "in the middle").
        question: the question about a detail of the premise.
        reject: the option that rejects the premise (the correct answer).
        source: where the wording comes from.
    """

    type: str
    premise: str
    question: str
    reject: str
    source: str

    @model_validator(mode="after")
    def _has_part(self) -> EffectWording:
        if "{part}" not in self.premise:
            raise ValueError(f"premise {self.premise!r} has no {{part}} placeholder")
        return self


class Variant(EffectWording):
    """Wording used instead when the effect's parameters match ``when``.

    ``when`` maps a parameter to a list of values, ``"set"`` (present and not
    null) or ``"<1"`` (a number below 1).
    """

    when: dict[str, list[Any] | str]


class Effect(EffectWording):
    """An effect's wording and its parameter variants."""

    variants: list[Variant] = Field(default_factory=list)


class TypeSection(_Frozen):
    question: str
    question_source: str
    none: str
    none_source: str


class WhenSection(_Frozen):
    question: str
    question_source: str
    options: dict[str, str]
    options_source: str

    @model_validator(mode="after")
    def _keys(self) -> WhenSection:
        if list(self.options) != ["beginning", "middle", "end", "nowhere"]:
            raise ValueError("when.options must be beginning, middle, end, nowhere (in that order)")
        return self


class LeadingSection(_Frozen):
    durations: dict[str, str]
    durations_source: str
    original_part: str
    original_part_source: str
    parts: dict[str, str]
    parts_source: str

    @model_validator(mode="after")
    def _parts(self) -> LeadingSection:
        if set(self.parts) != {"beginning", "middle", "end"}:
            raise ValueError("leading.parts must name beginning, middle and end")
        if self.original_part not in self.parts:
            raise ValueError(f"leading.original_part {self.original_part!r} is not a part")
        if len(self.durations) < 2:
            raise ValueError("leading.durations needs at least two options")
        for key in self.durations:
            if not key.endswith("s"):
                raise ValueError(f"duration key {key!r} must be seconds ('1s')")
            float(key[:-1])
        return self


class Confusable(_Frozen):
    effects: list[str]
    why: str


class Templates(_Frozen):
    """The whole template file (see ``mmrobust/data/tasks/questions.json``)."""

    version: int
    about: str
    sources: dict[str, str]
    type: TypeSection
    when: WhenSection
    leading: LeadingSection
    effects: dict[str, Effect]
    confusable: list[Confusable]
    confusable_source: str
    digest: str = ""

    def wording(self, effect: str, params: Mapping[str, Any] | None = None) -> EffectWording:
        """The wording of ``effect`` at ``params`` (the first matching variant, else the base).

        An effect the file does not know gets a generic wording naming it.
        """
        entry = self.effects.get(effect)
        if entry is None:
            label = effect.replace("_", " ")
            return EffectWording(
                type=f"Some frames show tampering of another kind ({label})",
                premise=f"The frames {{part}} of this video show {label} tampering.",
                question=f"How long does the {label} part last?",
                reject=f"No frame in this video shows {label} tampering",
                source="generic wording: the effect is not in the template file",
            )
        for variant in entry.variants:
            if _matches(variant.when, params or {}):
                return EffectWording(**variant.model_dump(exclude={"when"}))
        return EffectWording(**entry.model_dump(exclude={"variants"}))

    def confusable_with(self, effect: str) -> set[str]:
        """Effects a ``leading`` question on a clip of ``effect`` must not presuppose."""
        out: set[str] = set()
        for group in self.confusable:
            if effect in group.effects:
                out |= set(group.effects) - {effect}
        return out


def _matches(when: Mapping[str, list[Any] | str], params: Mapping[str, Any]) -> bool:
    for name, rule in when.items():
        value = params.get(name)
        if rule == "set":
            ok = value is not None
        elif rule == "<1":
            ok = isinstance(value, (int, float)) and value < 1
        elif isinstance(rule, list):
            ok = value in rule
        else:
            raise ValueError(f"unknown variant rule {rule!r} for {name!r}")
        if not ok:
            return False
    return True


def parse_templates(data: bytes) -> Templates:
    """Validate template-file bytes; ``digest`` is their sha256 (a run-key part).

    Raises:
        ValueError: not valid JSON or not a valid template file (one line naming the field).
    """
    try:
        t = Templates.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"task templates: {where}: {first['msg']}") from None
    return t.model_copy(update={"digest": hashlib.sha256(data).hexdigest()[:16]})


@lru_cache(maxsize=1)
def load_templates() -> Templates:
    """The package's template file, validated (cached)."""
    package, path = TEMPLATES_RESOURCE
    data = resources.files(package).joinpath(path).read_bytes()
    return parse_templates(data)


__all__ = [
    "TEMPLATES_RESOURCE",
    "Effect",
    "EffectWording",
    "Templates",
    "load_templates",
    "parse_templates",
]
