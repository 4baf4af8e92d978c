"""The registry of benchmark families, by the ``Sample.benchmark`` string they own.

It lives here, under every layer, so that :class:`mmrobust.schema.sample.Sample` can refuse
an unknown ``benchmark`` without importing :mod:`mmrobust.families` (a higher layer): the
built-in families are lazy ``"module:attr"`` entries, imported at first use, and a family a
plugin or a user registers (``mmrobust.families.register_family``) is added here. The
public name is :data:`mmrobust.families.FAMILIES`.
"""

from __future__ import annotations

from typing import Any

from mmrobust.registry import Registry, UnknownNameError

FAMILIES: Registry[Any] = Registry("benchmark family", plugins=True)
"""``benchmark`` string -> its ``BenchmarkFamily`` (built-ins registered lazily; plugins
load before the first lookup)."""

FAMILIES.register("tamper", "mmrobust.families.tamper:TAMPER")
FAMILIES.register("mmr", "mmrobust.families.mmr:MMR")
FAMILIES.register("tamper-type", "mmrobust.families.tasks:TYPE")
FAMILIES.register("tamper-when", "mmrobust.families.tasks:WHEN")
FAMILIES.register("tamper-leading", "mmrobust.families.tasks:LEADING")
FAMILIES.register("generic", "mmrobust.families.generic:GENERIC")
FAMILIES.register("consistency", "mmrobust.families.consistency:CONSISTENCY")


def check_benchmark(name: str) -> str:
    """``name`` when a family is registered under it (its module is not imported).

    Raises:
        ValueError: no such family; the message suggests close names ("did you mean").
    """
    if name not in FAMILIES:
        try:
            FAMILIES.get(name)
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None
    return name


__all__ = ["FAMILIES", "check_benchmark"]
