"""The ``model-index`` block of a Hugging Face model card, from robustness cards.

:func:`model_index` turns the runs of a suite folder (``suite.json``) or one run folder into
one ``model-index`` per model (the key of its robustness card, :func:`card_key`): one
result per run, each a task, a dataset and its metrics, in the schema the hub reads from a
model card's YAML header (hub-docs ``modelcard.md``; ``huggingface_hub``'s ``EvalResult``):

* ``task``: ``type`` (a hub task id: ``video-text-to-text`` for the tamper clips,
  ``visual-question-answering`` for MMR's images) and ``name`` (the family's title and task);
* ``dataset``: ``type`` (the hub dataset id the data came from, else the dataset's name),
  ``name``, ``config`` (the card section: ``detect``, ``type``, ``when``, ``leading``,
  ``mmr``), ``split`` (``test``), ``revision`` (the hub commit, else ``sha256:`` and the
  data hash ``run.json`` records) and ``args`` (``limit`` when the run was cut short);
* ``metrics``: ``type``, ``value`` (percent, the card's own numbers: computed by
  :func:`mmrobust.report.card.card_data` and its rounding), ``name``, ``config`` (the mode:
  ``official`` or ``default``) and ``args`` (``mmrobust_version`` that produced the run).

Detection runs give the F1 macro over the tamper types (Overall) and the F1 of each type;
``type`` / ``when`` accuracy and macro-F1; ``leading`` and MMR runs RA and MR; a family with
its own card section (``CardSection``: ``consistency``) each row's score columns (accuracy
drop, flip, resist and attack success rates per effect and ``all``). A score that
is undefined (an F1 of 0/0) is left out, never written as 0. :func:`check_model_index`
checks a block against the documented fields (required keys, types, no unknown key).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MODEL_INDEX = "model-index"
"""``mmrobust export --format`` value, and the card's YAML key."""

SPLIT = "test"
"""Every benchmark mmrobust runs is scored as a test set."""

TASK_TYPES = {
    "detection": "video-text-to-text",
    "type": "video-text-to-text",
    "when": "video-text-to-text",
    "leading": "video-text-to-text",
    "mmr": "visual-question-answering",
}
"""Card section -> hub task id (huggingface.co/tasks)."""

CONFIGS = {"detection": "detect"}
"""Card section -> ``dataset.config`` where they differ (the ``--task`` name)."""


def run_folders(target: str | Path) -> list[Path]:
    """The run folders of a suite folder (its ``suite.json``, runs that wrote ``run.json``)
    or of one run folder.

    Raises:
        FileNotFoundError: neither a suite folder nor a run folder, or a suite with no run.
    """
    import json

    from mmrobust.run.folder import RUN_FILE

    folder = Path(target)
    suite = folder / "suite.json"
    if (folder / RUN_FILE).is_file():
        return [folder]
    if suite.is_file():
        try:
            runs = json.loads(suite.read_text(encoding="utf-8")).get("runs") or []
        except (OSError, ValueError) as exc:
            raise FileNotFoundError(f"{suite}: not a suite.json: {exc}") from None
        dirs = [folder / r["run_dir"] for r in runs if isinstance(r, dict) and r.get("run_dir")]
        found = [d for d in dirs if (d / RUN_FILE).is_file()]
        if not found:
            raise FileNotFoundError(f"{folder}: the suite has no finished run folder")
        return found
    raise FileNotFoundError(
        f"{folder}: not a suite folder (suite.json) or a run folder ({RUN_FILE})"
    )


def _dataset(run: Any, section: str) -> dict[str, Any]:
    """The ``dataset`` block of one run (see the module docstring)."""
    ds = run.info.get("dataset") or {}
    hub: Mapping[str, Any] = ds["hub"] if isinstance(ds.get("hub"), Mapping) else {}
    repo = hub.get("repo_id")
    revision = hub.get("commit") or hub.get("revision")
    if not revision and ds.get("data_hash"):
        revision = f"sha256:{ds['data_hash']}"
    block: dict[str, Any] = {
        "name": run.dataset_name,
        "type": str(repo or run.dataset),
        "config": CONFIGS.get(section, section),
        "split": SPLIT,
    }
    if revision:
        block["revision"] = str(revision)
    limit = (run.info.get("config") or {}).get("limit")
    if limit is not None:
        block["args"] = {"limit": int(limit)}
    return block


def _metric(kind: str, value: Any, name: str, mode: str, version: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, bool) or not math.isfinite(float(value)):
        return None
    return {"type": kind, "value": value, "name": name, "config": mode,
            "args": {"mmrobust_version": version}}  # fmt: skip


def _mode(run: Any) -> tuple[str, str]:
    """``(mode, mmrobust version)`` of a run: ``official`` or ``default``."""
    config = run.info.get("config") or {}
    mode = "official" if config.get("official") else "default"
    return mode, str(run.info.get("mmrobust_version") or "unknown")


