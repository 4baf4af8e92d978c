"""``BackendSpec``: everything mmrobust knows about a model backend before loading a model.

One value per backend, registered once (:func:`mmrobust.models.spec.register_backend`, or a
plugin's ``mmrobust.backends`` entry point naming one); from it come the spec grammar's
checks (``name:ARG``), ``mmrobust list models`` (its ``:ARG`` and ``--model-arg`` settings),
where ``--executor ray`` places its replicas (``placement``), which media kinds a run may
send it (``media``), whether the driver of a run builds it to ask what it refuses
(``light``), and the backends table of the docs (``mmrobust.catalog.backends_table``).
Styled after inspect_ai's ``@modelapi`` registration and lm-eval's ``register_model``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmrobust.models.base import MEDIA_KINDS, MediaKind, Model, Placement
from mmrobust.settings_doc import Option, options_of

if TYPE_CHECKING:
    from mmrobust.media.jpeg import FrameEncoding

ModelFactory = Callable[[str | None, Mapping[str, str]], Model]
"""``factory(arg, model_args) -> Model``; raises ``ValueError`` on bad arguments."""


def _resolve(target: Any) -> Any:
    """``target`` itself, or the object a ``"module:attr"`` string names (imported now)."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class BackendSpec:
    """One model backend, declared once.

    Attributes:
        name: the spec's name (``--model NAME[:ARG]``).
        factory: ``make(arg, args) -> Model``, or its lazy ``"module:function"`` (imported
            when a model is built, so listing backends imports no model library).
        placement: where its work runs: ``"api"`` (one Ray replica sends requests),
            ``"gpu"`` (a GPU per replica when the cluster has them) or ``"cpu"``.
        media: the media kinds its models answer (``Model.media_kinds``; ``forensic``:
            video only); a run whose samples show none of them stops before any request.
        light: its factory builds no client and loads no weights, so the driver of a run
            builds one to ask ``cannot_take`` / ``cannot_answer`` before any work is handed
            out (the baselines, ``forensic``).
        frame_encoding: lazy ``"module:function"`` ``function(arg, args) -> FrameEncoding``
            when its frames are not JPEG q95 at the decoded size (computed without a client:
            the run key of a model loaded on Ray replicas).
        options: its ``--model-arg`` settings as a pydantic model (or ``"module:Class"``),
            when it parses them with one (``parse_options``).
        settings: its ``--model-arg`` settings, when it parses a few by hand.
        arg: what ``:ARG`` means (``None``: the spec takes none).
        arg_name: a word for ``:ARG`` in the docs table (``openai:<served-name>``).
        doc: one line for people (``mmrobust list models``, the docs table).
        media_doc: how it sends media, for the docs table (default: the media kinds).
    """

    name: str
    factory: ModelFactory | str
    placement: Placement = "cpu"
    media: tuple[MediaKind, ...] = MEDIA_KINDS
    light: bool = False
    frame_encoding: str | None = None
    options: type[Any] | str | None = None
    settings: tuple[Option, ...] = ()
    arg: str | None = None
    arg_name: str = "arg"
    doc: str = ""
    media_doc: str = ""

    def make(self, arg: str | None, args: Mapping[str, str]) -> Model:
        """Build a model (imports the factory's module now).

        Raises:
            ValueError: the backend rejected its arguments.
        """
        factory: ModelFactory = _resolve(self.factory)
        return factory(arg, args)

    def encoding(self, arg: str | None, args: Mapping[str, str]) -> FrameEncoding:
        """The frame encoding its model would use, from the spec alone (no client).

        Raises:
            ValueError: the backend rejected its arguments.
        """
        from mmrobust.media.jpeg import FrameEncoding

        if self.frame_encoding is None:
            return FrameEncoding()
        encoding: FrameEncoding = _resolve(self.frame_encoding)(arg, args)
        return encoding

    def option_list(self) -> list[Option]:
        """Its ``--model-arg`` settings: the options model's fields, else ``settings``."""
        if self.options is not None:
            return options_of(_resolve(self.options))
        return list(self.settings)

    @property
    def spec_text(self) -> str:
        """``"name:ARG"`` when it takes an arg, else ``"name"``."""
        return f"{self.name}:ARG" if self.arg is not None else self.name


__all__ = ["BackendSpec", "ModelFactory"]
