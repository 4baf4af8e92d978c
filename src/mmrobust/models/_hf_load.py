"""Loading helpers of the ``hf`` backend: checkpoint identity and the hub check.

Pure or read-only helpers (no torch import): the digest of a local checkpoint
folder and of a processor's configuration (both in the run fingerprint), and a
hub check that makes a typo or a missing network fail in seconds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("mmrobust.models.hf")


_WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5"}


def local_digest(path: Path) -> str | None:
    """sha256 prefix identifying a local checkpoint folder, or ``None`` for a hub id.

    Weight files count by name and size (hashing gigabytes would take minutes);
    every other top-level file (configs, tokenizer, ``chat_template.jinja``,
    processor settings) by name and content, so an edited template or
    preprocessor config changes the digest.
    """
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if not item.is_file() or item.name.startswith("."):
            continue
        if item.suffix in _WEIGHT_SUFFIXES:
            digest.update(f"{item.name}:{item.stat().st_size}\n".encode())
        else:
            digest.update(f"{item.name}:".encode())
            with item.open("rb") as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
            digest.update(b"\n")
    return digest.hexdigest()[:16]


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def processor_digest(processor: Any) -> str:
    """sha256 prefix of a processor's configuration (its sub-processors' settings), as loaded."""
    try:
        config = processor.to_dict()
    except Exception:  # a processor that cannot serialise itself: fall back to its repr
        return hashlib.sha256(repr(processor).encode()).hexdigest()[:16]
    config.pop("chat_template", None)  # hashed on its own
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def hub_unreachable_but_cached(model_id: str, revision: str | None) -> bool:
    """Check a hub id before loading, so a typo or a missing network fails in seconds.

    Returns ``True`` when the hub cannot be reached but the model is in the local
    cache (load it from there), ``False`` when loading may go ahead normally (a
    local folder, offline mode, or the hub answered).

    Raises:
        ValueError: no such model on the hub, or the hub is unreachable and the
            model is not cached (instead of minutes of download retries).
    """
    if Path(model_id).exists() or offline():
        return False
    from huggingface_hub import model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        model_info(model_id, revision=revision, timeout=10)
        return False
    except GatedRepoError:
        return False  # needs a token; from_pretrained reports that itself
    except RepositoryNotFoundError:
        raise ValueError(
            f"hf: {model_id!r} is neither a local folder nor a model on the Hugging Face hub"
        ) from None
    except Exception as exc:  # network failure: fall back to the local cache
        cached = try_to_load_from_cache(model_id, "config.json", revision=revision)
        if isinstance(cached, str):
            log.warning("hf: hub unreachable (%s); loading %s from the local cache", exc, model_id)
            return True
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"hf: cannot reach the Hugging Face hub for {model_id!r} ({reason}) and it is not "
            "in the local cache: pass a local folder, or download it where the hub is reachable "
            "and run with HF_HUB_OFFLINE=1"
        ) from None


__all__ = ["hub_unreachable_but_cached", "local_digest", "offline", "processor_digest"]
