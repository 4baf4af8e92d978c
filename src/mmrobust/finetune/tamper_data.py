"""Tamper training data from the user's own videos (issue 31): ``mmrobust tamper-data``.

MVTamperBench (arXiv:2412.19794) ends by asking for "tamper-resilient MLLMs"; this
builds what such training needs, from any videos, with exact labels:

1. **Split by source video**, seeded: a share of the sources (``eval_fraction``, at
   least one) is held out; files with the same bytes (sha256) or the same decoded content
   (a re-encode, a remux, appended bytes: :func:`mmrobust.media.fingerprint.same_content`)
   count as one source and are reported, so no video is on both sides (asserted before
   anything is written, and again on the built manifests; :mod:`.tamper_split`).
2. **Clips** from the tamper builder, called once per ``(position, duration)`` for the
   training sources (``OUT/train/clips-<position>-<duration>s/``) and once with the
   paper's setting (middle, 1 s) for the held-out ones (``OUT/eval/``, a tamper set
   ``mmrobust eval --data OUT/eval`` reads). Each build gives every source one
   original and one clip per effect, so originals and each effect are balanced 1:1
   (counted in the manifest). Substitution draws its donors from the same side only.
   Codec control is the builder's default (originals re-encoded like the tampered
   clips), so the container cannot give the label away; ``mmrobust tamper-data`` then
   proves it with the leak audit of every build (:mod:`mmrobust.audit_builds`).
3. **Questions** as evaluation asks them: the clips are loaded as ``eval`` loads a
   tamper set (``datasets.load_dataset``), the ``type`` / ``when`` / ``leading``
   questions derived by :func:`mmrobust.tasks.derive_task` (``detect`` is the paper's),
   the user text rendered by :func:`mmrobust.prompts.build_prompt` (the exact prompt
   text of ``eval``), the answer is the truth's option letter.
4. **Frames as images**: :func:`mmrobust.media.frames.sample_clip` with ``eval``'s frame
   policy (default 8 segment centres) and encoding (default JPEG q95 at the decoded
   size, what ``hf:`` is given), written once per clip under ``frames/<clip id>/``.

Outputs: ``OUT/train/llava.json`` and ``OUT/eval/llava.json`` (LLaVA format, one
``<image>`` per frame, and the frames' ``video_metadata`` for ``--video-input video``;
for ``mmrobust finetune --data`` / ``--eval-data``) and
``OUT/tamper_data.json`` (the manifest of what went where: settings, each source with
its sha256, content fingerprint, group and side, the groups of more than one file
(``content_groups``), each conversation's clip, effect, task, position and duration,
the counts, the builds, and the held-out set's chance levels per task,
:func:`mmrobust.finetune.tamper_chance.chance_levels`). Re-running resumes: the builder skips
finished clips, frames already written are kept. A re-run into the same ``OUT`` with other
settings says which changed (:func:`changed_settings`) and rebuilds what they change: clips by
the builder's resume key (codec control, effects, seed, window), frames by the clip's sha256,
the frame policy and the encoding; clips those settings no longer make (an effect left out, a
source now on the other side of the split) are deleted (``build(prune=True)``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_bytes, write_text
from mmrobust.finetune.tamper_split import (
    EVAL,
    TRAIN,
    TamperDataError,
    group_sources,
    known_fingerprints,
    merged_note,
    split_sources,
    substitution_problem,
)
from mmrobust.media.errors import MediaError
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.media.sampling import FramePolicy
from mmrobust.schema import TAMPER_ORIGINAL
from mmrobust.schema.window import Position
from mmrobust.tamper.effects import PAPER_EFFECTS

MANIFEST = "tamper_data.json"
CLIP_SETTINGS = (
    "effects", "positions", "durations", "eval_fraction", "seed", "codec_control", "policy",
    "encoding",
)  # fmt: skip
"""The settings that change the clips, the split or the frames (``tasks`` and ``jobs`` do not:
the questions are derived again on every run)."""


@dataclass(frozen=True)
class TamperDataConfig:
    """What ``tamper-data`` builds.

    Attributes:
        effects: effect names (default: the paper's five).
        positions: window positions of the training clips (``start``/``middle``/``end`` or a
            fraction in [0, 1]); one build per position and duration.
        durations: window lengths in seconds of the training clips.
        tasks: questions per clip: ``detect`` (the paper's yes/no), ``type``, ``when``,
            ``leading`` (``docs/tasks.md``).
        eval_fraction: share of the sources held out (at least one source).
        seed: seeds the split, the builds, the option orders.
        policy: the frames shown (``eval``'s ``--frames``; default 8 segment centres).
        encoding: how they are encoded (default JPEG q95 at the decoded size, as ``hf:``).
        jobs: builder worker processes.
        codec_control: the builder's codec control (default on: originals re-encoded
            like the tampered clips). ``False`` copies the originals as they are, which
            leaks the label through the codec: for demonstrating the leak audit only.
    """

    effects: tuple[str, ...] = tuple(PAPER_EFFECTS)
    positions: tuple[Position, ...] = ("middle",)
    durations: tuple[float, ...] = (1.0,)
    tasks: tuple[str, ...] = ("detect", "type", "when")
    eval_fraction: float = 0.25
    seed: int = 0
    policy: FramePolicy = field(default_factory=FramePolicy)
    encoding: FrameEncoding = field(default_factory=FrameEncoding)
    jobs: int = 1
    codec_control: bool = True


@dataclass
class TamperDataReport:
    """What was built: the two sides' sources, conversations per task, clip counts, the
    builds ``(side, tag, clips folder)`` and the held-out chance levels (``chance_levels``)."""

    out: Path
    train_sources: list[str]
    eval_sources: list[str]
    conversations: dict[str, Counter[str]]
    clips: dict[str, Counter[str]]
    errors: list[str]
    builds: list[tuple[str, str, Path]] = field(default_factory=list)
    chance: dict[str, dict[str, Any]] = field(default_factory=dict)


_DONOR_HINT = "(give more sources or --donor PATH)"


def build_problem(source: str, reason: str, side: str) -> str:
    """One builder problem as ``tamper-data`` reports it: ``"<source>: <reason>"`` (pure).

    The builder's missing-donor hint names ``mmrobust tamper``'s ``--donor``, which
    ``tamper-data`` does not have (donors come from the same side of the split), so that
    hint is replaced by this command's fixes for ``side`` (``train`` or ``eval``).
    """
    if _DONOR_HINT in reason:
        more = "hold out 2 or more videos: a larger --eval-fraction or more videos"
        if side == TRAIN:
            more = "keep 2 or more videos for training: a smaller --eval-fraction or more videos"
        fix = f"(donors come from the same side of the split; {more}; or leave it out: --effects)"
        reason = reason.replace(_DONOR_HINT, f"among the {side} sources {fix}")
    return f"{source}: {reason}"


def donor_problem(
    train: Sequence[Path], held: Sequence[Path], key_of: dict[str, str], config: TamperDataConfig
) -> str | None:
    """Why substitution cannot be built on both sides of the split, or ``None`` (pure;
    :func:`mmrobust.finetune.tamper_split.substitution_problem` with ``config.effects``)."""
    return substitution_problem(train, held, key_of, config.effects)


def settings_of(config: TamperDataConfig) -> dict[str, Any]:
    """``config`` as ``tamper_data.json`` records it (``settings``; JSON values)."""
    return dict(json.loads(json.dumps(asdict(config), default=str)))


def changed_settings(
    previous: dict[str, Any], config: TamperDataConfig, digests: Sequence[str]
) -> list[str]:
    """What differs from an earlier build's ``tamper_data.json`` (``previous``) in the settings
    that change clips, split or frames (``CLIP_SETTINGS``) and in the sources (their sha256),
    one ``"name: was -> now"`` each (``policy.n_frames: 8 -> 4``). Pure."""
    was, now = previous.get("settings") or {}, settings_of(config)
    changes = []
    for name in CLIP_SETTINGS:
        old, new = was.get(name), now[name]
        if isinstance(old, dict) and isinstance(new, dict):
            changes += [
                f"{name}.{k}: {old.get(k)!r} -> {new.get(k)!r}"
                for k in sorted(set(old) | set(new))
                if old.get(k) != new.get(k)
            ]
        elif old != new:
            changes.append(f"{name}: {old!r} -> {new!r}")
    sources = previous.get("sources") or {}
    before = {s.get("sha256") for side in sources.values() for s in side}
    if before != set(digests):
        gone, added = len(before - set(digests)), len(set(digests) - before)
        changes.append(f"sources: {gone} left out, {added} new")
    return changes


def _tag(position: Position, duration: float) -> str:
    return f"clips-{position}-{duration:g}s"


def _build(
    sources: Sequence[Path], out: Path, config: TamperDataConfig, position: Position,
    duration: float,
) -> Any:  # fmt: skip
    """One tamper build (the builder itself: resume, codec control, manifest)."""
    from mmrobust.tamper.builder import build
    from mmrobust.tamper.config import BuildConfig
    from mmrobust.tamper.effects import make_effect

    built = BuildConfig(
        effects=tuple(make_effect(n) for n in config.effects),
        duration=duration,
        position=position,
        seed=config.seed,
        codec_control=config.codec_control,
        donors=tuple(sources),  # substitution's donors from this side of the split only
    )
    return build(list(sources), out, built, jobs=config.jobs, prune=True)


def _frames(
    video: Path, folder: Path, config: TamperDataConfig, video_sha256: str | None = None
) -> tuple[list[Path], dict[str, Any]]:
    """The clip's frames as ``eval`` samples and encodes them, written once (resumable),
    and their timing (the record's ``video_metadata``: source fps, frame indices, count).

    Kept only for the same clip (``video_sha256``, the manifest's; else hashed here), frame
    policy and encoding (``frames.json`` records them); otherwise sampled again."""
    from mmrobust.media.frames import sample_clip
    from mmrobust.tamper.manifest import sha256_file

    done = folder / "frames.json"
    made_from = json.loads(
        json.dumps(  # as frames.json reads back (tuples are lists)
            {
                "video_sha256": video_sha256 or sha256_file(video),
                "policy": asdict(config.policy),
                "encoding": asdict(config.encoding),
            }
        )
    )
    if done.is_file():
        saved = json.loads(done.read_text(encoding="utf-8"))
        # a list: written before the timing was kept; no made_from: before it was checked
        if isinstance(saved, dict) and saved.get("made_from") == made_from:
            return [folder / name for name in saved["frames"]], saved["video_metadata"]
        done.unlink()
        for old in folder.glob("*.jpg"):  # another clip's or policy's frames
            old.unlink()
    clip = sample_clip(video, config.policy, config.encoding)
    timing = {
        "fps": float(clip.fps),
        "frames_indices": list(clip.indices),
        "total_num_frames": clip.n_frames,
        "duration": clip.n_frames / float(clip.fps),
    }
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i, jpeg in enumerate(clip.jpegs):
        name = f"{i:03d}.jpg"
        write_bytes(folder / name, jpeg)
        names.append(name)
    record = {"frames": names, "video_metadata": timing, "made_from": made_from}
    write_text(done, json.dumps(record))  # last: a cut run redoes the clip
    return [folder / n for n in names], timing


def conversations_of(
    clips_dir: Path, side_dir: Path, tag: str, config: TamperDataConfig
) -> tuple[list[dict[str, Any]], list[str]]:
    """LLaVA records of every question about the clips of one build (and per-clip errors).

    Each record: ``id`` (``<task>/<tag>/<sample id>``), ``image`` (frame paths relative to
    ``side_dir``), ``video_metadata`` (the frames' source ``fps``, ``frames_indices``,
    ``total_num_frames``, ``duration``: what ``finetune --video-input video`` gives the
    processor, as ``hf:`` with ``video_input=video``; LLaVA readers ignore it),
    ``conversations`` (``<image>`` marks, then ``eval``'s prompt text; the answer letter),
    and ``meta`` (task, clip, source, effect, tag; ``truth``: the right option's key,
    ``none`` / an effect / ``middle`` / ``reject`` ..., or ``Yes`` / ``No`` for
    ``detect``; ``n_options``).
    """
    from mmrobust.datasets import load_dataset
    from mmrobust.prompts import build_prompt
    from mmrobust.tasks import META_KEY, derive_task

    dataset = load_dataset(clips_dir)
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    frames: dict[str, tuple[list[Path], dict[str, Any]] | None] = {}
    for task in config.tasks:
        for sample in derive_task(dataset, task, seed=config.seed).samples:
            if sample.video is None or sample.error:
                errors.append(f"{sample.id}: {sample.error or 'no video'}")
                continue
            key = str(sample.video)
            if key not in frames:
                try:
                    clip = Path(key).resolve().relative_to(clips_dir.resolve()).with_suffix("")
                    sha = sample.meta.get("video_sha256")
                    frames[key] = _frames(
                        Path(key), side_dir / "frames" / tag / clip, config,
                        sha if isinstance(sha, str) else None,
                    )  # fmt: skip
                except (OSError, ValueError, MediaError) as exc:  # one bad clip, not the run
                    errors.append(f"{key}: {str(exc).splitlines()[0]}")
                    frames[key] = None
            got = frames[key]
            if not got:
                continue
            paths, timing = got
            prompt = build_prompt(sample)
            info = sample.meta.get(META_KEY)
            truth = info.get("truth") if isinstance(info, dict) else None
            records.append(
                {
                    "id": f"{task}/{tag}/{sample.id}",
                    "image": [str(p.relative_to(side_dir)) for p in paths],
                    "video_metadata": timing,
                    "conversations": [
                        {"from": "human", "value": "<image>\n" * len(paths) + prompt.text},
                        {"from": "gpt", "value": prompt.answer},
                    ],
                    "meta": {
                        "task": task,
                        "clip": Path(key).name,
                        "source": sample.group,
                        "effect": sample.tamper_type,
                        "tag": tag,
                        "truth": truth or sample.options.get(sample.answer),
                        "n_options": len(sample.options),
                    },
                }
            )
    return records, errors


def build_tamper_data(
    sources: Sequence[str | Path],
    out: str | Path,
    config: TamperDataConfig | None = None,
    *,
    log: Callable[[str], None] = lambda message: None,
    note: Callable[[str], None] | None = None,
) -> TamperDataReport:
    """Build the training and held-out sets into ``out`` (see the module docstring).

    ``log`` gets the progress lines (the split's sizes, each build); ``note`` (default
    ``log``) what the user should know whatever the verbosity: files holding the same video,
    settings changed since the last build into ``out``.

    Raises:
        TamperDataError: no source exists (one line naming them), no readable source,
            fewer than two distinct sources (files of the same content are one source:
            :mod:`mmrobust.finetune.tamper_split`), or a source on both sides of the built
            sets (never expected: asserted).
    """
    from mmrobust.finetune.tamper_chance import chance_levels
    from mmrobust.tamper.manifest import read_manifest, sha256_file
    from mmrobust.tamper.sources import discover_sources, none_found

    if missing := none_found(sources):
        raise TamperDataError(missing)
    config = config or TamperDataConfig()
    root = Path(out)
    files, problems = discover_sources(sources)
    errors = [f"{p.source}: {p.reason}" for p in problems]
    if not files:
        raise TamperDataError(f"no video found in {', '.join(map(str, sources))}")
    digests = [sha256_file(f) for f in files]
    by_digest = dict(zip(map(str, files), digests, strict=True))
    previous: Any = {}
    if (root / MANIFEST).is_file():  # a re-run into the same OUT
        try:
            previous = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = {}
        previous = previous if isinstance(previous, dict) else {}
        changes = changed_settings(previous, config, digests)
        if changes:
            (note or log)(
                f"{root} was built with other settings ({'; '.join(changes)}): rebuilding the "
                "clips and frames they change; clips they no longer make are removed"
            )
    groups = group_sources(files, digests, known=known_fingerprints(previous))
    for paths in groups.merged:
        (note or log)(merged_note(paths))
    keys = [groups.key[str(f)] for f in files]
    train, held = split_sources(files, keys, config.eval_fraction, config.seed)
    if problem := donor_problem(train, held, groups.key, config):
        raise TamperDataError(problem)
    log(f"split by source: {len(train)} training, {len(held)} held out")
    side_dirs = {TRAIN: root / TRAIN, EVAL: root / EVAL}
    builds: list[tuple[str, str, Path]] = []  # (side, tag, clips folder)
    for position in config.positions:
        for duration in config.durations:
            tag = _tag(position, duration)
            folder = side_dirs[TRAIN] / tag
            log(f"building training clips {tag} ({len(train)} source(s))")
            errors += [
                build_problem(str(e.source), e.reason, TRAIN)
                for e in _build(train, folder, config, position, duration).errors
            ]
            builds.append((TRAIN, tag, folder))
    log(f"building held-out clips (middle, 1 s; {len(held)} source(s))")
    errors += [
        build_problem(str(e.source), e.reason, EVAL)
        for e in _build(held, side_dirs[EVAL], config, "middle", 1.0).errors
    ]
    builds.append((EVAL, "clips-middle-1s", side_dirs[EVAL]))

    group_of = {by_digest[f]: k for f, k in groups.key.items()}  # sha256 -> group key
    sides: dict[str, set[str]] = {TRAIN: set(), EVAL: set()}
    clip_counts: dict[str, Counter[str]] = {TRAIN: Counter(), EVAL: Counter()}
    records: dict[str, list[dict[str, Any]]] = {TRAIN: [], EVAL: []}
    for side, tag, folder in builds:
        for entry in read_manifest(folder):
            sides[side].add(group_of.get(entry.source_sha256, entry.source_sha256))
            clip_counts[side][entry.tamper_type or TAMPER_ORIGINAL] += 1
        made, bad = conversations_of(folder, side_dirs[side], tag, config)
        records[side] += made
        errors += bad
    leaked = sides[TRAIN] & sides[EVAL]
    if leaked:  # the split by source, checked on what was built
        raise TamperDataError(f"{len(leaked)} source(s) on both sides of the split")

    for side in (TRAIN, EVAL):
        path = side_dirs[side] / "llava.json"
        write_text(path, json.dumps(records[side], indent=1))
    per_task = {side: Counter(r["meta"]["task"] for r in records[side]) for side in (TRAIN, EVAL)}
    chance = chance_levels([r["meta"] for r in records[EVAL]])
    manifest = {
        "settings": settings_of(config),
        "sources": {
            side: [
                {
                    "path": str(p),
                    "sha256": by_digest[str(p)],
                    "fingerprint": groups.fingerprint[str(p)],
                    "group": groups.key[str(p)],
                }
                for p in files_of
            ]
            for side, files_of in ((TRAIN, train), (EVAL, held))
        },
        "content_groups": groups.merged,
        "split_disjoint": not leaked,
        "clips": {side: dict(c) for side, c in clip_counts.items()},
        "conversations": {side: dict(c) for side, c in per_task.items()},
        "builds": [{"side": s, "tag": t, "folder": str(f)} for s, t, f in builds],
        "chance": chance,
        "records": {
            side: [{"id": r["id"], **r["meta"]} for r in records[side]] for side in records
        },
        "errors": errors,
    }
    write_text(root / MANIFEST, json.dumps(manifest, indent=1, default=str))
    return TamperDataReport(
        root, [str(p) for p in train], [str(p) for p in held], per_task, clip_counts, errors,
        builds, chance,
    )  # fmt: skip


__all__ = [
    "CLIP_SETTINGS",
    "EVAL",
    "MANIFEST",
    "TRAIN",
    "TamperDataConfig",
    "TamperDataError",
    "TamperDataReport",
    "build_problem",
    "build_tamper_data",
    "changed_settings",
    "conversations_of",
    "donor_problem",
    "settings_of",
    "split_sources",
]
