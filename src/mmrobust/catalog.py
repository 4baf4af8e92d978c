"""What exists: datasets, models, tamper effects, tasks, prompt templates, reference versions.

``mmrobust list [KIND] [--json]`` prints this (issue 30). Every list is built from
the registry the code itself uses, the same source its "unknown name ... Known: ..."
errors read, so the two cannot disagree:

- ``models``: :data:`mmrobust.models.spec.MODELS`; each backend's ``--model-arg``
  settings with type, default, bounds and help, read from its pydantic options
  model where the backend declares one (``openai``: ``OpenAIOptions``, ``hf``:
  ``HFOptions``; help from the class docstring's ``Attributes:``), else from the
  table :data:`PLAIN_BACKEND_OPTIONS` below (``tests/test_catalog.py`` checks each of
  those against its factory);
- ``effects``: :data:`mmrobust.tamper.effects.EFFECTS`, the parameters from each
  effect's pydantic fields (``-p EFFECT.KEY=VALUE``, help from its ``Args:``);
- ``tasks``: :data:`mmrobust.tasks.derive.TASKS` with the question each asks
  (``data/tasks/questions.json``);
- ``templates``: :data:`mmrobust.prompts.TEMPLATES` with their question text;
- ``references``: :data:`mmrobust.official.TAMPER_REFERENCES` and ``MMR_REFERENCE``;
- ``datasets``: :data:`mmrobust.datasets.FORMATS` (the loaders), the built-in
  ``mmr-demo`` and the released hub sets (:data:`mmrobust.datasets.hub.RELEASES`).

Each entry is a plain JSON-ready dict: ``{"name", "summary", ...}`` plus the kind's
own keys (``options`` / ``params``: a list of :class:`Option` dicts). Importing this
module imports no model library (torch stays unloaded).
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

KINDS: tuple[str, ...] = ("datasets", "models", "effects", "tasks", "templates", "references")
"""The kinds ``mmrobust list`` knows, in the order ``mmrobust list`` prints them."""


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


PLAIN_BACKEND_OPTIONS: dict[str, list[Option]] = {
    "constant": [
        Option(
            "media",
            "str",
            "none",
            "what the runner prepares: none, decoded frames "
            "(e.g. to measure window coverage) or the file path",
            ["none", "frames", "path"],
        ),
        Option(
            "delay_s", "float", 0.0, "seconds to sleep per request (resume and concurrency tests)"
        ),
    ],
    "forensic": [
        Option(
            "prior",
            "str",
            "none",
            "location prior: none (pixels only) or middle "
            "(favour a window in the middle of the clip; docs/forensic.md)",
            ["none", "middle"],
        ),
    ],
    "blind-overlap": [],
    "blind-embed": [
        Option("device", "str", "cpu", "torch device of the sentence embedder"),
        Option("batch_size", "int", 64, "texts embedded per batch"),
    ],
}
"""``--model-arg`` settings of the backends that parse their few settings by hand
(``models/baselines.py``, ``models/forensic``, ``models/blind.py``); ``random`` takes the
same as ``constant``."""
PLAIN_BACKEND_OPTIONS["random"] = PLAIN_BACKEND_OPTIONS["constant"]

OPTION_MODELS: dict[str, str] = {
    "openai": "mmrobust.models.openai_compat:OpenAIOptions",
    "anthropic": "mmrobust.models.anthropic:AnthropicOptions",
    "gemini": "mmrobust.models.gemini:GeminiOptions",
    "hf": "mmrobust.models.hf:HFOptions",
}
"""Backends whose settings are a pydantic options model (``module:class``)."""

MODEL_ARGS: dict[str, str] = {
    "constant": "the answer: a letter (A) or an option key (none, middle, reject)",
    "random": "optional seed (default 0)",
    "openai": "the served model name (required)",
    "anthropic": "the Claude model name (required)",
    "gemini": "the Gemini model name (required), e.g. gemini-2.5-flash",
    "hf": "a hub id or a local checkpoint folder (required)",
}
"""What the ``:ARG`` after each backend's name means (none for the others)."""

TEMPLATE_SOURCES: dict[str, str] = {
    "structured": "MVTamperBench section 4.1 / appendix A.2.2 (the benchmark prompt)",
    "generic": "MVTamperBench appendix A.2.2",
    "cot": "MVTamperBench appendix A.2.2 (chain of thought)",
    "mmr": "MMR (arXiv:2406.10638) evaluation instruction",
    "plain": "the question as given plus MMR's letter instruction",
}
"""Where each prompt template's wording comes from (see ``mmrobust.prompts``)."""


# ---------------------------------------------------------------------------- helpers


