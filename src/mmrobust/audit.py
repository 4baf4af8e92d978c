"""``mmrobust audit DATA``: how far metadata alone tells tampered from original clips.

A tamper benchmark is only a test of vision if a model cannot answer from
the file's metadata. The released MVTamperBench copies its originals (their
source codec, container and fractional frame rate) while every tampered
clip is MPEG-4 Part 2 at an integer rate (``../shared/data/mvtamperbench/README.md``,
"Originals were not re-encoded"), so a one-field rule separates them. This
audit measures it for any tamper dataset:

* per field (codec, container, fps, duration, bitrate, file size): a
  decision tree on that field alone (categorical fields one-hot encoded,
  so it is a per-value majority rule);
* a small classifier on all fields (scikit-learn random forest);

each cross-validated by source video (``GroupKFold`` on ``Sample.group``:
an original and its tampered clips are never split between training and
testing), and scored with the benchmark's own metric: F1 per tamper type on
that type's clips plus all originals, and their mean (``overall``), the F1 a
model could reach without looking at a pixel. "Always yes" scores F1 2/3 on
balanced data; a balanced accuracy of 0.5 is chance.

It also reports window coverage under a frame policy: the share of tampered
clips of which the policy would show at least one frame inside the tamper
window (known from the manifest, or derived by the released rule).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mmrobust.atomicfile import write_text
from mmrobust.audit_scores import ArrayScorer
from mmrobust.datasets import TAMPER_ORIGINAL, Dataset, Sample
from mmrobust.families import get_family
from mmrobust.media.sampling import FramePolicy, frame_indices, window_coverage

CATEGORICAL = ("codec", "container", "fps")
NUMERIC = ("duration_s", "bitrate", "file_bytes")
FIELDS = (*CATEGORICAL, *NUMERIC)
"""Metadata fields audited (fps as its exact fraction string: ``30000/1001`` vs ``29``)."""


@dataclass(frozen=True)
class ClipFacts:
    """Metadata of one clip (no pixel is read; frames are counted from packets)."""

    codec: str
    container: str
    fps: str
    duration_s: float
    bitrate: float
    file_bytes: int
    n_frames: int
    fps_value: float


CountMethod = Literal["header", "packets"]
"""How :func:`clip_facts` counts frames: ``"header"`` reads an mp4/mov's sample index (read
with its header, no packet is demuxed) where it is complete and consistent, else counts
packets; ``"packets"`` always demuxes every packet (the path before issue 32, about 3x the
CPU). Both give the same count: the index is used only where the demuxer would yield
exactly its entries."""


def _indexed_frames(container: Any, stream: Any, size: int) -> int | None:
    """Frames an mp4/mov's demuxer would yield, from its sample index alone, else ``None``.

    The count ``count_packets`` gets by demuxing (packets not empty and not marked
    discard) equals the index entries' when the index lists the container's stored frame
    count, every entry lies inside the file (a truncated file yields fewer), and the
    decode timestamps of non-empty entries advance (else demuxing raises). ``None`` for
    any other container or when one of those does not hold: the caller counts packets.
    """
    from mmrobust.media._open import is_mp4_family

    listed = stream.frames
    if listed <= 0 or not is_mp4_family(container.format.name):
        return None
    entries = stream.index_entries
    if len(entries) != listed:
        return None
    n = 0
    last: int | None = None
    for e in entries:
        n_bytes = e.size
        if e.pos < 0 or e.pos + n_bytes > size:
            return None
        if n_bytes > 0:
            ts = e.timestamp
            if last is not None and ts <= last:
                return None
            last = ts
            n += not e.is_discard
    return n


def clip_facts(path: Path, *, count: CountMethod = "header") -> ClipFacts:
    """One clip's metadata, read from its container (no frame is decoded).

    ``count``: see :data:`CountMethod` (the same values either way).

    Raises:
        MediaError: the clip cannot be opened or demuxed (the checks of ``open_video``).
    """
    import av.error

    from mmrobust.media._open import describe_av_error, open_video
    from mmrobust.media.errors import MediaError
    from mmrobust.media.probe import _frame_packets, stream_fps

    with open_video(path) as (container, stream):
        size = path.stat().st_size
        fps = stream_fps(path, stream)
        frames = _indexed_frames(container, stream, size) if count == "header" else None
        if frames is None:
            try:
                frames = _frame_packets(container, stream)
            except av.error.FFmpegError as exc:
                raise MediaError(path, f"demux failed: {describe_av_error(exc)}") from exc
        codec, container_name = stream.codec_context.name, container.format.name
    duration = frames / float(fps)
    return ClipFacts(
        codec=codec,
        container=container_name,
        fps=str(fps),
        duration_s=duration,
        bitrate=8 * size / duration if duration > 0 else 0.0,
        file_bytes=size,
        n_frames=frames,
        fps_value=float(fps),
    )


def _records(samples: Sequence[Sample], predicted: Sequence[bool]) -> list[Any]:
    from mmrobust.records import ScoredRecord
    from mmrobust.status import Status

    return [
        ScoredRecord(
            sample_id=s.id,
            benchmark="tamper",
            group=s.group or s.id,
            answer="A" if s.tamper_type != TAMPER_ORIGINAL else "B",
            options={"A": "Yes", "B": "No"},
            predicted="A" if p else "B",
            status=Status.OK,
            task=s.task,
            tamper_type=s.tamper_type,
        )
        for s, p in zip(samples, predicted, strict=True)
    ]


def benchmark_scores(samples: Sequence[Sample], predicted: Sequence[bool]) -> dict[str, Any]:
    """F1 per type and overall (the benchmark's metric), plus balanced accuracy, of predictions."""
    from mmrobust.metrics.tamper import tamper_metrics

    m = tamper_metrics(_records(samples, predicted), n_resamples=0)
    return {
        "f1": m["f1"].get("overall"),
        "f1_per_type": {k: v for k, v in m["f1"].items() if k != "overall"},
        "balanced_accuracy": m["all"]["balanced_accuracy"],
        "accuracy": m["all"]["accuracy"],
    }


def _table(facts: Sequence[ClipFacts], fields: Sequence[str], *, reference: bool) -> Any:
    """The fields of every clip: an object array (columns in ``fields`` order), or with
    ``reference`` a pandas frame (the path before issue 32; the same matrix reaches the
    classifier: ``ColumnTransformer`` one-hot encodes the same strings and turns the
    numeric columns into the same float64 values)."""
    if reference:
        import pandas as pd

        return pd.DataFrame([{f: getattr(c, f) for f in fields} for c in facts])
    return np.array([[getattr(c, f) for f in fields] for c in facts], dtype=object)


def _model(fields: Sequence[str], seed: int, *, single: bool, reference: bool = False) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    cats: list[Any] = [f if reference else i for i, f in enumerate(fields) if f in CATEGORICAL]
    nums: list[Any] = [f if reference else i for i, f in enumerate(fields) if f not in CATEGORICAL]
    columns = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), cats), ("num", "passthrough", nums)]
    )
    clf = (
        DecisionTreeClassifier(max_depth=3, random_state=seed)
        if single
        else RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=seed)
    )
    return make_pipeline(columns, clf)


