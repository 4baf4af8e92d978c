"""Model SPEC grammar shared by all backends, and the model registry.

A spec is ``name`` or ``name:arg``; the arg is everything after the first
colon (so ``hf:/path/with:colon`` keeps its colon). Extra settings come as
``--model-arg K=V`` pairs, or in lm-eval's comma form ``--model-args
K=V,K=V`` (:func:`split_model_args`); :func:`parse_model_args` takes both.
Examples::

    constant:A          always answer letter A
    random:3            uniform random letter, seed 3
    forensic            the pixel-only tamper detector
    blind-overlap       text-only word-overlap baseline (MMR)
    openai:gpt-4o       any OpenAI-compatible server (--model-arg base_url=...)
    anthropic:claude-sonnet-4-5    Anthropic's Messages API (ANTHROPIC_API_KEY)
    hf:Qwen/Qwen2-VL-2B-Instruct   a local or hub transformers checkpoint

Factories are registered lazily (``"module:function"``) so that importing
mmrobust never imports torch. Each backend is registered with its
``placement`` (``"api"`` / ``"gpu"`` / ``"cpu"``, ``models.base.Placement``), so
an executor can place replicas from the spec alone, before any model is loaded
(``distributed/``): :func:`register_backend`, :func:`placement_of`. What a model can
answer is asked of :func:`driver_model` before any work is handed out, on every executor.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from mmrobust.models.base import (
    MEDIA_KINDS,
    MediaInput,
    MediaKind,
    Model,
    Placement,
    Request,
    Response,
    media_refusal,
)
from mmrobust.registry import Registry

if TYPE_CHECKING:
    from mmrobust.media.jpeg import FrameEncoding

ModelFactory = Callable[[str | None, Mapping[str, str]], Model]
"""``factory(arg, model_args) -> Model``; raises ``ValueError`` on bad arguments."""

MODELS: Registry[ModelFactory] = Registry("model")

PLACEMENTS: dict[str, Placement] = {}
"""Backend name -> where its model runs (the ``placement`` of the models it makes)."""

MEDIA: dict[str, tuple[MediaKind, ...]] = {}
"""Backends whose models answer fewer media kinds than all (``Model.media_kinds``):
``name -> kinds`` (``forensic``: video only)."""

LIGHT: set[str] = set()
"""Backends whose factory builds no client and loads no weights (the baselines, the forensic
detector): :func:`driver_model` builds one where the run starts, whatever the executor."""

FRAME_ENCODINGS: dict[str, str] = {}
"""Backends whose frame encoding is not the default (JPEG q95, decoded size):
``name -> "module:function"``, ``function(arg, args) -> FrameEncoding`` (no client built)."""


def register_backend(
    name: str,
    factory: ModelFactory | str,
    *,
    placement: Placement = "cpu",
    frame_encoding: str | None = None,
    media: tuple[MediaKind, ...] | None = None,
    light: bool = False,
) -> None:
    """Register a backend: its factory (or lazy ``"module:function"``), its placement,
    when its frames are not JPEG q95 at the decoded size, the lazy ``"module:function"``
    ``function(arg, args) -> FrameEncoding`` that says what it sends without building a
    client (:func:`frame_encoding_of`), and when its models answer fewer media kinds than
    all, those (``media``: its models' ``Model.media_kinds``; :func:`media_kinds_of`).
    ``light``: the factory builds no client and loads no weights, so the driver of a run
    builds one to ask ``cannot_take`` / ``cannot_answer`` before any work is handed out
    (:func:`driver_model`); declare it for a backend whose models refuse some data by
    their arguments (``constant:Z`` on Yes/No questions), or Ray replicas are asked anyway.

    Raises:
        ValueError: ``name`` is already registered with another factory.
    """
    MODELS.register(name, factory)
    PLACEMENTS[name] = placement
    if frame_encoding is not None:
        FRAME_ENCODINGS[name] = frame_encoding
    if media is not None:
        MEDIA[name] = tuple(media)
    if light:
        LIGHT.add(name)
    else:
        LIGHT.discard(name)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: ``name[:arg]`` plus ``--model-arg`` pairs."""

    name: str
    arg: str | None = None
    args: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    @property
    def placement(self) -> Placement:
        """Where this spec's model runs (:func:`placement_of`)."""
        return placement_of(self.name)

    @property
    def media_kinds(self) -> tuple[MediaKind, ...]:
        """The media kinds this spec's model answers (:func:`media_kinds_of`)."""
        return media_kinds_of(self.name)


def media_kinds_of(name: str) -> tuple[MediaKind, ...]:
    """The media kinds the models of backend ``name`` answer (every kind unless registered
    with fewer), known before any model is loaded (``mmrobust run`` plans with it)."""
    return MEDIA.get(name, MEDIA_KINDS)


def placement_of(name: str) -> Placement:
    """The placement a backend was registered with (``"cpu"`` when registered without one)."""
    return PLACEMENTS.get(name, "cpu")


def parse_spec(spec: str, model_args: Mapping[str, str] | None = None) -> ModelSpec:
    """Split ``"name:arg"`` into a ``ModelSpec``.

    Raises:
        ValueError: empty spec or empty name.
    """
    spec = spec.strip()
    name, sep, arg = spec.partition(":")
    if not name:
        raise ValueError(f"bad model spec {spec!r}: expected NAME or NAME:ARG")
    return ModelSpec(name=name, arg=arg if sep else None, args=dict(model_args or {}))


_SWALLOWED = re.compile(r",\s*[A-Za-z_][A-Za-z0-9_]*=")
"""``,key=`` inside one ``--model-arg`` value: several settings joined by commas."""


def split_model_args(text: str) -> dict[str, str]:
    """Parse lm-eval's comma form ``"base_url=http://h:8000/v1,concurrency=4"`` into a dict.

    The rules of ``simple_parse_args_string`` (EleutherAI/lm-evaluation-harness
    ``lm_eval/utils.py``, commit 003e5852): pairs are separated by commas, empty
    pairs are skipped, the first ``=`` splits a key from its value (a value may
    hold more ``=``). As lmms-eval's version of it (``_smart_comma_split``), a
    comma inside single or double quotes (not backslash-escaped) or inside
    ``{...}`` / ``[...]`` does not separate, so a JSON value keeps its commas
    (``extra_body={"top_k":1,"min_p":0.1}``), and each pair is stripped of
    surrounding spaces, and so are the key and the value (``base_url = http://h/v1``).
    Ours: a value wholly inside one pair of matching quotes
    loses them (``base_url='http://h/v1'`` -> ``http://h/v1``); values stay
    strings (each backend's options model converts them).

    Raises:
        ValueError: a pair without ``=`` or with an empty key, or a key given twice
            with different values (one line each).
    """
    out: dict[str, str] = {}
    for item in _comma_items(text):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()  # "base_url = http://h/v1": spaces around "="
        if not sep or not key:
            raise ValueError(
                f"bad --model-args item {item!r}: expected KEY=VALUE pairs separated by commas"
            )
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key in out and out[key] != value:
            raise ValueError(f"--model-args gives {key!r} twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out


def _comma_items(text: str) -> list[str]:
    """``text`` split at commas outside quotes and brackets, items stripped, empty ones dropped."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    quote: str | None = None
    for i, char in enumerate(text):
        escaped = i > 0 and text[i - 1] == "\\"
        if char in "'\"" and not escaped:
            if quote is None:
                quote = char
            elif char == quote:
                quote = None
        elif quote is None:
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth = max(0, depth - 1)
            elif char == "," and depth == 0:
                items.append("".join(current).strip())
                current = []
                continue
        current.append(char)
    items.append("".join(current).strip())
    return [item for item in items if item]


def parse_model_args(
    pairs: list[str] | None, comma_lists: list[str] | None = None
) -> dict[str, str]:
    """Parse ``--model-arg K=V`` pairs (and ``--model-args K=V,K=V`` lists) into one dict.

    ``pairs``: one setting each; the value is everything after the first ``=``.
    ``comma_lists``: lm-eval's comma form, parsed by :func:`split_model_args`.
    A key may come from either; given in both with different values it is an error.

    Raises:
        ValueError: a pair without ``=``; a ``--model-arg`` value that looks like a
            swallowed comma list (``base_url=http://x,concurrency=4``: the URL would
            silently become ``http://x,concurrency=4``), with the fix; or a
            :func:`split_model_args` error.
    """
    out: dict[str, str] = {}
    for text in comma_lists or []:
        out.update(split_model_args(text))
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad --model-arg {pair!r}: expected KEY=VALUE")
        key, value = key.strip(), value.strip()  # spaces around "=" are not part of either
        if not value.lstrip().startswith(("{", "[")) and _SWALLOWED.search(value):
            raise ValueError(
                f"--model-arg {pair!r} looks like several settings joined by commas; give each "
                f"its own --model-arg, or pass them all as --model-args {pair}"
            )
        if key in out and out[key] != value:
            raise ValueError(
                f"{key!r} is given by --model-args ({out[key]!r}) and --model-arg ({value!r})"
            )
        out[key] = value
    return out


def load_model(spec: str | ModelSpec, model_args: Mapping[str, str] | None = None) -> Model:
    """Build the model a spec names.

    Raises:
        UnknownNameError: unknown model name (the message suggests close names).
        ValueError: the backend rejected its arguments.
    """
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec, model_args)
    factory = MODELS.get(parsed.name)
    return factory(parsed.arg, parsed.args)


class UnloadedModel(Model):
    """What the spec alone says about a model that is not loaded here (Ray replicas load it):
    its name and media kinds (:func:`media_kinds_of`), so ``cannot_take`` is the loaded
    model's when the backend declared its kinds; ``cannot_answer`` is ``None``.
    ``generate`` raises."""

    media_input: ClassVar[MediaInput] = "none"

    def __init__(self, spec: ModelSpec) -> None:
        self.name = str(spec)
        self._kinds = spec.media_kinds

    def cannot_take(self, kinds: Collection[str]) -> str | None:
        """:func:`~mmrobust.models.base.media_refusal` with the spec's media kinds."""
        return media_refusal(self.name, self._kinds, kinds)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Not available: the model is not loaded here.

        Raises:
            RuntimeError: always.
        """
        raise RuntimeError(f"{self.name} is not loaded here; it only describes the spec")


def driver_model(spec: str | ModelSpec, model_args: Mapping[str, str] | None = None) -> Model:
    """The model a run's driver asks what it cannot answer before any work is handed out: the
    model itself for a ``light`` backend (:func:`register_backend`: no client, no weights),
    else an :class:`UnloadedModel` that knows the spec's media kinds only. Close it after use.

    Raises:
        UnknownNameError, ValueError: as :func:`load_model` (a light backend's bad arguments).
    """
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec, model_args)
    if parsed.name in LIGHT:
        return load_model(parsed)
    if parsed.name not in MODELS:
        MODELS.get(parsed.name)  # raises as a local load would (close names); imports nothing
    return UnloadedModel(parsed)


def frame_encoding_of(
    spec: str | ModelSpec, model_args: Mapping[str, str] | None = None
) -> FrameEncoding:
    """The frame encoding the model a spec names uses (``Model.frame_encoding()``), computed
    from the spec alone: no client, no weights. The run key of a model that is loaded
    elsewhere (Ray replicas) comes from here.

    Raises:
        ValueError: the backend rejected its arguments.
    """
    from mmrobust.media.jpeg import FrameEncoding

    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec, model_args)
    target = FRAME_ENCODINGS.get(parsed.name)
    if target is None:
        return FrameEncoding()
    module, _, func = target.partition(":")
    encoding: FrameEncoding = getattr(importlib.import_module(module), func)(
        parsed.arg, parsed.args
    )
    return encoding


# Built-in backends, imported on first use. Each module defines ``make(arg, args)``.
register_backend("constant", "mmrobust.models.baselines:make_constant", light=True)
register_backend("random", "mmrobust.models.baselines:make_random", light=True)
register_backend("forensic", "mmrobust.models.forensic:make", media=("video",), light=True)
register_backend("blind-overlap", "mmrobust.models.blind:make_overlap", light=True)
register_backend("blind-embed", "mmrobust.models.blind:make_embed")
register_backend(
    "openai",
    "mmrobust.models.openai_compat:make",
    placement="api",
    frame_encoding="mmrobust.models.openai_compat:frame_encoding",
)
register_backend(
    "anthropic",
    "mmrobust.models.anthropic:make",
    placement="api",
    frame_encoding="mmrobust.models.anthropic:frame_encoding",
)
register_backend("hf", "mmrobust.models.hf:make", placement="gpu")

__all__ = [
    "FRAME_ENCODINGS",
    "LIGHT",
    "MEDIA",
    "MODELS",
    "PLACEMENTS",
    "ModelFactory",
    "ModelSpec",
    "UnloadedModel",
    "driver_model",
    "frame_encoding_of",
    "load_model",
    "media_kinds_of",
    "parse_model_args",
    "parse_spec",
    "placement_of",
    "register_backend",
    "split_model_args",
]