def _load(path: str) -> Any:
    """The object a ``"module:attr"`` path names (imported on first use)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


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


def _first_line(obj: object) -> str:
    """The first paragraph of ``obj``'s docstring on one line, without reST markup."""
    first = inspect.cleandoc(obj.__doc__ or "").split("\n\n")[0].replace("\n", " ").strip()
    return re.sub(r"``([^`]*)``", r"\1", first)


# ---------------------------------------------------------------------------- the kinds


def models() -> list[dict[str, Any]]:
    """Every backend of ``MODELS`` with its ``:ARG`` and ``--model-arg`` settings."""
    from mmrobust.models.spec import MODELS

    out = []
    for name in MODELS.names():
        if name in OPTION_MODELS:
            options = options_of(_load(OPTION_MODELS[name]))
        else:
            options = PLAIN_BACKEND_OPTIONS.get(name, [])
        summary = _MODEL_SUMMARIES.get(name, "")
        out.append(
            {
                "name": name,
                "summary": summary,
                "spec": f"{name}:ARG" if name in MODEL_ARGS else name,
                "arg": MODEL_ARGS.get(name),
                "options": [asdict(o) for o in options],
            }
        )
    return out


_MODEL_SUMMARIES = {
    "constant": "always the same answer (constant:A is 'Yes' to every tamper question)",
    "random": "a uniform random letter, deterministic per sample and seed",
    "forensic": "the pixel-only classical tamper detector (docs/forensic.md)",
    "blind-overlap": "text-only word-overlap baseline (MMR no-image floor)",
    "blind-embed": "text-only sentence-embedding baseline (needs sentence-transformers)",
    "openai": "any OpenAI-compatible server (vLLM, SGLang, OpenAI); docs/models.md",
    "anthropic": "Anthropic's Messages API (ANTHROPIC_API_KEY); docs/models.md",
    "gemini": "Google's Gemini API (GEMINI_API_KEY or GOOGLE_API_KEY); docs/models.md",
    "hf": "a transformers checkpoint run in this process (pip install -e '.[hf]')",
}


def effects() -> list[dict[str, Any]]:
    """Every tamper effect of ``EFFECTS`` with its parameters (``-p EFFECT.KEY=VALUE``)."""
    from mmrobust.tamper.effects import EFFECTS, PAPER_EFFECTS

    out = []
    for name in EFFECTS.names():
        cls = EFFECTS.get(name)
        out.append(
            {
                "name": name,
                "summary": _first_line(cls),
                "paper": name in PAPER_EFFECTS,
                "official_token": cls.official_token,
                "needs_donor": cls.needs_donor,
                "params": [asdict(o) for o in options_of(cls)],
            }
        )
    return out


def tasks() -> list[dict[str, Any]]:
    """The ``--task`` values, their metric family and the question each asks."""
    from mmrobust.prompts import STRUCTURED_QUESTION
    from mmrobust.tasks.derive import TASK_BENCHMARK, TASKS
    from mmrobust.tasks.templates import load_templates

    wording = load_templates()
    questions = {
        "detect": STRUCTURED_QUESTION,
        "type": wording.type.question,
        "when": wording.when.question,
        "leading": "a false premise about an effect the clip does not have, then a question "
        "about a detail of it (MMR's paired method); e.g. "
        + wording.effects["rotation"].premise.format(part="in the middle"),
    }
    summaries = {
        "detect": "the paper's yes/no question (MVTamperBench section 4.1); F1 per type",
        "type": "which tampering, if any (multiple choice); accuracy, balanced accuracy, macro-F1",
        "when": "where in the video (beginning / middle / end / nowhere)",
        "leading": "whether the model accepts a false premise; RA and MR (MMR eqs. 1-2)",
    }
    return [
        {
            "name": t,
            "summary": summaries.get(t, ""),
            "benchmark": TASK_BENCHMARK[t],
            "question": questions.get(t, ""),
            "default": t == TASKS[0],
        }
        for t in TASKS
    ]


def templates() -> list[dict[str, Any]]:
    """The ``--prompt`` templates with their question text or instruction."""
    from mmrobust.prompts import ANSWER_INSTRUCTION, MMR_INSTRUCTION, TAMPER_QUESTIONS, TEMPLATES

    text = {**TAMPER_QUESTIONS, "mmr": MMR_INSTRUCTION, "plain": ANSWER_INSTRUCTION}
    return [
        {"name": t, "summary": TEMPLATE_SOURCES.get(t, ""), "text": text.get(t, "")}
        for t in TEMPLATES
    ]


