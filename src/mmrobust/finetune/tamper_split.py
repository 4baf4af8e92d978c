"""The split by source video of ``mmrobust tamper-data``: which sources are one video, which side
each video goes to, and whether substitution has donors on both sides.

Two files are one source when their bytes are equal (sha256) or when their content is
(:func:`mmrobust.media.fingerprint.same_content`: a re-encode, a remux to another container,
bytes appended). Such files form one group; a group goes to one side of the split as a whole,
so no video is trained on and evaluated. A group of more than one file is reported (one line
each, and ``content_groups`` in ``tamper_data.json``): the files stay in the build (both
copies give clips), on one side.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRAIN, EVAL = "train", "eval"


class TamperDataError(ValueError):
    """The training set cannot be built (one line, with the fix)."""


@dataclass(frozen=True)
class SourceGroups:
    """Sources grouped by content.

    Attributes:
        key: file (``str(path)``) -> its group's key (the smallest sha256 in the group, so the
            key of a video alone is its own sha256).
        fingerprint: file -> its content fingerprint (``None`` when it could not be decoded:
            grouped by sha256 only; the builder reports the file).
        merged: the groups of more than one file, each a sorted list of paths.
    """

    key: dict[str, str]
    fingerprint: dict[str, str | None]
    merged: list[list[str]]


def group_sources(
    files: Sequence[Path],
    digests: Sequence[str],
    *,
    known: dict[str, str] | None = None,
    fingerprint: Callable[[Path], str] | None = None,
) -> SourceGroups:
    """Group ``files`` (with their sha256 ``digests``) by content.

    Args:
        files: the source files.
        digests: their sha256, in the same order.
        known: sha256 -> fingerprint already computed (an earlier build's manifest), reused.
        fingerprint: the fingerprint function (default
            :func:`mmrobust.media.fingerprint.video_fingerprint`).

    Returns:
        The groups (:class:`SourceGroups`). Files of equal sha256 are always one group.
    """
    from mmrobust.media.errors import MediaError
    from mmrobust.media.fingerprint import content_groups, video_fingerprint

    make = fingerprint or video_fingerprint
    cache = dict(known or {})
    by_digest: dict[str, list[str]] = {}
    for path, digest in zip(files, digests, strict=True):
        by_digest.setdefault(digest, []).append(str(path))
    unique = sorted(by_digest)
    prints: dict[str, str | None] = {}
    for digest in unique:
        if digest not in cache:
            try:
                cache[digest] = make(Path(by_digest[digest][0]))
            except (MediaError, OSError, ValueError):
                cache[digest] = ""  # undecodable: grouped by its bytes only
        prints[digest] = cache[digest] or None
    decodable = [d for d in unique if prints[d]]
    groups = [
        [decodable[i] for i in g] for g in content_groups([prints[d] or "" for d in decodable])
    ]
    groups += [[d] for d in unique if not prints[d]]
    key: dict[str, str] = {}
    merged: list[list[str]] = []
    for group in groups:
        paths = sorted(p for d in group for p in by_digest[d])
        for d in group:
            for p in by_digest[d]:
                key[p] = min(group)
        if len(paths) > 1:
            merged.append(paths)
    finger = {str(p): prints[d] for p, d in zip(files, digests, strict=True)}
    return SourceGroups(key, finger, sorted(merged))


def merged_note(paths: Sequence[str]) -> str:
    """The line ``tamper-data`` prints for one group of more than one file."""
    names = ", ".join(Path(p).name for p in paths)
    return (
        f"same video in {len(paths)} files ({names}: equal content fingerprint or bytes): "
        "kept on one side of the split"
    )


def split_sources(
    files: Sequence[Path], keys: Sequence[str], fraction: float, seed: int
) -> tuple[list[Path], list[Path]]:
    """``(train, eval)`` by source: files of one group (equal ``keys``) stay together (pure).

    ``keys`` are the group keys (:attr:`SourceGroups.key`) or sha256 digests. The groups,
    sorted by key, are shuffled by ``seed``; the first ``round(n * fraction)`` (at least one,
    at most ``n - 1``) are held out.

    Raises:
        TamperDataError: fewer than two distinct sources, or a fraction that leaves
            one side empty.
    """
    groups: dict[str, list[Path]] = {}
    for path, key in zip(files, keys, strict=True):
        groups.setdefault(key, []).append(path)
    order = sorted(groups)
    if len(order) < 2:
        raise TamperDataError(
            f"need at least 2 distinct source videos for a split by source, got {len(order)}"
            + (" (the files hold the same video)" if len(files) > 1 else "")
        )
    random.Random(seed).shuffle(order)
    n_eval = min(len(order) - 1, max(1, round(len(order) * fraction)))
    held = set(order[:n_eval])
    train = sorted(p for k in order if k not in held for p in groups[k])
    evals = sorted(p for k in held for p in groups[k])
    assert not set(train) & set(evals)  # the split's invariant (a file is on one side)
    return train, evals


def substitution_problem(
    train: Sequence[Path], held: Sequence[Path], key_of: dict[str, str], effects: Sequence[str]
) -> str | None:
    """Why substitution cannot be built on both sides of the split, or ``None`` (pure).

    Substitution's donor is another video of the same side (the split is by source), so a
    side with one distinct source (``key_of``: file -> group key or sha256) gets no
    substitution clip; its ``type`` question would then offer one option fewer than the other
    side's (training on 6 options, evaluating on 5), and its clips would not be balanced 1:1
    with the originals. Refused before anything is built.
    """
    if "substitution" not in effects:
        return None
    for side, files in ((TRAIN, train), (EVAL, held)):
        n = len({key_of[str(f)] for f in files})
        if n < 2:
            more = (
                "hold out more videos (a larger --eval-fraction) or add videos"
                if side == EVAL
                else "keep more videos for training (a smaller --eval-fraction) or add videos"
            )
            rest = ",".join(e for e in effects if e != "substitution")
            return (
                f"substitution needs 2 or more source videos on each side of the split (its "
                f"donor is another video of the same side); the {side} side has {n}: {more}, "
                f"or leave it out: --effects {rest}"
            )
    return None


def known_fingerprints(previous: dict[str, Any]) -> dict[str, str]:
    """sha256 -> fingerprint recorded by an earlier ``tamper_data.json`` (``previous``)."""
    known: dict[str, str] = {}
    for side in (previous.get("sources") or {}).values():
        for source in side if isinstance(side, list) else []:
            if isinstance(source, dict):
                sha, fp = source.get("sha256"), source.get("fingerprint")
                if isinstance(sha, str) and isinstance(fp, str) and fp:
                    known[sha] = fp
    return known


__all__ = [
    "EVAL",
    "TRAIN",
    "SourceGroups",
    "TamperDataError",
    "group_sources",
    "known_fingerprints",
    "merged_note",
    "split_sources",
    "substitution_problem",
]