def _cross_validated(
    facts: Sequence[ClipFacts],
    labels: np.ndarray,
    groups: Sequence[str],
    fields: Sequence[str],
    seed: int,
    *,
    single: bool,
    reference: bool = False,
) -> np.ndarray:
    """Out-of-fold predictions, folds by source video."""
    from sklearn.model_selection import GroupKFold, cross_val_predict

    n_splits = min(5, len(set(groups)))
    pred = cross_val_predict(
        _model(fields, seed, single=single, reference=reference),
        _table(facts, fields, reference=reference),
        labels,
        groups=list(groups),
        cv=GroupKFold(n_splits=n_splits),
    )
    return np.asarray(pred, dtype=bool)


def _values(facts: Sequence[ClipFacts], labels: np.ndarray, field: str) -> dict[str, Any]:
    """Most common values per class (categorical), or medians (numeric)."""
    if field in CATEGORICAL:
        out = {}
        for name, want in (("original", False), ("tampered", True)):
            c = Counter(getattr(f, field) for f, y in zip(facts, labels, strict=True) if y == want)
            out[name] = dict(c.most_common(4))
        return out
    return {
        name: float(
            np.median([getattr(f, field) for f, y in zip(facts, labels, strict=True) if y == want])
        )
        for name, want in (("original", False), ("tampered", True))
        if any(y == want for y in labels)
    }


