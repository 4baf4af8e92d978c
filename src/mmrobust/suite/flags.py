"""``mmrobust run``'s command line as a :class:`~mmrobust.suite.file.SuiteFile`.

The options of ``mmrobust run`` are the flags of :class:`SuiteFile`'s fields
(:func:`mmrobust.suite.file.flag_fields`) plus the few of :data:`ENTRY_FLAGS`, which fill
entries of ``models`` and ``data`` (``--media``, ``--model-args`` once per model,
``--model-card``) or the shared ``model_args``. :func:`suite_from_flags` lays the flags
given on the command line over a ``--config`` file: a flag given replaces its key (a
``--model`` / ``--data`` list replaces the file's list, keeping the file's settings of an
entry it names again); a key the command line does not give keeps the file's value, else
its default. Light: pydantic only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from mmrobust.suite.file import SuiteFile, SuiteFileError, flag_fields
from mmrobust.suite.load import error_line, load_suite_file

ENTRY_FLAGS: dict[str, dict[str, Any]] = {
    "media": {
        "flags": ["--media", "--images"],
        "key": "data[].media",
        "help": "Media folder per --data, same order ('-' for none); default none.",
    },
    "model_arg": {
        "flags": ["--model-arg"],
        "metavar": "KEY=VALUE",
        "key": "model_args",
        "help": "Backend setting, given to each model whose backend takes KEY (repeatable).",
    },
    "model_args": {
        "flags": ["--model-args", "--model_args"],
        "metavar": "K=V,K=V",
        "key": "model_args / models[].args",
        "help": "Backend settings in lm-eval's comma form: once for every model, or once per "
        "--model in the same order (models on different servers).",
    },
    "model_card": {
        "flags": ["--model-card"],
        "metavar": "[SPEC=]REPO_ID",
        "key": "models[].card",
        "help": "With --push-to-hub: open a pull request adding the model's scores to the "
        "model-index of this hub model's card (SPEC= names the model; repeatable).",
    },
}
"""Flags that fill entries of ``models`` / ``data`` or the shared ``model_args`` (``key``:
where they go in the file)."""


def _merge(base: list[dict[str, Any]], names: list[str], key: str) -> list[dict[str, Any]]:
    """Entries for ``names`` (``spec`` or ``path`` values), each keeping the settings the
    file gave an entry of the same name."""
    known = {entry[key]: entry for entry in base}
    return [dict(known.get(name, {key: name})) for name in names]


def _card_pairs(values: list[str], specs: list[str]) -> dict[str, str]:
    """``--model-card`` values as spec -> repo id (:func:`mmrobust.report.hub_push.card_pairs`).

    Raises:
        SuiteFileError: a bare repo id with several models, or a SPEC not in the suite.
    """
    from mmrobust.report.hub_push import card_pairs

    try:
        cards = card_pairs(values, specs)
    except ValueError as exc:
        raise SuiteFileError(str(exc)) from None
    for spec in cards:
        if spec not in specs:
            raise SuiteFileError(f"--model-card: {spec!r} is not a --model of the suite")
    return cards


def suite_from_flags(values: Mapping[str, Any], given: Collection[str]) -> SuiteFile:
    """The suite a command line describes: ``values`` (parameter name -> value, as typer
    passes them), ``given`` (the names given on the command line, not defaulted), over
    ``values["config"]`` when one is named.

    Raises:
        SuiteFileError: a bad file; a bad value (one line naming the key).
        ValueError: a bad ``--model-arg`` / ``--model-args`` (as
            :func:`mmrobust.models.spec.parse_model_args`), a ``--media`` list of another
            length than the datasets.
    """
    from mmrobust.models.spec import parse_model_args

    config = values.get("config")
    base = load_suite_file(config) if config else None
    raw: dict[str, Any] = base.model_dump(mode="json") if base is not None else {}
    for name in flag_fields():
        if name in given and name not in ("models", "data"):
            raw[name] = values[name]
    if "models" in given:
        raw["models"] = _merge(raw.get("models", []), list(values["models"]), "spec")
    if "data" in given:
        raw["data"] = _merge(raw.get("data", []), list(values["data"]), "path")
    models: list[dict[str, Any]] = [
        {"spec": m} if isinstance(m, str) else dict(m) for m in raw.get("models", [])
    ]
    data: list[dict[str, Any]] = [
        {"path": d} if isinstance(d, str) else dict(d) for d in raw.get("data", [])
    ]
    media = list(values.get("media") or [])
    if media:
        if len(media) != len(data):
            raise ValueError(
                f"--media is given {len(media)} times for {len(data)} --data; give one per "
                "--data in the same order ('-' for none), or none"
            )
        for entry, folder in zip(data, media, strict=True):
            entry["media"] = None if folder in ("-", "") else folder
    per_model = list(values.get("model_args") or [])
    shared_args = list(values.get("model_arg") or [])
    if len(models) > 1 and 1 < len(per_model) != len(models):
        raise ValueError(
            f"--model-args is given {len(per_model)} times for {len(models)} --model: give "
            "it once (every model) or once per --model, in the same order"
        )
    if len(models) > 1 and len(per_model) == len(models):
        for spec in {m["spec"] for m in models}:
            given = {a for m, a in zip(models, per_model, strict=True) if m["spec"] == spec}
            if len(given) > 1:
                raise ValueError(
                    f"--model {spec} is given twice with different --model-args; give each "
                    "model once"
                )
        for entry, text in zip(models, per_model, strict=True):
            entry["args"] = {**(entry.get("args") or {}), **parse_model_args([], [text])}
        per_model = []
    if shared_args or per_model:
        raw["model_args"] = {**(raw.get("model_args") or {}),
                             **parse_model_args(shared_args, per_model)}  # fmt: skip
    cards = _card_pairs(list(values.get("model_card") or []), [m["spec"] for m in models])
    for entry in models:
        if entry["spec"] in cards:
            entry["card"] = cards[entry["spec"]]
    raw["models"], raw["data"] = models, data
    from pydantic import ValidationError

    try:
        return SuiteFile.model_validate(raw)
    except ValidationError as exc:
        raise SuiteFileError(error_line(config or "command line", None, exc)) from None


__all__ = ["ENTRY_FLAGS", "suite_from_flags"]
