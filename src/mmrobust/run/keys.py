"""Run keys and fingerprints: what makes two runs the same run.

:func:`run_key` is the store key of a configuration (model fingerprint, prompt
hash, sampling-policy + frame-encoding hash); rows are resumed only under an
equal key. :func:`config_record` and :func:`run_block` are the ``config`` and
``run`` blocks of ``run.json``/``metrics.json``; :func:`versions` and
:func:`git_sha` are recorded beside them so a result names the code that made it.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mmrobust import __version__
from mmrobust.media.sampling import FramePolicy
from mmrobust.models.base import Model
from mmrobust.official import reference_block, reference_versions
from mmrobust.prompts import PromptConfig
from mmrobust.redact import scrub_args
from mmrobust.run.config import EvalConfig
from mmrobust.store import RunKey
from mmrobust.tasks import task_fingerprint


def _hash(obj: Any) -> str:
    """First 16 hex digits of the sha256 of ``obj`` as sorted-key JSON."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def git_sha() -> str | None:
    """The commit of the mmrobust checkout (``None`` outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def versions() -> dict[str, str]:
    """Python, mmrobust and the installed versions of the libraries results depend on."""
    import importlib.metadata as md

    out = {"python": platform.python_version(), "mmrobust": __version__}
    for pkg in (
        "numpy",
        "av",
        "scikit-learn",
        "scipy",
        "pydantic",
        "openai",
        "torch",
        "transformers",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            continue
    return out


_git_sha = git_sha  # the old private names (runner.py)
_versions = versions


def key_parts(
    model: Model,
    prompt_config: PromptConfig,
    policy: FramePolicy,
    *,
    text_only: bool,
    task: str = "detect",
) -> dict[str, Any]:
    """What a run key is made of, before hashing (:func:`key_from_parts`).

    ``model``: the model's fingerprint; ``prompt``: the prompt hash (with the task's
    template digest for a ``--task`` other than ``detect``); ``media``: the sampling
    policy, the media input and the frame encoding's fingerprint; ``frame_encoding``:
    that encoding spelled out (JPEG quality, size cap), so a mismatch can name it.
    """
    mode = "none" if text_only else model.media_input
    media: dict[str, Any] = {"policy": asdict(policy), "media": mode}
    encoding = model.frame_encoding() if mode == "frames" else None
    if encoding is not None:  # the pixels a model sees are the JPEGs of its frame encoding
        media["encoding"] = encoding.fingerprint()
    prompt_fp = prompt_config.fingerprint()
    if task != "detect":
        prompt_fp = _hash({"prompt": prompt_fp, **task_fingerprint(task)})
    return {
        "model": model.fingerprint(),
        "prompt": prompt_fp,
        "media": media,
        "frame_encoding": encoding.as_dict() if encoding is not None else None,
    }


def key_from_parts(parts: dict[str, Any]) -> RunKey:
    """The :class:`RunKey` of :func:`key_parts` (the hashes stored with every row)."""
    return RunKey(
        model_fp=_hash(parts["model"]),
        prompt_fp=str(parts["prompt"]),
        policy_fp=_hash(parts["media"]),
    )


def run_key(
    model: Model,
    prompt_config: PromptConfig,
    policy: FramePolicy,
    *,
    text_only: bool,
    task: str = "detect",
) -> RunKey:
    """The store key of a configuration: model fingerprint, prompt and sampling-policy hashes.

    A ``--task`` other than ``detect`` is part of the prompt hash (with the
    template file's digest), so a run folder never mixes tasks.
    """
    parts = key_parts(model, prompt_config, policy, text_only=text_only, task=task)
    return key_from_parts(parts)


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix or "key": obj}


def key_difference(ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """The fields in which two :func:`key_parts` differ, on one line
    (``frame_encoding.quality 95 here, 90 there; ...``), or ``None`` when they are equal.
    ``media.encoding`` (a hash) is left out when ``frame_encoding`` names the difference."""
    a, b = _leaves(ours), _leaves(theirs)
    names = [k for k in sorted(set(a) | set(b)) if a.get(k, "absent") != b.get(k, "absent")]
    if any(n.startswith("frame_encoding") for n in names):
        names = [n for n in names if n != "media.encoding"]
    if not names:
        return None
    return "; ".join(
        f"{n} {a.get(n, 'absent')!r} here, {b.get(n, 'absent')!r} there" for n in names
    )


def config_record(config: EvalConfig) -> dict[str, Any]:
    """The ``config`` block of ``run.json``: the options, with secrets and URL credentials
    masked; ``repeats`` and ``temperature`` only when given (a run without them records the
    block it always did)."""
    record = asdict(config)
    if record.get("repeats") == 1:
        del record["repeats"]
    if record.get("temperature") is None:
        del record["temperature"]
    record["model_args"] = scrub_args(config.model_args)
    record["judge_args"] = scrub_args(config.judge_args)
    return record


def run_block(config: EvalConfig, model: Model, benchmark: str | None = None) -> dict[str, Any]:
    """The ``run`` block of ``metrics.json``: model, prompt, frames policy, extraction mode.

    ``reference`` names the reference code (repository, commit) official
    extraction reproduces for ``benchmark``, else ``None``; an official tamper run also
    names ``prompt_reference`` (the version whose prompt was sent) and
    ``decision_reference`` (the version whose rules decided; ``rescore --reference`` changes
    only this one), :func:`mmrobust.official.reference_versions`. ``repeats`` is there
    only for a ``--repeats`` run (K > 1).
    """
    pc = config.prompt_config()
    official = config.extract_mode() == "official"
    block: dict[str, Any] = {
        "model": config.model,
        "task": config.task,
        "model_args": scrub_args(config.model_args),
        "model_fingerprint": model.fingerprint(),
        "prompt": {
            "template": pc.template or "default",
            "option_style": pc.option_style,
            "permute": pc.permute,
            "official": pc.official,
            **({"reference": pc.reference} if pc.reference else {}),
        },
        "frames": "none (text only)"
        if config.text_only or model.media_input == "none"
        else (
            "whole video (model reads the file)"
            if model.media_input == "path"
            else config.policy().describe()
        ),
        "frame_encoding": model.frame_encoding().describe()
        if not config.text_only and model.media_input == "frames"
        else None,
        "extraction": config.extract_mode(),
        "failures": config.failures(),
        "text_only": config.text_only,
    }
    if config.repeats > 1:  # a run without repeats keeps the block it always had
        block["repeats"] = config.repeats
    ref = reference_block(benchmark or "", config.reference) if official else None
    return {
        **block,
        "reference": ref,
        **(reference_versions(pc.reference, ref) if official and pc.reference else {}),
    }


__all__ = [
    "config_record",
    "git_sha",
    "key_difference",
    "key_from_parts",
    "key_parts",
    "run_block",
    "run_key",
    "versions",
]