def coverage_under(
    samples: Sequence[Sample],
    facts: Sequence[ClipFacts],
    policy: FramePolicy,
    *,
    reuse_facts: bool = True,
) -> dict[str, Any]:
    """Window coverage of tampered clips under ``policy`` (known or derived windows).

    A released clip's window is derived from its original's frame count and rate; with
    ``reuse_facts`` the originals among ``samples`` give them from ``facts`` (the same
    count and rate ``count_packets`` gives, so the windows are the same) instead of
    being read a second time.
    """
    from fractions import Fraction

    from mmrobust.datasets.windows import WindowDeriver

    known = (
        {
            str(s.video): (f.n_frames, Fraction(f.fps))
            for s, f in zip(samples, facts, strict=True)
            if s.tamper_type == TAMPER_ORIGINAL and s.video is not None
        }
        if reuse_facts
        else {}
    )
    derive = WindowDeriver(known)
    per_type: dict[str, list[bool]] = defaultdict(list)
    derived = unknown = 0
    for s, f in zip(samples, facts, strict=True):
        if s.tamper_type in (None, TAMPER_ORIGINAL):
            continue
        window, dropped = s.window, None
        if window is not None and s.tamper_type == "dropping":
            src = s.meta.get("window_source")
            dropped = (
                int(src["end_frame"]) - int(src["start_frame"]) if isinstance(src, dict) else None
            )
        if window is None:
            d = derive(s)
            if d is None:
                unknown += 1
                continue
            window, dropped, derived = d.output, d.dropped, derived + 1
        idx = frame_indices(f.n_frames, f.fps_value, policy)
        covered = window_coverage(idx, window, dropped=dropped)
        if covered is not None:
            per_type[str(s.tamper_type)].append(covered)
    rates = {t: sum(v) / len(v) for t, v in sorted(per_type.items())}
    all_ = [x for v in per_type.values() for x in v]
    return {
        "policy": policy.describe(),
        "per_type": rates,
        "overall": sum(all_) / len(all_) if all_ else None,
        "windows_known": len(all_) - derived,
        "windows_derived": derived,
        "windows_unknown": unknown,
    }


def audit_dataset(
    dataset: Dataset,
    *,
    policy: FramePolicy | None = None,
    seed: int = 0,
    workers: int = 4,
    progress: Callable[[int, int], None] | None = None,
    reference: bool = False,
) -> dict[str, Any]:
    """Metadata separability and window coverage of a tamper dataset (see module docstring).

    Args:
        dataset: a loaded tamper dataset (samples with videos).
        policy: frame policy for window coverage (default: 8 segment-centre frames).
        seed: seed of the classifiers.
        workers: threads probing clips.
        progress: called with ``(done, total)`` while probing.
        reference: the path before issue 32 (every packet demuxed, one ``ScoredRecord``
            per row and prediction): the same result at about 3x the CPU; kept for the
            test that compares the two (``tests/test_audit_fast.py``).

    Returns:
        A JSON-serialisable dict (``fields``, ``classifier``, ``always_yes``,
        ``window_coverage``, counts and unreadable clips).

    Raises:
        ValueError: not a tamper dataset, or no readable clip of both classes.
    """
    from mmrobust.media import MediaError

    if not get_family(dataset.benchmark).tamper_clips:
        raise ValueError(f"audit needs a tamper dataset, not {dataset.benchmark!r}")
    policy = policy or FramePolicy()
    todo = [s for s in dataset.samples if s.video is not None and s.tamper_type]
    facts: list[ClipFacts | None] = [None] * len(todo)
    errors: list[str] = []
    count: CountMethod = "packets" if reference else "header"

    def one(i: int) -> None:
        try:
            facts[i] = clip_facts(Path(str(todo[i].video)), count=count)
        except (MediaError, OSError) as exc:
            errors.append(f"{todo[i].id}: {str(exc).splitlines()[0]}")

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for k, _ in enumerate(pool.map(one, range(len(todo))), 1):
            if progress is not None:
                progress(k, len(todo))
    kept = [(s, f) for s, f in zip(todo, facts, strict=True) if f is not None]
    samples = [s for s, _ in kept]
    good = [f for _, f in kept]
    labels = np.array([s.tamper_type != TAMPER_ORIGINAL for s in samples], dtype=bool)
    if not labels.any() or labels.all():
        raise ValueError("audit needs readable original and tampered clips")
    groups = [s.group or s.id for s in samples]
    scores: Callable[[Any], dict[str, Any]] = (
        (lambda pred: benchmark_scores(samples, list(pred))) if reference else ArrayScorer(samples)
    )
    result: dict[str, Any] = {
        "dataset": dataset.name,
        "source": dataset.source,
        "n_clips": len(samples),
        "n_original": int((~labels).sum()),
        "n_tampered": int(labels.sum()),
        "n_groups": len(set(groups)),
        "cv": f"GroupKFold({min(5, len(set(groups)))}) by source video",
        "always_yes": scores([True] * len(samples)),
        "unreadable": errors,
    }
    if len(set(groups)) < 2:
        result["fields"], result["classifier"] = {}, None
        result["note"] = "one source video only: nothing to cross-validate"
    else:
        fields: dict[str, Any] = {}
        for field in FIELDS:
            pred = _cross_validated(
                good, labels, groups, [field], seed, single=True, reference=reference
            )
            fields[field] = {
                **scores(pred.tolist()),
                "values": _values(good, labels, field),
            }
        result["fields"] = fields
        pred = _cross_validated(
            good, labels, groups, FIELDS, seed, single=False, reference=reference
        )
        result["classifier"] = {
            "model": "random forest (100 trees) on all fields",
            **scores(pred.tolist()),
        }
    result["window_coverage"] = coverage_under(samples, good, policy, reuse_facts=not reference)
    return _finite(result)


