"""Answer a task question from a detector's verdict (pure; used by ``forensic``).

A detector that predicts whether a clip is tampered, the effect and the window
can answer every task by the options' keys (``Request.option_keys``):

* ``type``: ``none`` when it sees no tampering, else its predicted effect; when
  that effect is not an option (``flip`` in a set of the paper's five) the
  next of its ranked candidates that is one; none of them: no answer.
* ``when``: ``nowhere`` when it sees no tampering, else the third of its
  predicted window, by the same rule as the truth (:func:`mmrobust.tasks.truth.third_of`).
* ``leading`` negative (presupposes ``Y``): the option rejecting the premise
  unless its own predicted effect is ``Y``; then the duration closest (in
  log-time) to its predicted window's length.
* a yes/no question (``detect``) has no keys: the detector answers it itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mmrobust.tasks.truth import NONE, NOWHERE, REJECT, third_of


def _letter(keys: Mapping[str, str], key: str) -> str | None:
    return next((letter for letter, k in keys.items() if k == key), None)


def duration_s(key: str) -> float | None:
    """Seconds of a leading duration key (``"rotation:0.5s"`` -> 0.5), else ``None``."""
    _, _, tail = key.rpartition(":")
    if not tail.endswith("s"):
        return None
    try:
        return float(tail[:-1])
    except ValueError:
        return None


def answer_from_detection(
    keys: Mapping[str, str],
    *,
    tampered: bool,
    types: Sequence[str],
    window: tuple[int, int] | None,
    n_frames: int,
    fps: float,
) -> str | None:
    """The option letter a detector's verdict answers, or ``None`` when it cannot answer.

    Args:
        keys: letter -> option key as displayed (``Request.option_keys``).
        tampered: the detector's decision.
        types: its effect names, best first (``types[0]`` is its predicted type).
        window: its predicted window ``[start, end)`` in the clip's frames, or ``None``.
        n_frames: frames it decoded (the timeline of ``window``).
        fps: frames per second (to express the window's length in seconds).
    """
    values = set(keys.values())
    if NONE in values:  # type (and the positive question of a leading pair)
        if not tampered:
            return _letter(keys, NONE)
        return next((ltr for t in types if (ltr := _letter(keys, t)) is not None), None)
    if NOWHERE in values:
        if not tampered or window is None or n_frames < 1:
            return _letter(keys, NOWHERE)
        start = min(max(0, window[0]), n_frames)
        end = min(max(start, window[1]), n_frames)
        return _letter(keys, third_of(start, end, n_frames))
    if REJECT in values:
        accept = {k: d for k in values if k != REJECT and (d := duration_s(k)) is not None}
        presupposed = {k.rpartition(":")[0] for k in accept}
        if not tampered or not types or types[0] not in presupposed or not accept:
            return _letter(keys, REJECT)
        length = (window[1] - window[0]) / fps if window is not None and fps > 0 else 0.0
        seconds = max(length, 1.0 / max(fps, 1.0))
        best = min(accept, key=lambda k: abs(math.log(accept[k]) - math.log(seconds)))
        return _letter(keys, best)
    return None


__all__ = ["answer_from_detection", "duration_s"]