def _metrics(run: Any, section: str, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The metrics of one card entry of a built-in section (and, for detection, the F1 of
    each tamper type)."""
    from mmrobust.report.card import _pc

    mode, version = _mode(run)
    pairs: list[tuple[str, Any, str]] = []
    if section == "detection":
        pairs.append(("f1", entry.get("f1"), "F1, macro over tamper types (%)"))
        per_type = run.metrics.get("f1") or {}
        for t, v in per_type.items():
            if t != "overall":
                pairs.append(("f1", _pc(v), f"F1 {t} (%)"))
    elif section in ("type", "when"):
        pairs += [("accuracy", entry.get("accuracy"), f"Accuracy, {section} (%)"),
                  ("f1", entry.get("macro_f1"), f"Macro-F1, {section} (%)")]  # fmt: skip
    else:
        pairs += [("robust_accuracy", entry.get("RA"), "RA, robust accuracy (%)"),
                  ("misleading_rate", entry.get("MR"), "MR, misleading rate (%)")]  # fmt: skip
    out = [_metric(kind, v, name, mode, version) for kind, v, name in pairs]
    return [m for m in out if m is not None]


def _own_metrics(run: Any, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The metrics of a family's own card section (``CardSection``: ``consistency``): each
    row's score columns (percent, a float; counts such as ``pairs`` are not scores), named
    by the column's heading and the row's first column (``flip rate, all (%)``)."""
    card = run.family.card
    columns = list(card.columns) if card is not None else []
    if not columns:
        return []
    (label_key, _), scores = columns[0], columns[1:]
    mode, version = _mode(run)
    out: list[dict[str, Any]] = []
    for row in rows:
        for key, heading in scores:
            value = row.get(key)
            if isinstance(value, float):
                name = f"{heading}, {row.get(label_key)} (%)"
                metric = _metric(key, value, name, mode, version)
                if metric is not None:
                    out.append(metric)
    return out


def _task_type(run: Any, section: str) -> str:
    """The hub task id of a run's section (a family's own: by its media word)."""
    if section in TASK_TYPES:
        return TASK_TYPES[section]
    word = str(getattr(run.family, "media_word", "") or "")
    return "video-text-to-text" if word in ("clips", "videos") else "visual-question-answering"


def model_index(
    target: str | Path | Sequence[str | Path], *, source: Mapping[str, str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Card key (model spec) -> its ``model-index`` (a list of one ``{name, results}``).

    Args:
        target: a suite folder, a run folder, or several of them.
        source: ``{"name", "url"}`` of where the results are published (the hub dataset of
            ``--push-to-hub``), added to every result; ``None``: none.

    Raises:
        FileNotFoundError: as :func:`run_folders`; ValueError: an unreadable run folder.
    """
    import tempfile

    from mmrobust.report.card import card_data, card_key, card_section
    from mmrobust.report.view import load_run

    targets = [target] if isinstance(target, str | Path) else list(target)
    runs = [load_run(d) for t in targets for d in run_folders(t)]
    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as scratch:  # card_data's run_dir paths: unused here
        for run in runs:
            section = card_section(run)
            if section is None:
                continue
            key = card_key(run)
            rows = card_data(key, [run], Path(scratch)).get(section) or []
            if not rows:
                continue
            if section in TASK_TYPES:  # built-in: the run's first row (detection: "all")
                metrics = _metrics(run, section, rows[0])
            else:
                metrics = _own_metrics(run, rows)
            if not metrics:
                continue
            result: dict[str, Any] = {
                "task": {"type": _task_type(run, section), "name": _task_name(run, section)},
                "dataset": _dataset(run, section),
                "metrics": metrics,
            }
            if source:
                result["source"] = {"name": source["name"], "url": source["url"]}
            block = out.setdefault(key, [{"name": key, "results": []}])
            block[0]["results"].append(result)
    return out


def _task_name(run: Any, section: str) -> str:
    title = str(run.family.title)
    return title if section in ("detection", "mmr") or section in title else f"{title} ({section})"


_TOP = {"name", "results"}
_RESULT = {"task", "dataset", "metrics", "source"}
_TASK = {"type", "name"}
_DATASET = {"type", "name", "config", "split", "revision", "args"}
_METRIC = {"type", "value", "name", "config", "args", "verified", "verifyToken"}
_SOURCE = {"name", "url"}


def _keys(obj: Any, where: str, allowed: set[str], required: Sequence[str]) -> list[str]:
    if not isinstance(obj, Mapping):
        return [f"{where}: not a mapping"]
    problems = [f"{where}: unknown key {k!r}" for k in obj if k not in allowed]
    problems += [f"{where}: missing {k!r}" for k in required if k not in obj]
    for k in allowed & set(obj):
        v = obj[k]
        if k in ("args",):
            if not isinstance(v, Mapping):
                problems.append(f"{where}.{k}: not a mapping")
        elif k == "verified":
            if not isinstance(v, bool):
                problems.append(f"{where}.{k}: not true/false")
        elif k == "value":
            number = isinstance(v, int | float) and not isinstance(v, bool)
            if not (isinstance(v, str) or (number and math.isfinite(v))):
                problems.append(f"{where}.value: not a finite number or text")
        elif k not in ("metrics", "results", "task", "dataset", "source") and not (
            isinstance(v, str) and v
        ):
            problems.append(f"{where}.{k}: not a non-empty string")
    return problems


def check_model_index(index: Any) -> list[str]:
    """Problems of a ``model-index`` list against the hub's documented fields (hub-docs
    ``modelcard.md``, ``huggingface_hub.EvalResult``): each entry ``name`` and ``results``;
    each result ``task.type``, ``dataset.type``, ``dataset.name`` and at least one metric
    with ``type`` and ``value``; optional fields of the right type; no undocumented key.
    Empty: valid."""
    if not isinstance(index, list) or not index:
        return ["model-index: not a non-empty list"]
    problems: list[str] = []
    for i, entry in enumerate(index):
        where = f"model-index[{i}]"
        problems += _keys(entry, where, _TOP, ("name", "results"))
        results = entry.get("results") if isinstance(entry, Mapping) else None
        if not isinstance(results, list) or not results:
            problems.append(f"{where}.results: not a non-empty list")
            continue
        for j, result in enumerate(results):
            at = f"{where}.results[{j}]"
            problems += _keys(result, at, _RESULT, ("task", "dataset", "metrics"))
            if not isinstance(result, Mapping):
                continue
            problems += _keys(result.get("task"), f"{at}.task", _TASK, ("type",))
            problems += _keys(result.get("dataset"), f"{at}.dataset", _DATASET, ("type", "name"))
            if "source" in result:
                problems += _keys(result["source"], f"{at}.source", _SOURCE, ("url",))
            metrics = result.get("metrics")
            if not isinstance(metrics, list) or not metrics:
                problems.append(f"{at}.metrics: not a non-empty list")
                continue
            for k, metric in enumerate(metrics):
                problems += _keys(metric, f"{at}.metrics[{k}]", _METRIC, ("type", "value"))
    return problems


def render_model_index(index: list[dict[str, Any]]) -> str:
    """``model-index:`` and the block as YAML: the card header's lines (without the ``---``)."""
    import yaml

    return yaml.safe_dump({MODEL_INDEX: index}, sort_keys=False, allow_unicode=True, width=100)


def write_model_index(
    target: str | Path, out: str | Path | None = None, *, force: bool = False
) -> list[Path]:
    """Write the ``model-index`` of each model of ``target`` (a suite or run folder).

    ``out``: ``None`` or ``-``: standard output (one YAML document per model, ``---``
    between); ``DIR/`` (or an existing folder): ``DIR/<model>.yaml`` per model (names from
    :func:`mmrobust.safenames.folder_names`); a file: the one model's block. Files are
    written whole (:func:`mmrobust.atomicfile.atomic_write`: never half a file, never through
    a link's target); an existing file is replaced only with ``force``.

    Returns:
        The files written (none for standard output).

    Raises:
        FileNotFoundError: as :func:`run_folders`.
        ValueError: no run of ``target`` is on a card; a file ``out`` for several models; an
            existing file without ``force``; a block that fails :func:`check_model_index`.
        OSError: a file cannot be written (nothing is left at its place).
    """
    import sys

    from mmrobust.atomicfile import atomic_write
    from mmrobust.safenames import folder_names

    blocks = model_index(target)
    if not blocks:
        raise ValueError(f"{target}: no run of it is on a robustness card (nothing to export)")
    for key, block in blocks.items():
        if problems := check_model_index(block):
            raise ValueError(f"model-index of {key} does not validate: {problems[0]}")
    texts = {key: render_model_index(block) for key, block in blocks.items()}
    if out is None or str(out) == "-":
        docs = [f"# {key}\n{text}" for key, text in texts.items()]
        sys.stdout.write("---\n".join(docs))
        return []
    target_dir = str(out).endswith(("/", "\\")) or Path(out).is_dir()
    if not target_dir and len(texts) > 1:
        raise ValueError(
            f"--out {out}: {len(texts)} models have a model-index; give a folder (--out DIR/)"
        )
    names = folder_names(list(texts))
    paths = {k: (Path(out) / f"{names[k]}.yaml" if target_dir else Path(out)) for k in texts}
    for path in paths.values():
        if (path.is_symlink() or path.exists()) and not force:
            raise ValueError(f"{path} exists; --force replaces it")
    if target_dir:
        Path(out).mkdir(parents=True, exist_ok=True)
    for key, path in paths.items():
        with atomic_write(path) as f:
            f.write(texts[key])
    return list(paths.values())


__all__ = [
    "MODEL_INDEX",
    "TASK_TYPES",
    "check_model_index",
    "model_index",
    "render_model_index",
    "run_folders",
    "write_model_index",
]