def _finite(obj: Any) -> Any:
    """NaN/inf -> ``None`` so the result is valid JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def audit_text(result: dict[str, Any]) -> str:
    """A plain-text summary of :func:`audit_dataset`'s result (what the CLI prints)."""

    from mmrobust.report.units import pct

    def f(x: Any) -> str:
        return pct(x)  # percent, one decimal: the console's convention

    lines = [
        f"leak audit: {result['dataset']}  clips {result['n_clips']} "
        f"({result['n_original']} original, {result['n_tampered']} tampered, "
        f"{result['n_groups']} source videos); {result['cv']}",
        f"F1 from metadata alone, % (benchmark F1: per type on that type plus all originals, "
        f"mean); always 'Yes' = {f(result['always_yes']['f1'])}, chance balanced accuracy = 50.0",
        f"{'field':<12} {'F1':>6} {'bal.acc':>8}  values (original | tampered)",
    ]
    for name, r in result.get("fields", {}).items():
        v = r.get("values", {})
        shown = (
            f"{v.get('original')} | {v.get('tampered')}"
            if name in CATEGORICAL
            else f"median {v.get('original', 0):.4g} | {v.get('tampered', 0):.4g}"
        )
        lines.append(f"{name:<12} {f(r['f1']):>6} {f(r['balanced_accuracy']):>8}  {shown}")
    clf = result.get("classifier")
    if clf:
        lines.append(
            f"{'all fields':<12} {f(clf['f1']):>6} {f(clf['balanced_accuracy']):>8}  {clf['model']}"
        )
    cov = result["window_coverage"]
    per = ", ".join(f"{t} {f(v)}" for t, v in cov["per_type"].items())
    lines.append(
        f"window coverage ({cov['policy']}), %: overall {f(cov['overall'])}; {per}; windows "
        f"{cov['windows_known']} known, {cov['windows_derived']} derived by the released rule, "
        f"{cov['windows_unknown']} unknown"
    )
    if result.get("unreadable"):
        lines.append(
            f"unreadable clips: {len(result['unreadable'])} (first: {result['unreadable'][0]})"
        )
    return "\n".join(lines)


AUDIT_NAME = "audit.json"
"""The file ``mmrobust audit --out DIR`` writes (``report --audit`` reads it)."""


def write_audit(result: dict[str, Any], out_dir: str | Path) -> Path:
    """Write ``result`` (:func:`audit_dataset`'s) to ``out_dir/audit.json`` (folder created).

    Raises:
        ValueError: the file cannot be written (read-only or full ``out_dir``), one line.
    """
    path = Path(out_dir) / AUDIT_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(result, indent=2) + "\n")
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or type(exc).__name__}") from None
    return path


__all__ = [
    "AUDIT_NAME",
    "FIELDS",
    "ClipFacts",
    "audit_dataset",
    "audit_text",
    "benchmark_scores",
    "clip_facts",
    "coverage_under",
    "write_audit",
]
