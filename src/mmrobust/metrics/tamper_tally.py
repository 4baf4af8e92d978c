"""One pass over tamper-detection records into counts: what :func:`tamper_metrics` scores.

:func:`mmrobust.metrics.tamper.tamper_metrics` reads its records once, through a
:class:`TamperTally`, so a run's rows can be streamed from the store: memory does not
grow with the number of rows, but for

* the cluster bootstrap (``n_resamples > 0``): one group number (``int32``), one type
  code and one confusion cell (``int8`` each) per row, and the group names;
* a detector's window IoU: one ``float64`` per tampered clip it predicted tampered with a
  window (the median needs them all).

Every other score is a function of how many rows share a small key (task, tamper type,
status, confusion cell, window coverage, the reference's hit), counted in a ``Counter``.
The definitions are those of :mod:`mmrobust.metrics.tamper` (arXiv:2412.19794, section 4.1).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from mmrobust.records import ScoredRecord
from mmrobust.schema import CANONICAL_TYPES, TAMPER_ORIGINAL, normalise_type
from mmrobust.status import Status


class Key(NamedTuple):
    """What the scores need of one row (rows with equal keys are counted together)."""

    task: str | None
    ntype: str | None  # normalised tamper type
    raw_type: str | None  # as stored (the reference's boards key on it)
    status: Status
    cell: int  # confusion cell: 0 tp, 1 fp, 2 fn, 3 tn; -1 not scored
    covered: bool | None  # window_covered
    ref_hit: bool  # the reference's "right" (correct, or a failed row: its quirk)


UNSCORED_RULES: frozenset[str] = frozenset(
    {"official:empty-reply", "official:missing-value", "official:api-failure-text"}
)
"""Extraction rules of replies the reference never scores (an empty cell, its API-failure text)."""


def truth_positive(rec: ScoredRecord) -> bool:
    """Whether the clip is tampered (ground truth of the positive class)."""
    ttype = normalise_type(rec.tamper_type)
    if ttype is not None:
        return ttype != TAMPER_ORIGINAL
    return rec.answer_text.strip().lower() == "yes"


def scored_pair(rec: ScoredRecord, failures: str) -> tuple[bool, bool] | None:
    """``(truth, prediction)`` for a row that enters the confusion matrix, else ``None``."""
    truth = truth_positive(rec)
    if rec.status is Status.OK and rec.predicted is not None:
        return truth, truth if rec.predicted == rec.answer else not truth
    if failures == "wrong":  # any status but ok: parse failure, empty reply, every error
        return truth, not truth
    return None


def cell_of(pair: tuple[bool, bool] | None) -> int:
    """The confusion cell of ``(truth, prediction)``: 0 tp, 1 fp, 2 fn, 3 tn; -1 for ``None``."""
    if pair is None:
        return -1
    truth, pred = pair
    return 0 if truth and pred else 1 if pred else 2 if truth else 3


def reference_failed(rec: ScoredRecord) -> bool:
    """Whether the reference holds no score for this row (-1 or an empty cell)."""
    return rec.status.is_error or rec.rule in UNSCORED_RULES


def window_span(w: Any) -> tuple[int, int] | None:
    """``(start_frame, end_frame)`` of a window (a mapping or a ``Window``), or ``None``."""
    if w is None:
        return None
    if isinstance(w, Mapping):
        return int(w["start_frame"]), int(w["end_frame"])
    return int(w.start_frame), int(w.end_frame)


def window_iou(pred: tuple[int, int], true: tuple[int, int]) -> float:
    """Intersection over union of two frame intervals ``[start, end)``.

    An empty true window (a ``dropping`` seam at frame ``s`` in the output
    timeline) has no area, so both windows are first widened by one frame on
    each side: the true one becomes ``[s - 1, s + 1)`` and the predicted one
    ``[start - 1, end + 1)``. This convention is ours (the paper does not
    localise).
    """
    (ps, pe), (ts, te) = pred, true
    if te == ts:
        ts, te, ps, pe = ts - 1, te + 1, ps - 1, pe + 1
    inter = max(0, min(pe, te) - max(ps, ts))
    union = max(pe, te) - min(ps, ts) if inter > 0 else (pe - ps) + (te - ts)
    return inter / union if union > 0 else 0.0


def ordered_types(types: set[str]) -> list[str]:
    """Tamper types in the paper's Table 7 order, then any others sorted."""
    known = [t for t in CANONICAL_TYPES if t in types]
    return known + sorted(types - set(known))


