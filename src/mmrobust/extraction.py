"""The result of answer extraction, shared by every policy (pure types).

:class:`Extraction` is what :func:`mmrobust.extract.extract` returns for every mode
(``strict``, ``lenient`` and the reference scorers of ``official``,
:mod:`mmrobust.official_extract`); :func:`ok` and :func:`fail` build one.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmrobust.status import Status


@dataclass(frozen=True)
class Extraction:
    """Result of extracting an option letter from a reply.

    Attributes:
        letter: the extracted option letter (a key of ``options``), or ``None``.
        status: ``Status.OK`` when a letter was found, else ``Status.PARSE_FAIL``.
        rule: which rule decided (``"strict:lone-letter"``, ``"lenient:option-text"``,
            ``"official:first-token"``, ``"none"``...), for auditing.
    """

    letter: str | None
    status: Status
    rule: str


def ok(letter: str, rule: str) -> Extraction:
    """An extracted letter (``Status.OK``) and the rule that decided."""
    return Extraction(letter=letter, status=Status.OK, rule=rule)


def fail(rule: str = "none") -> Extraction:
    """No letter (``Status.PARSE_FAIL``) and the rule that decided."""
    return Extraction(letter=None, status=Status.PARSE_FAIL, rule=rule)


__all__ = ["Extraction", "fail", "ok"]
