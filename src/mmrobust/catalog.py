"""What exists: datasets, models, tamper effects, families, tasks, templates, references.

``mmrobust list [KIND] [--json]`` prints this (issue 30). Every list is built from
the registry the code itself uses, the same source its "unknown name ... Known: ..."
errors read, so the two cannot disagree:

- ``models``: :data:`mmrobust.models.spec.MODELS`, each backend's one declaration
  (``BackendSpec``): its ``:ARG``, placement, media kinds and ``--model-arg`` settings
  with type, default, bounds and help, read from its pydantic options model where it
  declares one (``openai``: ``OpenAIOptions``; help from the class docstring's
  ``Attributes:``), else from its ``settings`` (``tests/test_catalog.py`` checks each of
  those against its factory); :func:`backends_table` is the docs' table of them;
- ``effects``: :data:`mmrobust.tamper.effects.EFFECTS`, the parameters from each
  effect's pydantic fields (``-p EFFECT.KEY=VALUE``, help from its ``Args:``);
- ``families``: :data:`mmrobust.families.FAMILIES` with their data formats and card section;
- ``tasks``: :data:`mmrobust.tasks.derive.TASKS` with the question each asks
  (``data/tasks/questions.json``);
- ``templates``: :data:`mmrobust.prompts.TEMPLATES` with their question text;
- ``references``: :data:`mmrobust.official.TAMPER_REFERENCES` and ``MMR_REFERENCE``;
- ``datasets``: :data:`mmrobust.datasets.FORMATS` (the loaders), the built-in
  ``mmr-demo`` and the released hub sets (:data:`mmrobust.datasets.hub.RELEASES`).

Each entry is a plain JSON-ready dict: ``{"name", "summary", ...}`` plus the kind's
own keys (``options`` / ``params``: a list of ``mmrobust.settings_doc.Option`` dicts);
models, effects, families and data formats carry ``origin``: ``"built-in"`` or the plugin
they came from (:mod:`mmrobust.plugins`), shown in the text listing for plugins. Importing this
module imports no model library (torch stays unloaded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from mmrobust.plugins import BUILT_IN
from mmrobust.settings_doc import first_line, options_of

KINDS: tuple[str, ...] = (
    "datasets",
    "models",
    "effects",
    "families",
    "tasks",
    "templates",
    "references",
)
"""The kinds ``mmrobust list`` knows, in the order ``mmrobust list`` prints them."""


TEMPLATE_SOURCES: dict[str, str] = {
    "structured": "MVTamperBench section 4.1 / appendix A.2.2 (the benchmark prompt)",
    "generic": "MVTamperBench appendix A.2.2",
    "cot": "MVTamperBench appendix A.2.2 (chain of thought)",
    "mmr": "MMR (arXiv:2406.10638) evaluation instruction",
    "plain": "the question as given plus MMR's letter instruction",
}
"""Where each prompt template's wording comes from (see ``mmrobust.prompts``)."""


# ---------------------------------------------------------------------------- helpers


# ---------------------------------------------------------------------------- the kinds


def models() -> list[dict[str, Any]]:
    """Every backend of ``MODELS`` with its ``:ARG`` and ``--model-arg`` settings, read from
    its ``BackendSpec`` (the one declaration of a backend)."""
    from mmrobust.models.spec import MODELS

    out = []
    for name in MODELS.names():
        spec = MODELS.get(name)
        out.append(
            {
                "name": name,
                "summary": spec.doc,
                "spec": spec.spec_text,
                "arg": spec.arg,
                "placement": spec.placement,
                "media": list(spec.media),
                "options": [asdict(o) for o in spec.option_list()],
                "origin": MODELS.origin(name),
            }
        )
    return out


def backends_table(*, built_in_only: bool = False) -> str:
    """The Markdown table of every backend (``built_in_only``: mmrobust's own, as docs/models.md
    shows them; ``tests/test_catalog.py`` checks the two agree): spec, what it is, how it sends
    media, where it runs."""
    from mmrobust.models.spec import MODELS

    lines = ["| spec | what | media | runs on |", "|---|---|---|---|"]
    for name in MODELS.names():
        if built_in_only and MODELS.origin(name) != BUILT_IN:
            continue
        spec = MODELS.get(name)
        label = f"`{name}:<{spec.arg_name}>`" if spec.arg is not None else f"`{name}`"
        media = spec.media_doc or ", ".join(spec.media)
        lines.append(f"| {label} | {spec.doc} | {media} | {spec.placement} |")
    return "\n".join(lines)


