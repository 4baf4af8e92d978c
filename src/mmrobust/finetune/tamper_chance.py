"""Chance levels of a ``tamper-data`` set, per task, from its own conversations (issue 31).

What a model scores without learning anything about the frames, on exactly the
conversations built (``OUT/tamper_data.json`` ``chance``, held-out side), so a
fine-tuned model's held-out figures have their floor beside them:

* ``detect`` (the paper's yes/no, scored as ``eval`` scores it: F1 per tamper type on
  that type's clips plus all originals, their mean): the always-"Yes" and coin-flip F1
  (:func:`mmrobust.metrics.chance.detection_chance`, the figures the robustness card,
  ``compare`` and the console print), the always-"Yes" accuracy (the tampered share) and
  the majority-class accuracy;
* ``type`` / ``when`` / ``leading`` (multiple choice): the expected accuracy of a
  uniform guess over the options (``1/K``; the mean of ``1/K`` over the questions when
  ``K`` differs, as in ``leading``, whose negative questions have 4 options) and the
  majority-option accuracy (always giving the most common right answer: the class
  prior a model can learn from the training set without looking), from
  :func:`mmrobust.metrics.chance.uniform_guess_chance`.

Pure functions over the records' ``meta`` (``task``, ``effect``, ``truth``,
``n_options``, as :func:`mmrobust.finetune.tamper_data.conversations_of` writes them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from mmrobust.metrics.chance import detection_chance, detection_counts, uniform_guess_chance


def detect_chance(effects: Sequence[str]) -> dict[str, Any]:
    """Chance levels of the yes/no question on clips of these ``effects`` (``original`` = No).

    Returns:
        ``n``; ``always_yes_f1`` (fraction: the mean over tamper types of ``2t / (2t + o)``,
        ``t`` clips of the type, ``o`` originals; ``None`` without a tampered clip);
        ``coin_flip_f1`` (the same mean of ``2t / (3t + o)``);
        ``always_yes_accuracy`` (tampered share); ``majority_accuracy`` and ``majority``
        (``"Yes"`` or ``"No"``; ``"Yes"`` on a tie, what always-Yes answers).
    """
    counts, o = detection_counts(effects)
    t = sum(counts.values())
    n = t + o
    guess = detection_chance(counts, o)
    return {
        "n": n,
        "always_yes_f1": guess["always_yes"]["overall"],
        "coin_flip_f1": guess["coin_flip"]["overall"],
        "always_yes_accuracy": t / n if n else None,
        "majority_accuracy": max(t, o) / n if n else None,
        "majority": "Yes" if t >= o else "No",
    }


def options_chance(truths: Sequence[str], n_options: Sequence[int]) -> dict[str, Any]:
    """Chance levels of multiple-choice questions with these right answers (option keys)
    and option counts.

    Returns:
        ``n``; ``n_options`` (the distinct ``K``, sorted); ``uniform_accuracy`` (``1/K``, or
        the mean of ``1/K`` over the questions); ``majority_accuracy`` (share of the most
        common right answer), ``majority`` (that key; the first in sorted order on a tie)
        and ``majority_tied`` (how many keys share that count).

    Raises:
        ValueError: no question, or ``truths`` and ``n_options`` of different lengths.
    """
    if not truths or len(truths) != len(n_options):
        raise ValueError(f"need one option count per question, got {len(truths)} and "
                         f"{len(n_options)}")  # fmt: skip
    counts = Counter(truths)
    labels = sorted(counts)
    support = [counts[k] for k in labels]
    ks = sorted(set(n_options))
    # the uniform guess and the majority, as eval's
    base = uniform_guess_chance(labels, support, ks[0])
    uniform = base["accuracy"] if len(ks) == 1 else sum(1 / k for k in n_options) / len(n_options)
    return {
        "n": len(truths),
        "n_options": ks,
        "uniform_accuracy": uniform,
        "majority_accuracy": base["majority"],
        "majority": base["majority_class"],
        "majority_tied": support.count(max(support)),
    }


def chance_levels(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Chance levels per task of conversations' ``meta`` records (see the module docstring):
    ``{task: detect_chance(...) | options_chance(...)}``, tasks in the records' order;
    records without a ``truth`` are left out."""
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("truth") is not None:
            by_task[str(r["task"])].append(r)
    out: dict[str, dict[str, Any]] = {}
    for task, rows in by_task.items():
        if task == "detect":
            out[task] = detect_chance([str(r["effect"]) for r in rows])
        else:
            out[task] = options_chance(
                [str(r["truth"]) for r in rows], [int(r["n_options"]) for r in rows]
            )
    return out


__all__ = ["chance_levels", "detect_chance", "options_chance"]
