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
    gemini:gemini-2.5-flash        Google's Gemini API (GEMINI_API_KEY)
    hf:Qwen/Qwen2-VL-2B-Instruct   a local or hub transformers checkpoint

Factories are registered lazily (``"module:function"``) so that importing
mmrobust never imports torch. Each backend is registered with its
``placement`` (``"api"`` / ``"gpu"`` / ``"cpu"``, ``models.base.Placement``), so
an executor can place replicas from the spec alone, before any model is loaded
(``distributed/``): :func:`register_backend`, :func:`placement_of`. What a model can
answer is asked of :func:`driver_model` before any work is handed out, on every executor.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from mmrobust.models.backend_spec import BackendSpec, ModelFactory
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
from mmrobust.models.builtin import BUILT_IN_BACKENDS
from mmrobust.models.credentials import check_spec, hold_args, is_secret_name, reveal
from mmrobust.redact import MASK, redact
from mmrobust.registry import Registry, UnknownNameError, origin_of

if TYPE_CHECKING:
    from mmrobust.media.jpeg import FrameEncoding

MODELS: Registry[BackendSpec] = Registry("model", plugins=True)
"""Backend name -> its :class:`BackendSpec` (built-ins: :mod:`mmrobust.models.builtin`;
plugins' load before the first lookup)."""


def register_backend(
    name: str,
    factory: ModelFactory | str,
    *,
    placement: Placement = "cpu",
    frame_encoding: str | None = None,
    media: tuple[MediaKind, ...] | None = None,
    light: bool = False,
    options: type[Any] | str | None = None,
    arg: str | None = None,
    doc: str = "",
    origin: str | None = None,
    arg_name: str = "arg",
    media_doc: str = "",
) -> BackendSpec:
    """Register a backend: builds its :class:`BackendSpec` (see there for each field) and
    registers it under ``name``; the same declaration twice is one registration.

    ``factory``: ``make(arg, args) -> Model`` or its lazy ``"module:function"``;
    ``frame_encoding``: lazy ``"module:function"`` ``function(arg, args) -> FrameEncoding``
    when its frames are not JPEG q95 at the decoded size; ``media``: the kinds its models
    answer when fewer than all; ``light``: the factory builds no client and loads no
    weights, so the driver of a run builds one to ask ``cannot_take`` / ``cannot_answer``
    before any work is handed out (declare it for a backend whose models refuse some data
    by their arguments, or Ray replicas are asked anyway); ``options``: its pydantic
    options model (``mmrobust list models`` shows its fields); ``arg``: what ``:ARG``
    means; ``doc``: one line for people; ``arg_name`` / ``media_doc``: the word for ``:ARG``
    and how it sends media, in the backends table.

    Returns:
        the registered spec.

    Raises:
        ValueError: ``name`` is already registered with another declaration.
    """
    spec = BackendSpec(
        name,
        factory,
        placement=placement,
        media=tuple(media) if media is not None else MEDIA_KINDS,
        light=light,
        frame_encoding=frame_encoding,
        options=options,
        arg=arg,
        doc=doc,
        arg_name=arg_name,
        media_doc=media_doc,
    )
    return add_backend(spec, origin=origin or origin_of(factory))


def add_backend(spec: BackendSpec, *, origin: str | None = None) -> BackendSpec:
    """Register a :class:`BackendSpec` under ``spec.name`` (the same one twice: nothing
    happens).

    Raises:
        ValueError: another declaration is registered under that name.
    """
    old = MODELS.peek(spec.name)
    if old == spec:
        return spec
    if old is not None:
        raise ValueError(f"model {spec.name!r} is already registered")
    MODELS.register(spec.name, spec, origin=origin or origin_of(spec.factory))
    return spec


def adopt(obj: object, name: str, origin: str) -> None:
    """Register a :class:`BackendSpec` that a plugin entry point names (:mod:`mmrobust.plugins`).

    Raises:
        TypeError: ``obj`` is not a ``BackendSpec``.
    """
    if not isinstance(obj, BackendSpec):
        raise TypeError(f"{type(obj).__name__} is not a BackendSpec")
    add_backend(obj, origin=origin)


