"""Plugins: families, backends and tamper effects from packages outside mmrobust.

A plugin package declares entry points in one of three groups (:data:`GROUPS`) in its
``pyproject.toml``::

    [project.entry-points."mmrobust.families"]
    pope = "mmrobust_pope.family"            # a module: importing it registers its parts
    [project.entry-points."mmrobust.backends"]
    echo = "mmrobust_pope.echo:ECHO"          # an object: a BackendSpec, registered for it
    [project.entry-points."mmrobust.effects"]
    posterize = "mmrobust_pope.effects:Posterize"   # an Effect subclass

An entry point names either a **module**, whose import registers its parts through the
public calls (``register_family``, ``register_backend``, ``register_effect`` /
``@EFFECTS.register``), or the **object** to register: a ``BenchmarkFamily`` (group
``mmrobust.families``), a ``BackendSpec`` (``mmrobust.backends``) or an ``Effect`` subclass
(``mmrobust.effects``). A module that is not installed as a package is named in
:data:`ENV_VAR` (``MMROBUST_PLUGINS=mod1,mod2`` or ``mod:OBJECT``; it must be importable,
e.g. on ``PYTHONPATH``).

:func:`load_plugins` loads them all, once per process: the ``mmrobust`` command calls it
first, every registry that plugins can fill (models, families, effects, data formats) calls
it before its first lookup, and every Ray worker runs it before it takes work
(``distributed.session``: the job's ``worker_process_setup_hook``, and again in each actor
and task). A plugin that fails to import or to register is one warning naming it
(logger ``mmrobust.plugins``) and is left out; nothing else stops. :func:`loaded` and
:func:`failures` say what was loaded; ``mmrobust list`` shows each entry's origin
(:func:`mmrobust.registry.Registry.origin`).

Styled after inspect_ai's ``_util/entrypoints.py`` (``importlib.metadata.entry_points``,
one load per process). Layer: base; the object form reaches the registering function of
the higher layer through a lazy ``"module:attr"`` name (:data:`ADOPTERS`).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from dataclasses import dataclass
from types import ModuleType

log = logging.getLogger(__name__)

GROUPS: tuple[str, ...] = ("mmrobust.families", "mmrobust.backends", "mmrobust.effects")
"""The entry-point groups a plugin package may declare."""

ENV_VAR = "MMROBUST_PLUGINS"
"""Comma-separated modules (or ``module:object``) to load as plugins, installed or not."""

ADOPTERS: dict[str, str] = {
    "mmrobust.families": "mmrobust.families:adopt",
    "mmrobust.backends": "mmrobust.models.spec:adopt",
    "mmrobust.effects": "mmrobust.tamper.effects.base:adopt",
}
"""Group -> lazy ``"module:function"`` that registers an object an entry point names:
``function(obj, name, origin)``; raises ``TypeError`` for an object of the wrong kind."""

BUILT_IN = "built-in"
"""The origin of everything that ships inside mmrobust."""


@dataclass(frozen=True)
class Plugin:
    """One plugin entry.

    Attributes:
        group: its entry-point group, or :data:`ENV_VAR`.
        name: the entry point's name (the module's for :data:`ENV_VAR`).
        value: ``"module"`` or ``"module:object"``.
        origin: where it came from, for people (``"plugin mmrobust-pope 0.1
            (mmrobust_pope.family)"``, ``"MMROBUST_PLUGINS mymod"``).
    """

    group: str
    name: str
    value: str
    origin: str


_lock = threading.RLock()
_state: dict[str, bool] = {"started": False}
_loaded: list[Plugin] = []
_failed: list[tuple[Plugin, str]] = []
_current: list[str] = []


def current_origin() -> str | None:
    """The origin of the plugin being loaded now in this process (``None``: none is)."""
    return _current[-1] if _current else None


def discover() -> list[Plugin]:
    """The plugins declared by installed packages (:data:`GROUPS`) and by :data:`ENV_VAR`,
    in that order, each once (a package found twice on ``sys.path`` counts once)."""
    from importlib.metadata import entry_points

    out: list[Plugin] = []
    seen: set[tuple[str, str]] = set()
    for group in GROUPS:
        for ep in entry_points(group=group):
            if (group, ep.value) in seen:
                continue
            seen.add((group, ep.value))
            dist = getattr(ep, "dist", None)
            where = f"{dist.name} {dist.version}" if dist is not None else "a package"
            out.append(Plugin(group, ep.name, ep.value, f"plugin {where} ({ep.value})"))
    for item in os.environ.get(ENV_VAR, "").split(","):
        value = item.strip()
        if value and (ENV_VAR, value) not in seen:
            seen.add((ENV_VAR, value))
            out.append(Plugin(ENV_VAR, value.partition(":")[0], value, f"{ENV_VAR} {value}"))
    return out


def _adopt(plugin: Plugin, obj: object) -> None:
    """Register ``obj`` that ``plugin`` names (not a module) with its group's adopter."""
    groups = [plugin.group] if plugin.group in ADOPTERS else list(ADOPTERS)
    for group in groups:
        module, _, attr = ADOPTERS[group].partition(":")
        adopter = getattr(importlib.import_module(module), attr)
        try:
            adopter(obj, plugin.name, plugin.origin)
            return
        except TypeError:
            if len(groups) == 1:
                raise
    raise TypeError(
        f"{type(obj).__name__} is not a BenchmarkFamily, a BackendSpec or an Effect subclass"
    )


def load_one(plugin: Plugin) -> bool:
    """Import ``plugin`` and register what it names; a failure is one warning, ``False``."""
    module_name, _, attr = plugin.value.partition(":")
    _current.append(plugin.origin)
    try:
        module = importlib.import_module(module_name.strip())
        obj: object = module
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
        if not isinstance(obj, ModuleType):
            _adopt(plugin, obj)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
        _failed.append((plugin, reason.rstrip(": ")))
        log.warning(
            "mmrobust: plugin %r (%s) was not loaded: %s",
            plugin.name,
            plugin.origin,
            reason.rstrip(": "),
        )
        return False
    finally:
        _current.pop()
    _loaded.append(plugin)
    return True


def load_plugins() -> list[Plugin]:
    """Load every plugin (:func:`discover`) once per process; later calls return at once.

    Returns:
        the plugins loaded by this process so far (failed ones are in :func:`failures`).
    """
    with _lock:
        if _state["started"]:
            return list(_loaded)
        _state["started"] = True  # set first: a plugin's own lookups do not load again
        try:
            found = discover()
        except Exception as exc:
            log.warning("mmrobust: plugins could not be listed: %s", exc)
            found = []
        for plugin in found:
            load_one(plugin)
        return list(_loaded)


def loaded() -> list[Plugin]:
    """The plugins this process loaded."""
    return list(_loaded)


def failures() -> list[tuple[Plugin, str]]:
    """The plugins this process could not load, each with its one-line reason."""
    return list(_failed)


__all__ = [
    "ADOPTERS",
    "BUILT_IN",
    "ENV_VAR",
    "GROUPS",
    "Plugin",
    "current_origin",
    "discover",
    "failures",
    "load_one",
    "load_plugins",
    "loaded",
]
