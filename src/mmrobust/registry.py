"""One small generic registry with lazy loading and "did you mean" errors.

Styled after lm-evaluation-harness ``lm_eval/api/registry.py``: an entry is
either an object or a ``"module:attribute"`` string that is imported the first
time the entry is used, so heavy optional dependencies (torch, transformers)
are only imported when a user asks for them.

A registry that outside packages may fill (``plugins=True``: models, families, effects,
data formats) loads the plugins (:func:`mmrobust.plugins.load_plugins`) before its first
lookup, and records where each entry came from (:meth:`Registry.origin`). ``fill``: a lazy
``"module:function"`` called once before the first lookup to add entries that other
declarations carry (the data formats of the families).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from mmrobust import plugins

T = TypeVar("T")


def origin_of(obj: object) -> str:
    """Where an entry comes from: :data:`mmrobust.plugins.BUILT_IN` for mmrobust's own code,
    the plugin being loaded, else ``"module <name>"`` of the object (a ``"module:attr"``
    string names its module)."""
    module = obj.partition(":")[0] if isinstance(obj, str) else getattr(obj, "__module__", "")
    if module == "mmrobust" or str(module).startswith("mmrobust."):
        return plugins.BUILT_IN
    return plugins.current_origin() or f"module {module or '?'}"


class UnknownNameError(KeyError):
    """Raised when a registry lookup fails; the message lists close matches."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that.
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """A named mapping from string keys to objects, loaded lazily.

    Args:
        kind: what the registry holds, used in error messages ("model", "tamper effect").
    """

    def __init__(self, kind: str, *, plugins: bool = False, fill: str | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._origins: dict[str, str] = {}
        self._plugins = plugins
        self._fill = fill

    def _ready(self) -> None:
        """Load the plugins and run ``fill`` once, before the first lookup."""
        if self._plugins:
            plugins.load_plugins()
        if self._fill is not None:
            fill, self._fill = self._fill, None
            module_name, _, attr = fill.partition(":")
            getattr(importlib.import_module(module_name), attr)()

    def register(
        self, name: str, obj: T | str | None = None, *, origin: str | None = None
    ) -> Callable[[T], T]:
        """Register ``obj`` (or a lazy ``"module:attr"`` path) under ``name``.

        Usable as a decorator: ``@registry.register("dropping")``. ``origin``: where it
        comes from (default :func:`origin_of` the object; ``mmrobust list`` shows it).

        Raises:
            ValueError: ``name`` is already registered with a different object.
        """

        def _add(value: T | str) -> None:
            old = self._entries.get(name)
            if old is not None and old is not value and not isinstance(old, str):
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = value
            if old is None or name not in self._origins:
                self._origins[name] = origin or origin_of(value)

        if obj is not None:
            _add(obj)

        def decorator(value: T) -> T:
            _add(value)
            return value

        return decorator

    def get(self, name: str) -> T:
        """Return the object registered as ``name``, importing it if lazy.

        Raises:
            UnknownNameError: no such name; the message suggests close matches.
        """
        if name not in self._entries:
            self._ready()
        if name not in self._entries:
            close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}.{hint} Known: {', '.join(sorted(self._entries))}"
            )
        entry = self._entries[name]
        if isinstance(entry, str):
            module_name, _, attr = entry.partition(":")
            loaded: T = getattr(importlib.import_module(module_name), attr)
            self._entries[name] = loaded
            return loaded
        return entry

    def peek(self, name: str) -> T | str | None:
        """The entry as stored (a lazy entry stays its ``"module:attr"`` string), or ``None``;
        loads nothing."""
        return self._entries.get(name)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (nothing happens when it is not registered)."""
        self._entries.pop(name, None)
        self._origins.pop(name, None)

    def origin(self, name: str) -> str:
        """Where ``name`` came from: ``"built-in"``, ``"plugin <package> <version>
        (<entry point>)"``, ``"MMROBUST_PLUGINS <module>"`` or ``"module <name>"``."""
        return self._origins.get(name, plugins.BUILT_IN)

    def names(self) -> list[str]:
        """All registered names, sorted."""
        self._ready()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._ready()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


__all__ = ["Registry", "UnknownNameError", "origin_of"]
