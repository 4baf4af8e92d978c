"""Where a released MVTamperBench row's ``video`` lives: by task folder, never by a guess.

The release reuses file names across its source datasets (``video_0001.mp4``
is a CLEVRER clip and a Perception Test clip), so a row's ``video`` is
looked up in its task's source folder, as the reference toolkit does
(``<root>/<prefix>/<video>``, VLMEvalKit ``vlmeval/dataset/tamperbench.py``
at commit e8e78f05, ``type_data_list``; table in
``../shared/data/mvtamperbench/README.md``).

Order of lookup for a row of task ``t`` whose source folder is ``S``
(``TASK_FOLDERS[t]``, e.g. ``perception/videos``):

1. ``<root>/<ref>`` when ``ref`` is a relative path with a folder part
   (``videos/x.mp4``, as ``mmrobust tamper --layout mvtamperbench`` writes);
2. ``<root>/video/S/<ref>`` (the released layout after unzipping);
3. a file of that name whose folder path contains ``S`` anywhere under the
   root (the root given as the ``video/`` folder itself, the reference's
   ``data0613/...`` supplementary folder, a nested ``perception/videos/<x>/``);
   several such files: ambiguous, an error;
4. only then, as a reported fallback, a file of that name anywhere else
   under the root, if exactly one exists and it is not inside the folder of
   another source (that would be another source's clip of the same name).

Rows of a task without a known folder (your own task names) use 1, then the
top-level ``<root>/<ref>``, then the task's own folder ``<root>/video/<task>/<ref>``
(or ``<root>/<task>/<ref>``), then 4. Every sample resolved by step 4 is
counted in :attr:`TaskMediaResolver.fallbacks` (and in ``misplaced``: outside
a known task folder, or ``folderless``: a task without one) and reported by
the loader; an ambiguous or missing video is the sample's typed error, never
a silent pick. Symbolic links inside the data (a ``video/`` folder linked to
another disk) are followed for reading, each real folder indexed once.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

TASK_FOLDERS: Mapping[str, str] = {
    "action_sequence": "star/Charades_v1_480",
    "action_prediction": "star/Charades_v1_480",
    "object_interaction": "star/Charades_v1_480",
    "action_antonym": "ssv2_video",
    "fine_grained_action": "Moments_in_Time_Raw/videos",
    "unexpected_action": "FunQA_test/test",
    "object_existence": "clevrer/video_validation",
    "moving_direction": "clevrer/video_validation",
    "moving_count": "clevrer/video_validation",
    "moving_attribute": "clevrer/video_validation",
    "counterfactual_inference": "clevrer/video_validation",
    "object_shuffle": "perception/videos",
    "action_count": "perception/videos",
    "state_change": "perception/videos",
    "character_order": "perception/videos",
    "action_localization": "sta/sta_video",
    "scene_transition": "scene_qa/video",
    "egocentric_navigation": "vlnqa",
    "episodic_reasoning": "tvqa/frames_fps3",
}
"""Task file stem -> its source folder below ``<root>/video/`` (the 19 released tasks)."""

VIDEO_DIR = "video"
"""Folder of the unzipped sources under the data root (the reference's ``prefix`` starts with it)."""

VIDEO_EXTENSIONS = frozenset({".mp4", ".webm", ".avi", ".mkv", ".mov", ".m4v", ".gif"})
"""Extensions tried when a row names a video without one (``v2`` -> ``v2.mp4``)."""

HOW_PATH = "path"
HOW_TASK_FOLDER = "task_folder"
HOW_NAME = "name_fallback"


def task_slug(name: str) -> str:
    """A task display name as its file stem: ``"Fine-grained Action"`` -> ``"fine_grained_action"``."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def folder_of_prefix(prefix: str) -> str:
    """The source folder of a reference ``prefix`` (``video/star/x/`` or ``your_data_path/star/x/``)."""
    parts = [p for p in PurePosixPath(prefix.replace("\\", "/")).parts if p not in ("/", ".")]
    if parts and parts[0] in (VIDEO_DIR, "your_data_path"):
        parts = parts[1:]
    return "/".join(parts)


@dataclass(frozen=True)
class Resolution:
    """Outcome of one lookup.

    Attributes:
        path: the file, or ``None``.
        error: one-line reason when ``path`` is ``None``.
        how: ``path`` | ``task_folder`` | ``name_fallback`` (how it was found).
    """

    path: Path | None
    error: str | None = None
    how: str | None = None


def _contains(parts: tuple[str, ...], folder: tuple[str, ...]) -> bool:
    n = len(folder)
    return any(parts[i : i + n] == folder for i in range(len(parts) - n + 1))


class TaskMediaResolver:
    """Resolves rows' ``video`` under ``root`` by task folder (see module docstring).

    The file-name index is built lazily, once, and only when a row is not at
    its canonical place. Thread-compatible (build once, then read-only).

    Args:
        root: the data root (holding ``video/``), or the ``video/`` folder itself.
        folders: task -> source folder (default :data:`TASK_FOLDERS`).
    """

    def __init__(self, root: Path, folders: Mapping[str, str] = TASK_FOLDERS) -> None:
        self.root = root
        self.folders = dict(folders)
        self._known = {tuple(f.split("/")) for f in self.folders.values() if f}
        self._by_name: dict[str, list[tuple[str, ...]]] | None = None
        self._by_stem: dict[str, list[tuple[str, ...]]] = {}
        self.fallbacks: list[tuple[str, Path]] = []
        self.misplaced: list[tuple[str, Path]] = []
        self.folderless: list[tuple[str, Path, str]] = []

    def _hits(self, name: str) -> list[tuple[str, ...]]:
        """Files called ``name`` under the root (a name without extension: video files of that stem)."""
        if self._by_name is None:
            by_name: dict[str, list[tuple[str, ...]]] = defaultdict(list)
            by_stem: dict[str, list[tuple[str, ...]]] = defaultdict(list)
            seen: set[tuple[int, int]] = set()
            for dirpath, dirnames, filenames in os.walk(self.root, followlinks=True):
                try:
                    st = os.stat(dirpath)
                except OSError:
                    dirnames[:] = []
                    continue
                if (st.st_dev, st.st_ino) in seen:  # a link loop, or a second link to a folder
                    dirnames[:] = []
                    continue
                seen.add((st.st_dev, st.st_ino))
                rel = Path(dirpath).relative_to(self.root).parts
                for f in filenames:
                    by_name[f].append((*rel, f))
                    if PurePosixPath(f).suffix.lower() in VIDEO_EXTENSIONS:
                        by_stem[PurePosixPath(f).stem].append((*rel, f))
            self._by_name, self._by_stem = dict(by_name), dict(by_stem)
        hits = self._by_name.get(name, [])
        return hits or ([] if PurePosixPath(name).suffix else self._by_stem.get(name, []))

    def _path(self, parts: tuple[str, ...]) -> Path:
        return self.root.joinpath(*parts)

    def _shown(self, parts: tuple[str, ...]) -> str:
        return "/".join(parts)

    def resolve(
        self, ref: str, *, task: str | None = None, folder: str | None = None
    ) -> Resolution:
        """Find ``ref`` for a row of ``task`` (or with an explicit source ``folder``).

        Args:
            ref: the row's ``video`` (a file name or a relative path).
            task: the task (file stem); its folder comes from the table.
            folder: the source folder, overriding the table (a TSV ``prefix``).
        """
        # String paths and os.path here: this runs once per row (20,922 for the release).
        src = (folder if folder is not None else self.folders.get(task or "")) or ""
        rel = ref.replace("\\", "/").strip("/")
        root = str(self.root)
        direct = os.path.join(root, rel)
        if "/" in rel and os.path.isfile(direct):
            return Resolution(Path(direct), how=HOW_PATH)
        name = rel.rsplit("/", 1)[-1]
        own: tuple[str, ...] = tuple(src.split("/")) if src else ()
        if own:
            for base in (f"{VIDEO_DIR}/{src}", src):
                candidate = os.path.join(root, base, rel)
                if os.path.isfile(candidate):
                    return Resolution(Path(candidate), how=HOW_TASK_FOLDER)
        elif os.path.isfile(direct):
            return Resolution(Path(direct), how=HOW_PATH)
        elif task:
            for base in (f"{VIDEO_DIR}/{task}", task):  # a task of your own: its own folder
                candidate = os.path.join(root, base, rel)
                if os.path.isfile(candidate):
                    return Resolution(Path(candidate), how=HOW_TASK_FOLDER)
        hits = self._hits(name)
        if own:
            mine = [h for h in hits if _contains(h[:-1], own)]
            if len(mine) == 1:
                return Resolution(self._path(mine[0]), how=HOW_TASK_FOLDER)
            if len(mine) > 1:
                listed = ", ".join(self._shown(h) for h in mine[:3])
                return Resolution(
                    None, f"ambiguous video name {name!r}: {len(mine)} files in {src} ({listed})"
                )
        others = (
            [h for h in hits if any(_contains(h[:-1], k) for k in self._known if k != own)]
            if own
            else []
        )
        free = [h for h in hits if h not in others]
        if len(free) == 1:
            path = self._path(free[0])
            self.fallbacks.append((ref, path))
            if own:
                self.misplaced.append((ref, path))
            else:
                self.folderless.append((ref, path, task or ""))
            return Resolution(path, how=HOW_NAME)
        if len(free) > 1:
            listed = ", ".join(self._shown(h) for h in free[:3])
            where = f"outside its task folder {src}" if own else f"under {self.root}"
            return Resolution(
                None, f"ambiguous video name {name!r}: {len(free)} files {where} ({listed})"
            )
        where = f"in its task folder {VIDEO_DIR}/{src}/" if own else f"under {self.root}"
        msg = f"video not found {where}: {ref}"
        if others:
            msg += (
                f" (a file of that name is in another source's folder, "
                f"{self._shown(others[0][:-1])}/: not used)"
            )
        return Resolution(None, msg)


__all__ = [
    "HOW_NAME",
    "HOW_PATH",
    "HOW_TASK_FOLDER",
    "TASK_FOLDERS",
    "VIDEO_DIR",
    "VIDEO_EXTENSIONS",
    "Resolution",
    "TaskMediaResolver",
    "folder_of_prefix",
    "task_slug",
]
