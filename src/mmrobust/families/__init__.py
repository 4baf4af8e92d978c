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

from mmrobust.families.base import BenchmarkFamily, Metrics, ScoreOptions, lazy, no_options
from mmrobust.registry import Registry, UnknownNameError

FAMILIES: Registry[BenchmarkFamily] = Registry("benchmark family")
"""``benchmark`` string -> its family (built-ins registered lazily)."""

FAMILIES.register("tamper", "mmrobust.families.tamper:TAMPER")
FAMILIES.register("mmr", "mmrobust.families.mmr:MMR")
FAMILIES.register("tamper-type", "mmrobust.families.tasks:TYPE")
FAMILIES.register("tamper-when", "mmrobust.families.tasks:WHEN")
FAMILIES.register("tamper-leading", "mmrobust.families.tasks:LEADING")
FAMILIES.register("generic", "mmrobust.families.generic:GENERIC")

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


def register_family(family: BenchmarkFamily, *, replace: bool = False) -> BenchmarkFamily:
    """Register ``family`` under ``family.id``, and each of its ``loaders`` as a data format.

    Args:
        family: the family.
        replace: allow replacing a family already registered under that id.

    Returns:
        ``family`` (so a module can write ``TOY = register_family(BenchmarkFamily(...))``).

    Raises:
        ValueError: ``family.id`` (or a loader's format name) is already taken and
            ``replace`` is false.
    """
    from mmrobust.datasets.base import FORMATS

    if replace:
        FAMILIES.unregister(family.id)
        for name in family.loaders:
            FORMATS.unregister(name)
    FAMILIES.register(family.id, family)
    for name, loader in family.loaders.items():
        FORMATS.register(name, loader)
    return family


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
    "Metrics",
    "ScoreOptions",
    "UnknownFamilyError",
    "families",
    "family_ids",
    "find_family",
    "get_family",
    "get_family_name",
    "lazy",
    "no_options",
    "register_family",
    "sorted_by_family",
]
