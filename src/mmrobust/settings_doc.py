"""How a setting is described to people: ``mmrobust list``, the docs' tables.

:class:`Option` is one setting of a backend (``--model-arg``) or a tamper effect (``-p``);
:func:`options_of` reads them from a pydantic settings model (type, default, bounds, and the
help text of the class docstring's ``Attributes:`` / ``Args:`` block, :func:`docstring_fields`).
A backend declares its settings once in its ``BackendSpec`` (``models.backend_spec``), an
effect in its pydantic fields; ``mmrobust.catalog`` lists both from here. Imports pydantic only.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo


@dataclass(frozen=True)
class Option:
    """One setting of a backend (``--model-arg``) or an effect (``-p``).

    Attributes:
        name: the key (``base_url``, ``degrees``).
        type: the value's type as text (``str``, ``int``, ``float | None``, ``bool``,
            ``JSON object``, ``path``); ``choices`` lists a closed set.
        default: the value used when the key is not given (JSON value; ``None``: unset).
        help: one or more sentences from the declaring code's docstring.
        choices: the allowed values, when the type is a closed set.
        bounds: numeric bounds as text (``>= 1``, ``> 0, <= 255``), when declared.
    """

    name: str
    type: str
    default: Any
    help: str = ""
    choices: list[Any] | None = None
    bounds: str | None = None


def docstring_fields(
    obj: object, sections: tuple[str, ...] = ("Attributes", "Args")
) -> dict[str, str]:
    """``{name: help}`` from the Google-style ``Attributes:`` / ``Args:`` block of ``obj``.

    ``a, b: text`` gives both names the text; continuation lines are joined.
    """
    doc = inspect.cleandoc(obj.__doc__ or "")
    out: dict[str, str] = {}
    in_section, indent = False, -1
    current: list[str] = []
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and stripped[:-1] in sections:
            in_section, current, indent = True, [], -1
            continue
        if not in_section or not stripped:
            continue
        lead = len(line) - len(line.lstrip())
        if indent < 0:
            indent = lead
        if lead < indent:  # the block ended (a new section or plain text)
            in_section = False
            continue
        m = re.match(r"([\w, ]+):\s*(.*)", stripped)
        if lead == indent and m:
            current = [n.strip() for n in m.group(1).split(",")]
            for name in current:
                out[name] = m.group(2)
        elif current:
            for name in current:
                out[name] = f"{out[name]} {stripped}".strip()
    return {k: re.sub(r"``([^`]*)``", r"\1", v) for k, v in out.items()}


def _type_text(annotation: Any) -> tuple[str, list[Any] | None]:
    """``(type text, choices)`` of a pydantic field annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return type(args[0]).__name__, list(args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_text(a) for a in args if a is not type(None)]
        choices = next((c for _, c in parts if c), None)
        text = " | ".join(t for t, _ in parts)
        return (f"{text} | None" if type(None) in args else text), choices
    name = getattr(annotation, "__name__", str(annotation))
    if "Json" in str(annotation):
        return "JSON object", None
    if name in ("Path", "PosixPath", "WindowsPath"):
        return "path", None
    if origin is tuple:
        return f"{len(args)} numbers x0,y0,x1,y1" if len(args) == 4 else "tuple", None
    return name, None


def _bounds(info: FieldInfo) -> str | None:
    marks = []
    for meta in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(meta, attr, None)
            if value is not None:
                marks.append(f"{sign} {value}")
    return ", ".join(marks) or None


def options_of(model: type[BaseModel], skip: tuple[str, ...] = ()) -> list[Option]:
    """The fields of a pydantic settings model as :class:`Option` values, in declared order."""
    helps = {k: v for base in reversed(model.__mro__) for k, v in docstring_fields(base).items()}
    out = []
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        type_text, choices = _type_text(info.annotation)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        if isinstance(default, tuple):
            default = list(default)
        elif default is not None and not isinstance(default, (str, int, float, bool, list)):
            default = str(default)
        out.append(Option(name, type_text, default, helps.get(name, ""), choices, _bounds(info)))
    return out


def first_line(obj: object) -> str:
    """The first paragraph of ``obj``'s docstring on one line, without reST markup."""
    first = inspect.cleandoc(obj.__doc__ or "").split("\n\n")[0].replace("\n", " ").strip()
    return re.sub(r"``([^`]*)``", r"\1", first)


__all__ = ["Option", "docstring_fields", "first_line", "options_of"]
