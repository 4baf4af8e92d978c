"""The suite file of ``mmrobust run --config FILE`` (YAML or JSON) and its one model.

:class:`SuiteFile` is the one description of what ``mmrobust run`` takes: each of its
fields is a key of the file and carries the command-line flag(s) that set it
(:func:`flag`; ``mmrobust run``'s options are generated from these fields by
:mod:`mmrobust.suite.command`, never written a second time). A key of a file::

    models:                       # each a SPEC, or {spec, args, card}
      - constant:A
      - spec: openai:gpt-4o
        args: {base_url: "http://127.0.0.1:8000/v1", api_key_env: OPENAI_API_KEY}
    data:                         # each a dataset, or {path, media, revision}
      - mmr-demo
      - {path: tamper-set, media: videos}
    tasks: [detect, type]
    out: suite-out
    frames: 8
    seed: 0

Errors name the file, the line and the key, and the nearest valid key of a misspelt one
(:func:`mmrobust.suite.load.load_suite_file`, :class:`SuiteFileError`). :func:`dump_suite_file` writes the
same form (what ``mmrobust run --print-config`` prints; loading it gives the same
:class:`SuiteFile`). Relative paths in a file are relative to the working folder, as on
the command line. Light: pydantic only (PyYAML is imported when a YAML file is read or
written).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FILE_SUFFIXES = (".yaml", ".yml", ".json")
"""What ``--config`` reads: YAML (``.yaml``, ``.yml``) or JSON (``.json``)."""


class SuiteFileError(ValueError):
    """A suite file that cannot be read or does not validate (one line: file, line, key)."""


def flag(
    default: Any,
    *names: str,
    help: str,
    metavar: str | None = None,
    min: int | None = None,
    eval_key: str | None = None,
) -> Any:
    """A :class:`SuiteFile` field with its command-line flag ``names`` (the first is the
    main one), ``help``, ``metavar`` and lower bound ``min``; ``eval_key``: the
    :class:`mmrobust.run.config.EvalConfig` field it sets, when it is a shared eval option."""
    extra = {"flags": list(names), "metavar": metavar, "min": min, "eval_key": eval_key}
    return Field(default, description=help, json_schema_extra=extra)  # type: ignore[arg-type]


def _text(value: Any) -> str:
    """A backend setting as text (``true``, ``0.5``: YAML's scalars as typed on a command
    line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ModelEntry(BaseModel):
    """One model of a suite: its SPEC, its own backend settings (beside the shared
    ``model_args``) and the hub model repository whose card ``--push-to-hub`` proposes
    its scores to (``card``: a pull request, never a direct write)."""

    model_config = ConfigDict(extra="forbid")

    spec: str
    args: dict[str, str] = Field(default_factory=dict)
    card: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _spec_alone(cls, value: Any) -> Any:
        return {"spec": value} if isinstance(value, str) else value

    @field_validator("args", mode="before")
    @classmethod
    def _args_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): _text(v) for k, v in value.items()}
        return value


