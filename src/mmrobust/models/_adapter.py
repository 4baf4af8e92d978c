"""PEFT adapters for the ``hf`` backend (``--model-arg adapter=DIR``).

An adapter folder is what ``mmrobust finetune`` (or any PEFT training) writes:
``adapter_config.json`` plus ``adapter_model.safetensors``. It is applied to
the loaded base model and merged into its weights, so generation runs at the
base model's speed and answers equal those of the merged model
(``mmrobust finetune --merge``). ``peft`` is imported only when an adapter is given.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def adapter_digest(folder: Path) -> str:
    """sha256 (16 hex) over the adapter's config and weight files, for the run fingerprint."""
    digest = hashlib.sha256()
    for item in sorted(folder.iterdir()):
        if item.is_file() and item.name.startswith("adapter_"):
            digest.update(item.name.encode() + b"\0" + item.read_bytes())
    return digest.hexdigest()[:16]


def apply_adapter(model: Any, folder: Path) -> Any:
    """Load the PEFT adapter in ``folder`` onto ``model`` and merge it; return the merged model.

    Raises:
        ValueError: no adapter there, or it does not fit the model (one line).
        ImportError: ``peft`` is not installed (``pip install -e '.[train]'``).
    """
    if not (folder / "adapter_config.json").is_file():
        raise ValueError(f"hf: adapter: no adapter_config.json in {folder}")
    try:
        from peft import PeftModel
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(f"hf: adapter needs peft: pip install -e '.[train]' ({exc})") from exc
    try:
        wrapped = PeftModel.from_pretrained(model, str(folder))
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"hf: cannot apply adapter {folder}: {reason}") from exc
    return wrapped.merge_and_unload()


def maybe_apply_adapter(model: Any, folder: Path | None) -> tuple[Any, dict[str, str] | None]:
    """``(model, None)`` without an adapter; else the merged model and ``{"path", "digest"}``.

    Raises:
        ValueError, ImportError: as :func:`apply_adapter`.
    """
    if folder is None:
        return model, None
    folder = Path(folder)
    return apply_adapter(model, folder), {"path": str(folder), "digest": adapter_digest(folder)}


__all__ = ["adapter_digest", "apply_adapter", "maybe_apply_adapter"]
