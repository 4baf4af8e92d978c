"""Is there a working ``torchvision`` beside ``torch``? One-line answers naming the fix.

transformers 5 builds a video processor for most VLM families (Qwen2-VL, Qwen2.5-VL,
Qwen3-VL, LLaVA-OneVision, SmolVLM2, InternVL, LLaVA-NeXT-Video) whenever
``AutoProcessor`` loads them, image-only data included, and those processors need
torchvision. Each torchvision release is built for exactly one torch release
(torch 2.X.Y pairs with torchvision 0.(X+15).Y since torch 2.0); a torchvision built
for another torch, or a CUDA torchvision beside a ``+cpu`` torch from another index,
fails at import with ``operator torchvision::nms does not exist``.
"""

from __future__ import annotations

import importlib.util
import re

INSTALL_HINT = "pip install -e '.[hf]' (a matching torch/torchvision pair)"


def matching_torchvision(torch_version: str) -> str | None:
    """The torchvision release built for a torch release, or ``None`` if unknown.

    ``"2.14.1+cu130"`` -> ``"0.29.1"``; ``"2.13.0+cpu"`` -> ``"0.28.0"``. The rule
    (minor + 15, same patch) holds for torch 2.0 ... 2.14 (pytorch/vision README,
    "Installation" compatibility table).
    """
    match = re.match(r"^2\.(\d+)\.(\d+)", torch_version)
    if not match:
        return None
    minor, patch = int(match.group(1)), int(match.group(2))
    return f"0.{minor + 15}.{patch}"


def torchvision_problem() -> str | None:
    """Why torchvision cannot be used, in one line, or ``None`` when it imports and runs.

    Imports torchvision (and so torch). A broken pair raises at import (``RuntimeError``
    / ``OSError``), not ``ImportError``; both count as problems.
    """
    if importlib.util.find_spec("torchvision") is None:
        return "torchvision is not installed"
    try:
        import torchvision  # noqa: F401
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"torchvision is installed but does not import ({text})"
    return None


def torchvision_fix(problem: str, torch_version: str | None = None) -> str:
    """One-line message for ``problem`` that names the fix for ``torch_version`` (default: installed)."""
    if torch_version is None:
        try:
            import torch

            torch_version = str(torch.__version__)
        except Exception:  # pragma: no cover - torch itself missing is reported elsewhere
            torch_version = "unknown"
    pair = matching_torchvision(torch_version)
    if pair is None:
        fix = INSTALL_HINT
    elif "+cpu" in torch_version:
        # PyPI's torchvision is a CUDA build, which fails beside a +cpu torch
        fix = (
            f"pip install 'torchvision=={pair}+cpu' --index-url https://download.pytorch.org/whl/cpu"
            f" (the CPU build for torch {torch_version}), or {INSTALL_HINT}"
        )
    else:
        fix = f"pip install 'torchvision=={pair}' (the release for torch {torch_version})"
    return f"hf: {problem}; transformers needs it for this model's image/video processor: {fix}"


__all__ = ["INSTALL_HINT", "matching_torchvision", "torchvision_fix", "torchvision_problem"]
