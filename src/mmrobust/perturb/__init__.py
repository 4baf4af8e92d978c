"""``mmrobust perturb``: perturbed copies of any image or video question set, each question
linked to its clean sample, scored in pairs by the ``consistency`` family.

* :mod:`mmrobust.perturb.image`: the image effects and their severity tables;
* :mod:`mmrobust.perturb.video`: the video effects (tamper effects, ``reverse``, ``frame_rate``);
* :mod:`mmrobust.perturb.plan`: names, seeds and jobs (pure);
* :mod:`mmrobust.perturb.build`: :func:`perturb`, which writes the set.

Layer: beside ``tamper`` (reads datasets and media, uses the tamper effects and writer).
"""

from __future__ import annotations

from mmrobust.perturb.build import PerturbResult, perturb
from mmrobust.perturb.plan import PerturbError

__all__ = ["PerturbError", "PerturbResult", "perturb"]
