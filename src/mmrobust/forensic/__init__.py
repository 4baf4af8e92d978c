"""The classical pixel-only tamper detector as a library (rules and thresholds frozen).

* ``signals.py``: per-frame signals of a clip's luma (differences, lag fits, darkness),
  extracted in one streaming pass; ``trace.py``: the ``SignalTrace`` / ``Event`` they fill.
* ``structure.py``: the signals explained as tamper candidates (masking, rotation,
  flips, repetition, substitution, dropping), each with a score; its primitives
  (``Candidate``, ramps, baselines, seam signals) are in ``primitives.py`` and the
  seam-based finders (substitution, dropping, paired seams) in ``seams.py``.
* ``thresholds.py``: the calibrated thresholds (``DEFAULT``) and their version.
* ``detector.py``: streaming scan and the decision (:class:`Verdict`, :func:`decide`,
  :func:`analyse_video`).
* ``footage.py``: synthetic footage used to calibrate and test it.

Below ``models/`` in the layering: it imports only ``media`` (to decode) and NumPy /
OpenCV. ``mmrobust.models.forensic`` is the ``Model`` adapter (``--model forensic``);
see ``docs/forensic.md``.
"""

from __future__ import annotations

from mmrobust.forensic.detector import PRIORS, Verdict, analyse_video, decide, decide_stream
from mmrobust.forensic.thresholds import DEFAULT, THRESHOLDS_VERSION, Thresholds

__all__ = [
    "DEFAULT",
    "PRIORS",
    "THRESHOLDS_VERSION",
    "Thresholds",
    "Verdict",
    "analyse_video",
    "decide",
    "decide_stream",
]
