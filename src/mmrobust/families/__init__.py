"""Benchmark families: one registry of :class:`BenchmarkFamily` values, keyed by ``benchmark``.

The built-in families, one small module each:

* ``tamper`` (:mod:`mmrobust.families.tamper`): MVTamperBench detection F1;
* ``mmr`` (:mod:`mmrobust.families.mmr`): MMR leading questions, RA / MR;
* ``tamper-type``, ``tamper-when``, ``tamper-leading`` (:mod:`mmrobust.families.tasks`):
  the questions of ``mmrobust eval --task type|when|leading``;
* ``generic`` (:mod:`mmrobust.families.generic`): accuracy over any JSONL questions.

Adding one (docs/extending.md, "Add a benchmark family"): build a
:class:`BenchmarkFamily` and call :func:`register_family`; ``eval``, ``rescore``,
``report`` and ``compare`` then handle it with no other change.

Layer: this package sits just above ``datasets`` / ``records`` and below ``metrics``;
it imports no higher layer (the built-in families reach ``metrics/`` and ``report/``
through :func:`mmrobust.families.base.lazy` names).
"""

from __future__ import annotations

from collections.abc import Iterable

from mmrobust.families.base import (
    BenchmarkFamily,
    CardSection,
    Metrics,
    ScoreOptions,
    lazy,
    no_options,
)
from mmrobust.registry import UnknownNameError, origin_of
from mmrobust.schema.benchmarks import FAMILIES

DEFAULT_FAMILY = "generic"
"""The family of a run whose ``run.json`` / ``metrics.json`` name none."""


class UnknownFamilyError(UnknownNameError, ValueError):
    """No family is registered under that ``benchmark`` (the message suggests close names)."""


def get_family(benchmark: str | None) -> BenchmarkFamily:
    """The family registered as ``benchmark`` (``None`` or ``""``: :data:`DEFAULT_FAMILY`).

    Raises:
        UnknownFamilyError: no such family (a ``ValueError`` and a ``KeyError``; the
            message lists close names, "did you mean").
    """
    try:
        return FAMILIES.get(benchmark or DEFAULT_FAMILY)
    except UnknownNameError as exc:
        raise UnknownFamilyError(str(exc)) from None


def get_family_name(benchmark: str) -> str:
    """``benchmark`` itself when a family is registered under it (its module is not imported).

    Raises:
        UnknownFamilyError: no such family ("did you mean").
    """
    if benchmark not in FAMILIES:
        get_family(benchmark)  # raises with close names
    return benchmark


def find_family(benchmark: str | None) -> BenchmarkFamily | None:
    """The family registered as ``benchmark``, or ``None`` (never raises)."""
    return FAMILIES.get(benchmark) if benchmark and benchmark in FAMILIES else None


def register_family(
    family: BenchmarkFamily, *, replace: bool = False, origin: str | None = None
) -> BenchmarkFamily:
    """Register ``family`` under ``family.id``, and each of its ``loaders`` as a data format.

    Args:
        family: the family.
        replace: allow replacing a family already registered under that id.
        origin: where it comes from, for ``mmrobust list`` (default: the module of its
            ``score``, or the plugin being loaded).

    Returns:
        ``family`` (so a module can write ``TOY = register_family(BenchmarkFamily(...))``).

    Raises:
        ValueError: ``family.id`` (or a loader's format name) is already taken and
            ``replace`` is false.
    """
    from mmrobust.datasets.base import FORMATS

    where = origin or origin_of(family.score)
    if replace:
        FAMILIES.unregister(family.id)
        for name in family.loaders:
            FORMATS.unregister(name)
    FAMILIES.register(family.id, family, origin=where)
    for name, loader in family.loaders.items():
        if FORMATS.peek(name) is not loader:
            FORMATS.register(name, loader, origin=where)
    return family


def register_all_loaders() -> None:
    """Register the data formats (``loaders``) of every registered family, a lazily
    registered one included (its module is imported now): ``FORMATS`` calls this before
    its first lookup, so ``--format NAME`` finds a format its family declares."""
    from mmrobust.datasets.base import FORMATS

    for name in FAMILIES.names():
        family = FAMILIES.get(name)
        for fmt, loader in family.loaders.items():
            if FORMATS.peek(fmt) is None:
                FORMATS.register(fmt, loader, origin=FAMILIES.origin(name))


def adopt(obj: object, name: str, origin: str) -> None:
    """Register a ``BenchmarkFamily`` that a plugin entry point names
    (:mod:`mmrobust.plugins`); already registered as it is: nothing happens.

    Raises:
        TypeError: ``obj`` is not a ``BenchmarkFamily``.
    """
    if not isinstance(obj, BenchmarkFamily):
        raise TypeError(f"{type(obj).__name__} is not a BenchmarkFamily")
    if FAMILIES.peek(obj.id) is not obj:
        register_family(obj, origin=origin)


def families() -> list[BenchmarkFamily]:
    """Every registered family, in report order (:attr:`BenchmarkFamily.order`, then id)."""
    return sorted((FAMILIES.get(n) for n in FAMILIES.names()), key=lambda f: (f.order, f.id))


def family_ids() -> list[str]:
    """The registered ``benchmark`` strings, sorted."""
    return FAMILIES.names()


def sorted_by_family(items: Iterable[str]) -> list[str]:
    """``benchmark`` strings in report order (unknown ones last, by name)."""

    def key(b: str) -> tuple[int, str]:
        f = find_family(b)
        return (f.order if f else 99, b)

    return sorted(items, key=key)


__all__ = [
    "DEFAULT_FAMILY",
    "FAMILIES",
    "BenchmarkFamily",
    "CardSection",
    "Metrics",
    "ScoreOptions",
    "UnknownFamilyError",
    "adopt",
    "families",
    "family_ids",
    "find_family",
    "get_family",
    "get_family_name",
    "lazy",
    "no_options",
    "register_all_loaders",
    "register_family",
    "sorted_by_family",
]