def references() -> list[dict[str, Any]]:
    """The reference versions ``--official`` reproduces (``--reference``), per benchmark."""
    from mmrobust.official import (
        DEFAULT_TAMPER_REFERENCE,
        MMR_REFERENCE,
        TAMPER_REFERENCES,
        VLMEVALKIT_REPO,
    )

    out: list[dict[str, Any]] = [
        {
            "name": ref.name,
            "summary": ref.description,
            "benchmark": "tamper",
            "repo": VLMEVALKIT_REPO,
            "commit": ref.commit,
            "date": ref.date,
            "aliases": list(ref.aliases),
            "default": ref.name == DEFAULT_TAMPER_REFERENCE,
        }
        for ref in TAMPER_REFERENCES.values()
    ]
    out.append(
        {
            "name": MMR_REFERENCE["name"],
            "summary": MMR_REFERENCE["description"],
            "benchmark": "mmr",
            "repo": MMR_REFERENCE["repo"],
            "commit": MMR_REFERENCE["commit"],
            "date": MMR_REFERENCE["date"],
            "aliases": [],
            "default": True,
        }
    )
    return out


def datasets() -> list[dict[str, Any]]:
    """The ``--data`` forms: built-in sets, released hub sets, and the formats (``--format``)."""
    from mmrobust.datasets import FORMATS
    from mmrobust.datasets.hub import RELEASES
    from mmrobust.datasets.mmr import DEMO_NAME

    out: list[dict[str, Any]] = [
        {
            "name": DEMO_NAME,
            "summary": "built-in MMR demo: 24 pairs over photos that ship inside scikit-image",
            "kind": "built-in",
            "data": DEMO_NAME,
        }
    ]
    for short, repo in RELEASES.items():
        out.append(
            {
                "name": short,
                "summary": f"released MVTamperBench variant on the Hugging Face hub ({repo}; gated)",
                "kind": "hub",
                "data": f"hf:{short}",
                "repo": repo,
            }
        )
    for name in FORMATS.names():
        out.append(
            {
                "name": name,
                "summary": _first_line(FORMATS.get(name)),
                "kind": "format",
                "data": f"--format {name}",
            }
        )
    return out


_BUILDERS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "datasets": datasets,
    "models": models,
    "effects": effects,
    "tasks": tasks,
    "templates": templates,
    "references": references,
}


def catalog(kind: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{kind: entries}`` for one kind, or every kind when ``kind`` is ``None``.

    Raises:
        UnknownNameError: ``kind`` is not one of :data:`KINDS` (with "did you mean").
    """
    from mmrobust.registry import Registry

    kinds: Registry[Callable[[], list[dict[str, Any]]]] = Registry("list kind")
    for name, build in _BUILDERS.items():
        kinds.register(name, build)
    names = KINDS if kind is None else (kind,)
    return {name: kinds.get(name)() for name in names}


def _option_line(o: dict[str, Any], flag: str) -> str:
    """``    --model-arg KEY=<type> (default D; bounds): help`` for one setting."""
    value = "|".join(str(c) for c in o["choices"]) if o["choices"] else o["type"]
    extra = [f"default {o['default']}" if o["default"] is not None else "default unset"]
    if o["bounds"]:
        extra.append(o["bounds"])
    help_text = f": {o['help']}" if o["help"] else ""
    return f"    {flag}{o['name']}=<{value}> ({'; '.join(extra)}){help_text}"


def as_text(entries: dict[str, list[dict[str, Any]]]) -> str:
    """Plain-text listing of :func:`catalog` output (one line per entry, settings indented)."""
    lines: list[str] = []
    for kind, rows in entries.items():
        if lines:
            lines.append("")
        lines.append(f"{kind}:")
        width = max((len(r["name"]) for r in rows), default=0)
        for r in rows:
            label = r.get("spec", r["name"])
            extra = ""
            if kind == "datasets":
                extra = f"  [--data {r['data']}]" if r["kind"] != "format" else f"  [{r['data']}]"
            if r.get("default"):
                extra += "  (default)"
            lines.append(f"  {label:<{width}}  {r['summary']}{extra}".rstrip())
            if r.get("arg"):
                lines.append(f"    :ARG  {r['arg']}")
            for o in r.get("options", []):
                lines.append(_option_line(o, "--model-arg "))
            for o in r.get("params", []):
                lines.append(_option_line(o, f"-p {r['name']}."))
            if r.get("aliases"):
                lines.append(f"    aliases: {', '.join(r['aliases'])}")
            if r.get("question"):
                lines.append(f"    asks: {r['question']}")
            if r.get("text"):
                lines.append("    text: " + r["text"].replace("\n", "\n          "))
    return "\n".join(lines)


__all__ = [
    "KINDS",
    "OPTION_MODELS",
    "PLAIN_BACKEND_OPTIONS",
    "Option",
    "as_text",
    "catalog",
    "datasets",
    "docstring_fields",
    "effects",
    "models",
    "options_of",
    "references",
    "tasks",
    "templates",
]
