"""The leak audit of ``mmrobust tamper-data``'s builds (issue 31): does the encoding give the label away?

A model trained on clips whose originals differ from their tampered clips in the encoding
(the released MVTamperBench: originals keep their source codec and fractional rate, every
tampered clip is MPEG-4 Part 2 at an integer rate) can learn the codec's artefacts instead
of the tampering: not robust. ``tamper-data`` builds with codec control (the builder's
default), and this module proves it on what was built: every training build
(``OUT/train/clips-<pos>-<dur>s/``) and the held-out build (``OUT/eval/``) is audited.

Per build:

* the verdict, over the encoder fields ``codec``, ``container`` and ``fps`` (what the
  encoder decides; the frames a model sees are decoded from it): for each field the
  balanced accuracy of the per-value majority rule on the whole build (each value says
  "tampered" unless it holds more originals than tampered clips; :func:`separation`).
  50% says nothing (every value shared by originals and tampered clips: codec control);
  100%: the field alone tells every clip's label. A field above :data:`LEAK_ABOVE`
  separates them: ``leak``. In-sample, so it works on a build of one source video (no
  cross-validation possible) and never hides a value only originals have;
* the figures of :func:`mmrobust.audit.audit_dataset` (``mmrobust audit``): F1 from each
  metadata field alone and from all of them (cross-validated by source video, with at
  least two sources), the always-"Yes" F1, window coverage under ``tamper-data``'s frame
  policy. Duration, bitrate and size are there too, outside the verdict: an effect
  changes them (dropping shortens the clip) and the frames do not show them.

Written into ``OUT/tamper_data.json`` as ``audit`` (``leak_above``, ``fields``, ``builds``:
``{name: {status, separating, encoder_fields, figures}}``); ``tamper-data`` prints one line
per build and exits 2 when a training build leaks (unless ``--allow-leak``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.finetune.tamper_data import MANIFEST, TRAIN, TamperDataReport
from mmrobust.media.sampling import FramePolicy

ENCODER_FIELDS = ("codec", "container", "fps")
"""The fields of the verdict: what the encoder decides (``fps`` as its exact fraction)."""

LEAK_ABOVE = 0.6
"""A field whose per-value rule's balanced accuracy exceeds this (chance 0.5) is a leak."""


def separation(values: Sequence[str], tampered: Sequence[bool]) -> float | None:
    """Balanced accuracy (fraction) of the per-value majority rule on one field, in-sample.

    Each value predicts "tampered" unless more originals than tampered clips have it
    (a tie says "tampered", what always-"Yes" says); the score is the mean of the recall
    on originals and on tampered clips. ``None`` without clips of both classes (pure).

    Raises:
        ValueError: ``values`` and ``tampered`` of different lengths.
    """
    if len(values) != len(tampered):
        raise ValueError(f"{len(values)} values for {len(tampered)} labels")
    n_orig = Counter(v for v, t in zip(values, tampered, strict=True) if not t)
    n_tamp = Counter(v for v, t in zip(values, tampered, strict=True) if t)
    o, t = sum(n_orig.values()), sum(n_tamp.values())
    if not o or not t:
        return None
    says_original = {v for v in n_orig if n_orig[v] > n_tamp.get(v, 0)}
    right_orig = sum(n_orig[v] for v in says_original)
    right_tamp = sum(c for v, c in n_tamp.items() if v not in says_original)
    return (right_orig / o + right_tamp / t) / 2


def encoder_verdict(facts: Sequence[Any], tampered: Sequence[bool]) -> dict[str, Any]:
    """The verdict over :data:`ENCODER_FIELDS` of clips' :class:`~mmrobust.audit.ClipFacts`.

    Returns:
        ``status`` (``"leak"`` or ``"clean"``), ``separating`` (fields above
        :data:`LEAK_ABOVE`), ``encoder_fields`` ``{field: {balanced_accuracy, original,
        tampered}}`` (the values' counts per class).
    """
    fields: dict[str, Any] = {}
    for name in ENCODER_FIELDS:
        values = [str(getattr(f, name)) for f in facts]
        fields[name] = {
            "balanced_accuracy": separation(values, tampered),
            "original": dict(Counter(v for v, t in zip(values, tampered, strict=True) if not t)),
            "tampered": dict(Counter(v for v, t in zip(values, tampered, strict=True) if t)),
        }
    separating = [n for n, r in fields.items() if (r["balanced_accuracy"] or 0) > LEAK_ABOVE]
    return {
        "status": "leak" if separating else "clean",
        "separating": separating,
        "encoder_fields": fields,
    }