def effects() -> list[dict[str, Any]]:
    """Every tamper effect of ``EFFECTS`` with its parameters (``-p EFFECT.KEY=VALUE``)."""
    from mmrobust.tamper.effects import EFFECTS, PAPER_EFFECTS

    out = []
    for name in EFFECTS.names():
        cls = EFFECTS.get(name)
        out.append(
            {
                "name": name,
                "summary": first_line(cls),
                "paper": name in PAPER_EFFECTS,
                "official_token": cls.official_token,
                "needs_donor": cls.needs_donor,
                "params": [asdict(o) for o in options_of(cls)],
                "origin": EFFECTS.origin(name),
                "media": "video",
            }
        )
    return out + perturb_effects()


def perturb_effects() -> list[dict[str, Any]]:
    """The image effects and the clip-only effects of ``mmrobust perturb``, with each one's
    parameter at severities 1-5 (docs/consistency.md)."""
    from mmrobust.perturb.image import IMAGE_EFFECTS
    from mmrobust.perturb.video import FRAME_RATE_DIVISOR, REVERSE_SHARE

    rows = [
        (e.name, f"image or clip frames (perturb): {e.doc}", e.parameter, e.table, "image")
        for e in IMAGE_EFFECTS.values()
    ]
    rows += [
        (
            "reverse",
            "video (perturb): reversed playback of a centred window (or the whole clip)",
            "share of the clip",
            REVERSE_SHARE,
            "video",
        ),
        (
            "frame_rate",
            "video (perturb): a lower frame rate, same duration",
            "frame-rate divisor",
            FRAME_RATE_DIVISOR,
            "video",
        ),
    ]
    return [
        {
            "name": name,
            "summary": summary,
            "paper": False,
            "official_token": None,
            "needs_donor": False,
            "params": [],
            "origin": BUILT_IN,
            "media": media,
            "severities": f"{parameter}: " + ", ".join(f"{v:g}" for v in table),
        }
        for name, summary, parameter, table, media in rows
    ]


def families() -> list[dict[str, Any]]:
    """Every benchmark family (``Sample.benchmark``), in report order, with its data formats."""
    from mmrobust.families import FAMILIES
    from mmrobust.families import families as all_families

    return [
        {
            "name": f.id,
            "summary": f.title,
            "paired": f.paired,
            "formats": sorted(f.loaders),
            "card": f.card.section if f.card is not None else None,
            "origin": FAMILIES.origin(f.id),
        }
        for f in all_families()
    ]


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
                "summary": first_line(FORMATS.get(name)),
                "kind": "format",
                "data": f"--format {name}",
                "origin": FORMATS.origin(name),
            }
        )
    return out


_BUILDERS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "datasets": datasets,
    "models": models,
    "effects": effects,
    "families": families,
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
            if r.get("origin") not in (None, BUILT_IN):
                extra += f"  [from {r['origin']}]"
            lines.append(f"  {label:<{width}}  {r['summary']}{extra}".rstrip())
            if r.get("arg"):
                lines.append(f"    :ARG  {r['arg']}")
            for o in r.get("options", []):
                lines.append(_option_line(o, "--model-arg "))
            for o in r.get("params", []):
                lines.append(_option_line(o, f"-p {r['name']}."))
            if r.get("severities"):
                lines.append(f"    severity 1-5: {r['severities']}")
            if r.get("aliases"):
                lines.append(f"    aliases: {', '.join(r['aliases'])}")
            if r.get("question"):
                lines.append(f"    asks: {r['question']}")
            if r.get("text"):
                lines.append("    text: " + r["text"].replace("\n", "\n          "))
    return "\n".join(lines)


__all__ = [
    "KINDS",
    "as_text",
    "backends_table",
    "catalog",
    "datasets",
    "effects",
    "families",
    "models",
    "references",
    "tasks",
    "templates",
]
