"""The pixel-only forensic tamper detector (``--model forensic``).

``make(arg, args)`` builds a ``ForensicDetector``; ``--model-arg prior=middle``
turns the location prior on (off by default). See ``docs/forensic.md``.
"""

from __future__ import annotations

from collections.abc import Mapping

from mmrobust.models.base import Model
from mmrobust.models.forensic.detector import PRIORS, ForensicDetector, Verdict, decide
from mmrobust.models.forensic.thresholds import DEFAULT, THRESHOLDS_VERSION, Thresholds

_KNOWN_ARGS = ("prior",)


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory registered as ``forensic`` in ``mmrobust.models.spec``.

    Args:
        arg: must be ``None`` (``forensic`` takes no ``:arg``).
        args: ``prior`` = "none" (default) or "middle".

    Raises:
        ValueError: an ``:arg``, an unknown key, or an unknown prior.
    """
    if arg:
        raise ValueError(f"forensic takes no ':{arg}'; use --model-arg prior=middle")
    unknown = sorted(set(args) - set(_KNOWN_ARGS))
    if unknown:
        raise ValueError(f"unknown forensic model args {unknown}; known: {list(_KNOWN_ARGS)}")
    prior = args.get("prior", "none")
    if prior not in PRIORS:
        raise ValueError(f"bad prior {prior!r}; expected one of {list(PRIORS)}")
    return ForensicDetector(prior=prior)


__all__ = [
    "DEFAULT",
    "PRIORS",
    "THRESHOLDS_VERSION",
    "ForensicDetector",
    "Thresholds",
    "Verdict",
    "decide",
    "make",
]