class DataEntry(BaseModel):
    """One dataset of a suite: anything ``eval --data`` takes, the folder its media paths
    are relative to (``--media``) and, for ``hf:`` data, its hub revision."""

    model_config = ConfigDict(extra="forbid")

    path: str
    media: str | None = None
    revision: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _path_alone(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value


class SuiteFile(BaseModel):
    """Everything ``mmrobust run`` takes; each field is a file key and its flags."""

    model_config = ConfigDict(extra="forbid")

    models: list[ModelEntry] = flag(
        [], "--model", metavar="SPEC",
        help="Model SPEC (repeatable): constant:A, openai:<m>, anthropic:<m>, gemini:<m>, hf:<id> ...",
    )  # fmt: skip
    data: list[DataEntry] = flag(
        [], "--data", help="Dataset (repeatable): anything eval --data takes, e.g. mmr-demo."
    )
    tasks: list[str] = flag(
        ["all"], "--task", "--tasks", metavar="T,T",
        help="Tasks, comma list (repeatable): detect,type,when,leading or all (default). "
        "type/when/leading are skipped on non-tamper data.",
    )  # fmt: skip
    out: str | None = flag(
        None, "--out", help="Suite folder: OUT/<model>/<dataset>/<task>/ run folders, OUT/report/."
    )
    revision: str | None = flag(
        None, "--revision", help="Hub revision (branch, tag or commit) of the hf: --data."
    )
    model_args: dict[str, str] = Field(
        default_factory=dict,
        description="Backend settings every model whose backend takes the key gets "
        "(--model-arg KEY=VALUE, --model-args K=V,K=V).",
    )
    limit: int | None = flag(
        None, "--limit", help="Only the first N samples of each run.", eval_key="limit"
    )
    frames: int = flag(8, "--frames", help="Segment-centre frames per video.", eval_key="frames")
    fps: float | None = flag(
        None, "--fps", help="Sample F frames per second instead of --frames.", eval_key="fps"
    )
    max_frames: int | None = flag(
        None, "--max-frames", help="Cap for --fps.", eval_key="max_frames"
    )
    prompt: str | None = flag(
        None, "--prompt", help="structured | generic | cot | mmr | plain (default by benchmark).",
        eval_key="prompt",
    )  # fmt: skip
    option_style: str = flag(
        "paper", "--option-style", help="paper ('A. Yes') | vlmevalkit ('(A) Yes').",
        eval_key="option_style",
    )  # fmt: skip
    permute: int = flag(
        0, "--permute", min=0, eval_key="permute",
        help="Circularly shift the option order by K (position-bias check).",
    )  # fmt: skip
    extract: str = flag(
        "lenient", "--extract", help="Answer extraction: lenient | strict | official.",
        eval_key="extract",
    )  # fmt: skip
    official: bool = flag(
        False, "--official", help="Reference protocol (as eval).", eval_key="official"
    )
    reference: str | None = flag(
        None, "--reference", eval_key="reference",
        help="VLMEvalKit version --official reproduces: eb58e9e/integration (default) or "
        "e8e78f0/head.",
    )  # fmt: skip
    text_only: bool = flag(
        False, "--text-only", help="Send no media (blind ablation).", eval_key="text_only"
    )
    workers: int | None = flag(
        None, "--workers", eval_key="workers",
        help="Concurrent batches (default: the model's max_concurrency).",
    )  # fmt: skip
    seed: int = flag(0, "--seed", help="Seed (bootstrap; task option order).", eval_key="seed")
    bootstrap: int = flag(
        1000, "--bootstrap", min=0, eval_key="n_resamples",
        help="Bootstrap resamples for 95% CIs (0 = off).",
    )  # fmt: skip
    cache_dir: str | None = flag(
        None, "--cache-dir", help="Frame cache folder ('none' switches it off).",
        eval_key="cache_dir",
    )  # fmt: skip
    cache_size: str | None = flag(
        None, "--cache-size", help="Frame cache cap, e.g. 10GB (default), 500MB.",
        eval_key="cache_size",
    )  # fmt: skip
    retry_failed: bool = flag(
        False, "--retry-failed", eval_key="retry_failed",
        help="On resume, also ask again rows that are final errors.",
    )  # fmt: skip
    repeats: int = flag(
        1, "--repeats", min=1, eval_key="repeats",
        help="Ask every question K times (with --temperature); the card shows its stability.",
    )  # fmt: skip
    temperature: float | None = flag(
        None, "--temperature", eval_key="temperature",
        help="Sampling temperature (= --model-arg temperature=T).",
    )  # fmt: skip
    title: str = flag("mmrobust report", "--title", help="Title of the report.")
    report: bool = flag(True, "--report/--no-report", help="Write OUT/report at the end.")
    log_samples: bool = flag(
        False, "--log-samples", "--log_samples", help="Also write each run's samples.jsonl."
    )
    log_to: str | None = flag(
        None, "--log-to", help="Also log runs to: wandb (pip install 'mmrobust[wandb]')."
    )
    wandb_project: str = flag("mmrobust", "--wandb-project", help="W&B project for --log-to.")
    push_to_hub: str | None = flag(
        None, "--push-to-hub", metavar="REPO",
        help="Upload the report, cards, suite.json and per-sample logs to this hub dataset "
        "repository (one commit; token: HF_TOKEN). docs/suite.md.",
    )  # fmt: skip
    private: bool = flag(False, "--private", help="--push-to-hub: create the repository private.")

    @field_validator("model_args", mode="before")
    @classmethod
    def _shared_args_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): _text(v) for k, v in value.items()}
        return value

    @field_validator("tasks", mode="before")
    @classmethod
    def _task_list(cls, value: Any) -> Any:
        """``detect,type`` or ``[detect, "when,leading"]``: one flat list of names."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            return value
        out: list[str] = []
        for item in items:
            if not isinstance(item, str):
                return value  # pydantic names the bad item
            out += [p.strip() for p in item.split(",") if p.strip()]
        return out

    def eval_options(self) -> dict[str, Any]:
        """The shared :class:`EvalConfig` options (``model_args`` included), by eval name."""
        options: dict[str, Any] = {"model_args": dict(self.model_args)}
        for name, info in SuiteFile.model_fields.items():
            key = _extra(info).get("eval_key")
            if key:
                options[key] = getattr(self, name)
        return options

    def to_suite_config(self) -> Any:
        """The :class:`mmrobust.suite.config.SuiteConfig` this file describes (its ``file``:
        this file, secrets scrubbed).

        Raises:
            ValueError: no model, no dataset, no ``out``; a ``revision`` for data that is not
                ``hf:``; an unknown task.
        """
        from mmrobust.datasets.hub import with_revision
        from mmrobust.suite.config import SuiteConfig
        from mmrobust.suite.names import parse_tasks

        if not self.models:
            raise ValueError("no model given (--model, or models: in --config)")
        if not self.data:
            raise ValueError("no dataset given (--data, or data: in --config)")
        if not self.out:
            raise ValueError("no suite folder given (--out, or out: in --config)")
        data: list[str] = []
        for d in self.data:
            revision = d.revision or self.revision
            if d.revision and not d.path.startswith("hf:"):
                raise ValueError(f"revision {d.revision} is for hf: data; {d.path} is not hf:")
            data.append(with_revision(d.path, revision) if d.path.startswith("hf:") else d.path)
        if self.revision and not any(d.path.startswith("hf:") for d in self.data):
            raise ValueError(f"--revision {self.revision} is for hf: data; no --data is hf:")
        media = [d.media for d in self.data] if any(d.media for d in self.data) else []
        return SuiteConfig(
            models=[m.spec for m in self.models],
            data=data,
            tasks=parse_tasks(self.tasks),
            out=self.out,
            media=media,
            options=self.eval_options(),
            report=self.report,
            title=self.title,
            log_samples=self.log_samples,
            model_args={m.spec: dict(m.args) for m in self.models if m.args},
            file=self.scrubbed().record(),
        )

    def scrubbed(self) -> SuiteFile:
        """This file fit to store and show: credentials out of specs, URLs and settings
        (:func:`mmrobust.redact.redact`, :func:`~mmrobust.redact.scrub_args`)."""
        from mmrobust.redact import redact, scrub_args

        return self.model_copy(
            update={
                "models": [
                    m.model_copy(update={"spec": redact(m.spec), "args": scrub_args(m.args)})
                    for m in self.models
                ],
                "data": [d.model_copy(update={"path": redact(d.path)}) for d in self.data],
                "model_args": scrub_args(self.model_args),
            }
        )

    def record(self) -> dict[str, Any]:
        """The file as plain data, in field order: a model or dataset with nothing but its
        spec or path is written as that string."""
        raw = self.model_dump(mode="json")
        raw["models"] = [
            m["spec"] if not m["args"] and m["card"] is None else _drop_empty(m)
            for m in raw["models"]
        ]
        raw["data"] = [
            d["path"] if d["media"] is None and d["revision"] is None else _drop_empty(d)
            for d in raw["data"]
        ]
        return raw


def _drop_empty(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if v not in (None, {})}


def _extra(info: Any) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def flag_fields() -> dict[str, dict[str, Any]]:
    """Each :class:`SuiteFile` field that has flags -> ``{flags, help, metavar, min,
    default, annotation}`` (what :mod:`mmrobust.suite.command` makes the options of)."""
    out: dict[str, dict[str, Any]] = {}
    for name, info in SuiteFile.model_fields.items():
        extra = _extra(info)
        if extra.get("flags"):
            default = info.get_default(call_default_factory=True)
            out[name] = {**extra, "help": info.description, "default": default,
                         "annotation": info.annotation}  # fmt: skip
    return out


def dump_suite_file(suite: SuiteFile, *, as_json: bool = False) -> str:
    """``suite`` (scrubbed of credentials) as YAML (or JSON): what ``--print-config`` prints;
    :func:`mmrobust.suite.load.parse_suite_text` of it gives ``suite`` back (less any credential)."""
    record = suite.scrubbed().record()
    if as_json:
        return json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    import yaml

    from mmrobust import __version__

    body = yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100)
    return f"# mmrobust {__version__}: mmrobust run --config FILE (docs/suite.md)\n{body}"


__all__ = [
    "FILE_SUFFIXES",
    "DataEntry",
    "ModelEntry",
    "SuiteFile",
    "SuiteFileError",
    "dump_suite_file",
    "flag",
    "flag_fields",
]