def backend(name: str) -> BackendSpec:
    """The spec of backend ``name``.

    Raises:
        UnknownNameError: unknown name (the message suggests close names; a name close to no
            backend, such as ``gpt-4o``, is shown after the backends that take a model name).
    """
    try:
        return MODELS.get(name)
    except UnknownNameError as exc:
        if "Did you mean" in str(exc):
            raise
        first = "hf" if "/" in name else "openai"
        second = "openai" if first == "hf" else "hf"
        head, _, known = str(exc).partition(" Known: ")
        raise UnknownNameError(
            f"{head} A model name goes after its backend: {first}:{name} or {second}:{name}"
            f" (mmrobust list models). Known: {known}"
        ) from None


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
    with fewer; every kind for an unknown name), known before any model is loaded
    (``mmrobust run`` plans with it)."""
    return MODELS.get(name).media if name in MODELS else MEDIA_KINDS


def placement_of(name: str) -> Placement:
    """The placement a backend was registered with (``"cpu"`` when registered without one,
    or unknown)."""
    return MODELS.get(name).placement if name in MODELS else "cpu"


def parse_spec(spec: str, model_args: Mapping[str, str] | None = None) -> ModelSpec:
    """Split ``"name:arg"`` into a ``ModelSpec`` whose every form is fit to store and print.

    A credential in the spec's text or a setting is refused; a URL's user and password in a
    setting is held in this process's memory, the spec's ``args`` holding ``***@`` in its
    place (``models/credentials.py``; :func:`load_model` gives it back to the factory).

    Raises:
        ValueError: empty spec or empty name; a literal credential (one line naming
            ``api_key_env``, not the value).
    """
    spec = spec.strip()
    name, sep, arg = spec.partition(":")
    if not name:
        raise ValueError(f"bad model spec {redact(spec)!r}: expected NAME or NAME:ARG")
    check_spec(spec)
    args = hold_args(model_args or {})
    return ModelSpec(name=name, arg=arg if sep else None, args=args)


_SWALLOWED = re.compile(r",\s*[A-Za-z_][A-Za-z0-9_]*=")
"""``,key=`` inside one ``--model-arg`` value: several settings joined by commas."""


def _shown(key: str, value: str) -> str:
    """A setting's value as an error message may quote it: ``***`` for a secret-named
    setting, else with URL credentials, tokens and secret parameters masked."""
    return MASK if is_secret_name(key) else redact(value)


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
            raise ValueError(
                f"--model-args gives {key!r} twice ({_shown(key, out[key])!r} and "
                f"{_shown(key, value)!r})"
            )
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
    A key may come from either; given twice with different values (in both, or in two
    ``--model-arg``) it is an error naming where.

    The result is fit to store and print: a URL's user and password is held in memory
    (``http://***@host/v1`` in its place), any other literal credential refused
    (:func:`mmrobust.models.credentials.hold_args`).

    Raises:
        ValueError: a pair without ``=``; a ``--model-arg`` value that looks like a
            swallowed comma list (``base_url=http://x,concurrency=4``: the URL would
            silently become ``http://x,concurrency=4``), with the fix; a
            :func:`split_model_args` error; a literal credential (one line naming
            ``api_key_env``).
    """
    out: dict[str, str] = {}
    for text in comma_lists or []:
        out.update(split_model_args(text))
    from_pairs: set[str] = set()
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad --model-arg {pair!r}: expected KEY=VALUE")
        key, value = key.strip(), value.strip()  # spaces around "=" are not part of either
        if not value.lstrip().startswith(("{", "[")) and _SWALLOWED.search(value):
            shown = f"{key}={_shown(key, value)}"
            raise ValueError(
                f"--model-arg {shown!r} looks like several settings joined by commas; give "
                f"each its own --model-arg, or pass them all as --model-args {shown}"
            )
        if key in out and out[key] != value:
            if key in from_pairs:
                raise ValueError(
                    f"{key!r} is given twice by --model-arg ({_shown(key, out[key])!r} and "
                    f"{_shown(key, value)!r}); "
                    "give it once"
                )
            raise ValueError(
                f"{key!r} is given by --model-args ({_shown(key, out[key])!r}) and "
                f"--model-arg ({_shown(key, value)!r})"
            )
        out[key] = value
        from_pairs.add(key)
    return hold_args(out)


def load_model(spec: str | ModelSpec, model_args: Mapping[str, str] | None = None) -> Model:
    """Build the model a spec names.

    Raises:
        UnknownNameError: unknown model name (the message suggests close names).
        ValueError: the backend rejected its arguments.
    """
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec, model_args)
    # the one place a held password goes
    return backend(parsed.name).make(parsed.arg, reveal(parsed.args))


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
    if backend(parsed.name).light:  # raises as a local load would (close names)
        return load_model(parsed)
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
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec, model_args)
    if parsed.name not in MODELS:
        from mmrobust.media.jpeg import FrameEncoding

        return FrameEncoding()
    return MODELS.get(parsed.name).encoding(parsed.arg, parsed.args)


for _builtin in BUILT_IN_BACKENDS:
    MODELS.register(_builtin.name, _builtin)

# Google's Gemini API, declared as a plugin declares a backend: its module plus this one call.
register_backend(
    "gemini",
    "mmrobust.models.gemini:make",
    placement="api",
    frame_encoding="mmrobust.models.gemini:frame_encoding",
    options="mmrobust.models.gemini:GeminiOptions",
    arg="the Gemini model name (required), e.g. gemini-2.5-flash",
    arg_name="model",
    doc="Google's native Gemini API (`POST /v1beta/models/<model>:generateContent`; "
    "GEMINI_API_KEY or GOOGLE_API_KEY)",
    media_doc="sampled frames as base64 JPEG `inline_data` parts, or the video file as one "
    "inline `video/mp4` part (`video=true`)",
)

__all__ = [
    "MODELS",
    "BackendSpec",
    "ModelFactory",
    "ModelSpec",
    "UnloadedModel",
    "add_backend",
    "adopt",
    "backend",
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
