"""What ``mmrobust run`` takes: :class:`SuiteConfig` (models x datasets x tasks, shared options).

Each run's :class:`EvalConfig` differs from the suite's shared options only in ``model``,
``data``, ``task``, ``out`` and the model's own backend settings (:meth:`SuiteConfig.args_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mmrobust.redact import redact
from mmrobust.run.config import EvalConfig


@dataclass
class SuiteConfig:
    """Everything ``mmrobust run`` takes.

    Attributes:
        models: model specs (``constant:A``, ``openai:<m>``, ``hf:<id>``), each run on every
            dataset.
        data: datasets (anything ``eval --data`` takes).
        tasks: task names (:func:`parse_tasks`).
        out: the suite folder.
        media: per dataset (same order as ``data``) its ``--media`` folder or ``None``;
            empty: none for any.
        options: every other :class:`EvalConfig` field, shared by all runs (``limit``,
            ``seed``, ``model_args``, ``frames`` ...).
        report: write ``OUT/report`` at the end.
        log_samples: write each run folder's ``samples.jsonl`` (:mod:`mmrobust.export`).
        model_args: per model spec, backend settings added to ``options["model_args"]`` (which
            every model gets): models served by different servers.
        title: the report's title.
        file: the suite file this config came from (``SuiteFile.record`` of its scrubbed
            copy: no credential), stored in ``suite.json`` and shown in the report; ``None``
            for a config built in code.
    """

    models: list[str]
    data: list[str]
    tasks: list[str]
    out: str
    media: list[str | None] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    report: bool = True
    title: str = "mmrobust report"
    log_samples: bool = False
    model_args: dict[str, dict[str, str]] = field(default_factory=dict)
    file: dict[str, Any] | None = None

    def validate(self) -> None:
        """Check the lists and every shared option before any work.

        Raises:
            ValueError: no model, no dataset, a ``media`` list of another length than
                ``data``, an option :class:`EvalConfig` does not have, or a bad option
                (:meth:`EvalConfig.validate`).
            UnknownNameError: an unknown model backend, task or reference.
            ValueError: a spec or setting the backend refuses, where that is known without
                loading a model (``random:abc``; :func:`mmrobust.models.spec.driver_model`).
        """
        from mmrobust.demo import check_models

        if not self.models:
            raise ValueError("no --model given")
        if not self.data:
            raise ValueError("no --data given")
        if self.media and len(self.media) != len(self.data):
            raise ValueError(
                f"--media is given {len(self.media)} times for {len(self.data)} --data; give "
                "one per --data in the same order ('-' for none), or none"
            )
        known = {f.name for f in fields(EvalConfig)} - {"data", "model", "out", "task", "images"}
        unknown = sorted(set(self.options) - known)
        if unknown:
            raise ValueError(f"not an eval option: {', '.join(unknown)}")
        check_models(self.models)
        from mmrobust.models.spec import driver_model

        for spec in dict.fromkeys(self.models):  # a light backend's bad arguments: now, once
            driver_model(spec, self.args_of(spec)).close()
        for task in self.tasks:
            self.eval_config(self.models[0], self.data[0], None, task, "x").validate()

    def drop_repeats(self) -> list[str]:
        """Run each dataset and each model spec once: drop a ``--data`` that names a dataset
        given before (the same resolved path, whatever the spelling: ``base``, ``base/``, an
        absolute path, a symlink; the same hub id and revision, or name), with the same
        ``--media``, and a ``--model`` given before (the same spec). Returns one note per
        dropped item; ``data``/``media``/``models`` are changed in place."""
        notes: list[str] = []
        media = self.media or [None] * len(self.data)
        kept: dict[tuple[str, str | None], str] = {}
        data: list[str] = []
        kept_media: list[str | None] = []
        for d, m in zip(self.data, media, strict=True):
            key = (dataset_key(d), None if m is None else dataset_key(m))
            if key in kept:
                same = f"{d!r} is {kept[key]!r}" if d != kept[key] else f"{d!r} is given twice"
                notes.append(f"--data {same} (the same dataset): run once")
                continue
            kept[key] = d
            data.append(d)
            kept_media.append(m)
        self.data = data
        if self.media:
            self.media = kept_media
        models = list(dict.fromkeys(self.models))
        for spec in sorted(set(self.models), key=self.models.index):
            if self.models.count(spec) > 1:
                notes.append(
                    f"--model {redact(spec)} is given {self.models.count(spec)} times: run once"
                )
        self.models = models
        return notes

    def eval_config(
        self, model: str, data: str, media: str | None, task: str, out: str
    ) -> EvalConfig:
        """The :class:`EvalConfig` of one run (its ``model_args``: :meth:`args_of`)."""
        options = {**self.options, "model_args": self.args_of(model)}
        return EvalConfig(data=data, model=model, out=out, task=task, images=media, **options)

    def args_of(self, model: str) -> dict[str, str]:
        """The backend settings of ``model``: the shared ones its backend takes
        (:meth:`model_args_for`), then its own."""
        return {**self.model_args_for(model), **self.model_args.get(model, {})}

    def model_args_for(self, model: str) -> dict[str, str]:
        """The shared ``--model-arg`` settings the backend of ``model`` takes.

        With models of several backends (``openai:`` beside ``hf:`` or ``forensic``), each
        gets only the keys its backend declares (``mmrobust list models``), so
        ``base_url=...`` reaches the API models and not the local ones; a key no backend of
        the suite declares is passed to every model, whose backend then rejects it (a typo
        still fails). With one backend every key is passed as given.
        """
        args: dict[str, str] = dict(self.options.get("model_args") or {})
        backends = {m.partition(":")[0] for m in self.models}
        if not args or len(backends) < 2:
            return args
        from mmrobust.catalog import models as backend_catalog

        declared = {
            b["name"]: {o["name"] for o in b["options"]}
            for b in backend_catalog()
            if b["name"] in backends
        }
        if set(declared) != backends:  # a backend the catalog does not know: pass all
            return args
        anywhere = set().union(*declared.values())
        mine = declared[model.partition(":")[0]]
        return {k: v for k, v in args.items() if k in mine or k not in anywhere}


def dataset_key(data: str) -> str:
    """What makes two ``--data`` the same dataset: an existing path resolved (links followed,
    ``base/`` and ``./base`` alike), else the name or hub id as given (``hf:org/name@rev``),
    without a trailing ``/``."""
    path = Path(data).expanduser()
    if path.exists():
        return str(path.resolve())
    return data.rstrip("/") or data


__all__ = ["SuiteConfig", "dataset_key"]
