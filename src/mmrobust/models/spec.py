"""Model SPEC grammar shared by all backends, and the model registry.

A spec is ``name`` or ``name:arg``; the arg is everything after the first
colon (so ``hf:/path/with:colon`` keeps its colon). Extra settings come as
``--model-arg K=V`` pairs. Examples::

    constant:A          always answer letter A
    random:3            uniform random letter, seed 3
    forensic            the pixel-only tamper detector
    blind-overlap       text-only word-overlap baseline (MMR)
    openai:gpt-4o       any OpenAI-compatible server (--model-arg base_url=...)
    hf:Qwen/Qwen2-VL-2B-Instruct   a local or hub transformers checkpoint

Factories are registered lazily (``"module:function"``) so that importing
mmrobust never imports torch. Each backend is registered with its
``placement`` (``"api"`` / ``"gpu"`` / ``"cpu"``, ``models.base.Placement``), so
an executor can place replicas from the spec alone, before any model is loaded
(``distributed/``): :func:`register_backend`, :func:`placement_of`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mmrobust.models.base import Model, Placement
from mmrobust.registry import Registry

ModelFactory = Callable[[str | None, Mapping[str, str]], Model]
"""``factory(arg, model_args) -> Model``; raises ``ValueError`` on bad arguments."""

MODELS: Registry[ModelFactory] = Registry("model")

PLACEMENTS: dict[str, Placement] = {}
"""Backend name -> where its model runs (the ``placement`` of the models it makes)."""


def register_backend(
    name: str, factory: ModelFactory | str, *, placement: Placement = "cpu"
) -> None:
    """Register a backend: its factory (or lazy ``"module:function"``) and its placement.

    Raises:
        ValueError: ``name`` is already registered with another factory.
    """
    MODELS.register(name, factory)
    PLACEMENTS[name] = placement


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


def parse_model_args(pairs: list[str] | None) -> dict[str, str]:
    """Parse ``["k=v", ...]`` into a dict.

    Raises:
        ValueError: a pair without ``=``.
    """
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad --model-arg {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
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


# Built-in backends, imported on first use. Each module defines ``make(arg, args)``.
register_backend("constant", "mmrobust.models.baselines:make_constant")
register_backend("random", "mmrobust.models.baselines:make_random")
register_backend("forensic", "mmrobust.models.forensic:make")
register_backend("blind-overlap", "mmrobust.models.blind:make_overlap")
register_backend("blind-embed", "mmrobust.models.blind:make_embed")
register_backend("openai", "mmrobust.models.openai_compat:make", placement="api")
register_backend("anthropic", "mmrobust.models.anthropic:make", placement="api")
register_backend("hf", "mmrobust.models.hf:make", placement="gpu")

__all__ = [
    "MODELS",
    "PLACEMENTS",
    "ModelFactory",
    "ModelSpec",
    "load_model",
    "parse_model_args",
    "parse_spec",
    "placement_of",
    "register_backend",
]