def audit_build(
    folder: Path, *, policy: FramePolicy | None = None, seed: int = 0, workers: int = 1
) -> dict[str, Any]:
    """The verdict and figures of one tamper build (a folder with ``manifest.jsonl``).

    A build that cannot be audited (no readable original or tampered clip) gets
    ``status: "not_audited"`` and the ``reason``, never an exception.
    """
    from mmrobust.audit import audit_dataset, clip_facts
    from mmrobust.datasets import DatasetError, load_dataset
    from mmrobust.media import MediaError
    from mmrobust.schema import TAMPER_ORIGINAL

    try:
        dataset = load_dataset(folder)
        figures = audit_dataset(dataset, policy=policy, seed=seed, workers=workers)
        facts, labels = [], []
        for s in dataset.samples:
            if s.video is None or not s.tamper_type:
                continue
            try:
                facts.append(clip_facts(Path(str(s.video))))
            except (MediaError, OSError):  # counted in the figures' ``unreadable``
                continue
            labels.append(s.tamper_type != TAMPER_ORIGINAL)
    except (DatasetError, FileNotFoundError, ValueError) as exc:
        return {"status": "not_audited", "reason": str(exc).splitlines()[0] or type(exc).__name__}
    return {**encoder_verdict(facts, labels), "figures": figures}


def build_name(side: str, tag: str) -> str:
    """``train/clips-start-1s`` for a training build, ``eval`` for the held-out one."""
    return f"{side}/{tag}" if side == TRAIN else side


def _values(counts: Mapping[str, int]) -> str:
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(v for v, _ in top[:2])
    return shown + (f" +{len(top) - 2}" if len(top) > 2 else "")


def verdict_line(name: str, audit: Mapping[str, Any]) -> str:
    """One console line per build: ``leak audit NAME: none ...`` / ``LEAK ...`` / ``not run``."""
    from mmrobust.report.units import pct

    if audit["status"] == "not_audited":
        return f"leak audit {name}: not run ({audit['reason']})"
    fig = audit["figures"]
    head = f"leak audit {name} ({fig['n_original']} original, {fig['n_tampered']} tampered clips)"
    fields = audit["encoder_fields"]
    if audit["status"] == "clean":
        scores = "/".join(pct(fields[f]["balanced_accuracy"]) for f in ENCODER_FIELDS)
        return (
            f"{head}: no leak; {'/'.join(ENCODER_FIELDS)} tell originals from tampered "
            f"clips at {scores}% balanced accuracy (chance 50.0)"
        )
    parts = [
        f"{f} {pct(fields[f]['balanced_accuracy'])}% (original {_values(fields[f]['original'])}"
        f" | tampered {_values(fields[f]['tampered'])})"
        for f in audit["separating"]
    ]
    return f"{head}: LEAK, separated by " + "; ".join(parts)


def audit_tamper_data(
    report: TamperDataReport,
    *,
    policy: FramePolicy | None = None,
    seed: int = 0,
    workers: int = 1,
    log: Callable[[str], None] = lambda message: None,
) -> dict[str, dict[str, Any]]:
    """Audit every build of ``report`` (training builds, then the held-out one), write the
    results into ``report.out / tamper_data.json`` (``audit``) and log one line per build.

    Returns:
        ``{build name: audit_build(...)}`` (names: :func:`build_name`).

    Raises:
        OSError: the manifest cannot be read or written.
    """
    audits: dict[str, dict[str, Any]] = {}
    for side, tag, folder in report.builds:
        name = build_name(side, tag)
        audits[name] = audit_build(folder, policy=policy, seed=seed, workers=workers)
        log(verdict_line(name, audits[name]))
    path = report.out / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["audit"] = {"leak_above": LEAK_ABOVE, "fields": list(ENCODER_FIELDS),
                         "builds": audits}  # fmt: skip
    write_text(path, json.dumps(manifest, indent=1, default=str))
    return audits


def leaking(audits: Mapping[str, Mapping[str, Any]], *, training: bool = True) -> list[str]:
    """Names of the builds whose verdict is ``leak`` (training builds, or the held-out one)."""
    return [
        n for n, a in audits.items()
        if a["status"] == "leak" and n.startswith(f"{TRAIN}/") == training
    ]  # fmt: skip


__all__ = [
    "ENCODER_FIELDS",
    "LEAK_ABOVE",
    "audit_build",
    "audit_tamper_data",
    "build_name",
    "encoder_verdict",
    "leaking",
    "separation",
    "verdict_line",
]
