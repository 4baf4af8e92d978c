"""One small generic registry with lazy loading and "did you mean" errors.

Styled after lm-evaluation-harness ``lm_eval/api/registry.py``: an entry is
either an object or a ``"module:attribute"`` string that is imported the first
time the entry is used, so heavy optional dependencies (torch, transformers)
are only imported when a user asks for them.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised when a registry lookup fails; the message lists close matches."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that.
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """A named mapping from string keys to objects, loaded lazily.

    Args:
        kind: what the registry holds, used in error messages ("model", "tamper effect").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, obj: T | str | None = None) -> Callable[[T], T]:
        """Register ``obj`` (or a lazy ``"module:attr"`` path) under ``name``.

        Usable as a decorator: ``@registry.register("dropping")``.

        Raises:
            ValueError: ``name`` is already registered with a different object.
        """

        def _add(value: T | str) -> None:
            old = self._entries.get(name)
            if old is not None and old is not value and not isinstance(old, str):
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = value

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

    def unregister(self, name: str) -> None:
        """Remove ``name`` (nothing happens when it is not registered)."""
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


__all__ = ["Registry", "UnknownNameError"]