Filter = Callable[[Key], bool]


class TamperTally:
    """Counts of one pass over tamper records (:meth:`add` each record once).

    Args:
        failures: ``"exclude"`` or ``"wrong"`` (how a failed row enters the confusion cell).
        groups: keep what the cluster bootstrap needs (group, type, cell per row).
    """

    def __init__(self, failures: str, *, groups: bool = False) -> None:
        self.failures = failures
        self.keys: Counter[Key] = Counter()
        self.n = 0
        self.status_counts: dict[str, int] = {}  # first-seen order, as Counter(records) gives
        self.frames_repeated = 0
        self.type_hits = 0
        self.type_n = 0
        self.ious = array("d")
        self._groups = groups
        self.group_ids: dict[str, int] = {}
        self.type_codes: dict[str | None, int] = {}
        self.row_group = array("i")
        self.row_type = array("b")
        self.row_cell = array("b")

    def add(self, rec: ScoredRecord) -> None:
        """Count one record."""
        pair = scored_pair(rec, self.failures)
        cell = cell_of(pair)
        ntype = normalise_type(rec.tamper_type)
        self.n += 1
        self.keys[
            Key(
                rec.task,
                ntype,
                rec.tamper_type,
                rec.status,
                cell,
                rec.window_covered,
                rec.correct or reference_failed(rec),
            )
        ] += 1
        status = rec.status.value
        self.status_counts[status] = self.status_counts.get(status, 0) + 1
        if rec.extra.get("frames_repeated"):
            self.frames_repeated += 1
        if cell == 0:  # tampered and predicted tampered: localisation (detector extras)
            if rec.extra.get("pred_type") is not None:
                self.type_n += 1
                self.type_hits += normalise_type(rec.extra["pred_type"]) == ntype
            pred_w = window_span(rec.extra.get("pred_window"))
            true_w = window_span(rec.window)
            if pred_w is not None and true_w is not None:
                self.ious.append(window_iou(pred_w, true_w))
        if self._groups:
            group = rec.group or rec.sample_id
            self.row_group.append(self.group_ids.setdefault(group, len(self.group_ids)))
            self.row_type.append(self.type_codes.setdefault(ntype, len(self.type_codes)))
            self.row_cell.append(cell)

    # -- reading the counts -------------------------------------------------------------

    def count(self, where: Filter) -> int:
        """Rows whose key passes ``where``."""
        return sum(n for k, n in self.keys.items() if where(k))

    def confusion(self, where: Filter) -> list[int]:
        """``[tp, fp, fn, tn]`` of the scored rows whose key passes ``where``."""
        out = [0, 0, 0, 0]
        for k, n in self.keys.items():
            if k.cell >= 0 and where(k):
                out[k.cell] += n
        return out

    def group_counts(self, types: list[str]) -> np.ndarray:
        """``(G, K, 4)`` confusion counts per group (sorted by name) and type; an original
        clip counts for every type (it is scored with each)."""
        names = sorted(self.group_ids)
        order = np.empty(len(names), dtype=np.int64)
        for i, name in enumerate(names):
            order[self.group_ids[name]] = i
        counts = np.zeros((len(names), len(types), 4), dtype=np.int64)
        tidx = {t: i for i, t in enumerate(types)}
        code_to_t = {c: t for t, c in self.type_codes.items()}
        g = order[np.frombuffer(self.row_group, dtype=np.int32)]
        codes = np.frombuffer(self.row_type, dtype=np.int8)
        cells = np.frombuffer(self.row_cell, dtype=np.int8).astype(np.int64)
        scored = cells >= 0
        for code, t in code_to_t.items():
            rows = scored & (codes == code)
            if t == TAMPER_ORIGINAL:
                for i in range(len(types)):
                    np.add.at(counts, (g[rows], i, cells[rows]), 1)
            elif t in tidx:
                np.add.at(counts, (g[rows], tidx[t], cells[rows]), 1)
        return counts


__all__ = [
    "UNSCORED_RULES",
    "Key",
    "TamperTally",
    "cell_of",
    "ordered_types",
    "reference_failed",
    "scored_pair",
    "truth_positive",
    "window_iou",
    "window_span",
]
