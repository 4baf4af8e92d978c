"""``--data hf:<owner>/<name>[@revision]``: datasets on the Hugging Face hub.

The snapshot is downloaded with ``huggingface_hub.snapshot_download`` into
the hub's own cache (``$HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``;
the token comes from the usual places: ``HF_TOKEN`` or ``hf auth login``).
With ``HF_HUB_OFFLINE=1`` a populated cache is used without any network.

A snapshot holding ``json/<task>.json`` and zips under ``video/`` is the
released MVTamperBench (``Srikant86/MVTamperBench``, ``...Start``, ``...End``
and the small ``...Sample`` sets): each zip is unzipped once, beside where
the reference toolkit unzips it (``video/``), but into mmrobust's cache
(``<cache>/unzipped/<owner>--<name>/``) rather than into the hub's snapshot.
``video/<source>.zip`` may only fill ``video/<source>/``; the unzip rules
(staging, markers naming the blob and every member, re-checks on reuse) are
:mod:`mmrobust.datasets.unzip`'s. Any other snapshot is loaded with the
format detected in it (an MMR snapshot, a manifest folder, ...).
"""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrobust.datasets.base import HUB_PREFIX, Dataset, DatasetError, detect_format, load_dataset
from mmrobust.datasets.unzip import (
    MARKER_DIR,
    is_unzipped,
    unzip_lock,
    unzip_once,
    unzipped_size,
)

log = logging.getLogger(__name__)

RELEASES: dict[str, str] = {
    name: f"Srikant86/{name}"
    for name in (
        "MVTamperBench",
        "MVTamperBenchStart",
        "MVTamperBenchEnd",
        "MVTamperBenchSample",
        "MVTamperBenchSample_Start",
        "MVTamperBenchSample_End",
    )
}
"""Short names of the released variants (middle, start, end; the small sample sets)."""

MMR_RELEASE = "BAAI/Multimodal-Robustness-Benchmark"
"""The released MMR benchmark on the hub (arXiv:2406.10638 appendix: ``MMR-benchmark/``
holds ``MMR-benchmark.json`` and the image zip; ``MMR-data/`` the training set)."""

MMR_SHA256 = "e55290e603f41c7444cb8a8a6f355dab6a521a4fa845ca8757b40b817e5f7dc3"
"""sha256 of the released ``MMR-benchmark.json`` (the authors' repository,
``evaluation/MMR-benchmark.json``, 224,456 bytes), the MMR loader's ``data_hash``."""

HUB_PATTERNS: dict[str, tuple[str, ...]] = {MMR_RELEASE: ("MMR-benchmark*", "*.md")}
"""``allow_patterns`` of ``snapshot_download`` per repository: only the MMR benchmark's
files (at the root or under ``MMR-benchmark/``), never the ``MMR-data`` training set."""

HUB_SUBFOLDERS = ("MMR-benchmark",)
"""A snapshot whose dataset lives in one of these subfolders is loaded from there."""

_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class HubRef:
    """A parsed ``hf:`` reference: ``repo_id`` and optional ``revision`` (branch, tag or commit)."""

    repo_id: str
    revision: str | None = None

    @property
    def url(self) -> str:
        """The dataset's page, where access to a gated dataset is requested."""
        return f"https://huggingface.co/datasets/{self.repo_id}"


def parse_hub_ref(ref: str) -> HubRef:
    """``hf:Srikant86/MVTamperBench@main`` -> ``HubRef``; bare release names are expanded.

    Raises:
        DatasetError: not ``hf:<owner>/<name>[@revision]`` or a known release name.
    """
    body = ref[len(HUB_PREFIX) :] if ref.startswith(HUB_PREFIX) else ref
    repo, _, revision = body.partition("@")
    repo = RELEASES.get(repo, repo)
    if not _REPO_ID.match(repo):
        raise DatasetError(
            f"{ref!r}: expected hf:<owner>/<name>[@revision] "
            f"(or one of {', '.join('hf:' + n for n in RELEASES)})"
        )
    return HubRef(repo, revision or None)


def with_revision(data: str, revision: str | None) -> str:
    """``data`` with ``--revision`` applied: ``hf:<owner>/<name>`` -> ``hf:<owner>/<name>@REV``.

    Raises:
        DatasetError: ``--revision`` with data that is not ``hf:``, or with an ``hf:`` reference
            that already names another revision.
    """
    if not revision:
        return data
    if not data.startswith(HUB_PREFIX):
        raise DatasetError(f"--revision {revision} is for hf: data, not {data!r}")
    body, _, given = data.partition("@")
    if given and given != revision:
        raise DatasetError(f"{data!r} already names revision {given!r}; --revision {revision}")
    return f"{body}@{revision}"


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def announce_size(ref: HubRef) -> int | None:
    """Log the snapshot's file count and size before a download (online only); return bytes.

    Any failure is silent here: ``snapshot_download`` reports it properly next.
    """
    try:
        from huggingface_hub import HfApi, constants

        if constants.is_offline_mode():
            return None
        info = HfApi().dataset_info(ref.repo_id, revision=ref.revision, files_metadata=True)
    except Exception:  # the download that follows says what is wrong
        return None
    files = list(info.siblings or [])
    total = sum(int(f.size or 0) for f in files)
    zips = sum(int(f.size or 0) for f in files if f.rfilename.endswith(".zip"))
    log.info(
        "%s@%s: %d files, %.2f GB (downloaded once into the hub cache); the zipped videos "
        "(%.2f GB) need about as much again unzipped",
        ref.repo_id,
        (info.sha or "?")[:12],
        len(files),
        total / 1e9,
        zips / 1e9,
    )
    return total


def snapshot(ref: HubRef, *, cache_dir: str | Path | None = None) -> Path:
    """Download (or find in the hub cache) the dataset snapshot; return its folder.

    Args:
        ref: the dataset.
        cache_dir: hub cache folder (default: the library's, ``$HF_HUB_CACHE``).

    Raises:
        DatasetError: one line saying what to do: gated (request access, log
            in), not found or no token, offline without a cached copy, unknown
            revision, or the hub unreachable.
    """
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import (
            GatedRepoError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:  # pragma: no cover - a core dependency
        raise DatasetError(
            "hf: datasets need huggingface_hub (pip install huggingface_hub)"
        ) from None
    login = "log in with `hf auth login` or set HF_TOKEN"
    announce_size(ref)
    try:
        folder = snapshot_download(
            ref.repo_id,
            repo_type="dataset",
            revision=ref.revision,
            cache_dir=str(cache_dir) if cache_dir else None,
            allow_patterns=list(HUB_PATTERNS[ref.repo_id]) if ref.repo_id in HUB_PATTERNS else None,
        )
    except GatedRepoError:
        raise DatasetError(
            f"{ref.repo_id} is gated: request access at {ref.url}, then {login} with that account"
        ) from None
    except RepositoryNotFoundError:
        raise DatasetError(
            f"{ref.repo_id} was not found, or it needs a token: {login} "
            f"(access is requested at {ref.url})"
        ) from None
    except RevisionNotFoundError:
        raise DatasetError(f"{ref.repo_id} has no revision {ref.revision!r}") from None
    except LocalEntryNotFoundError as exc:
        raise DatasetError(
            f"{ref.repo_id} is not (completely) in the local hub cache and the hub cannot be "
            f"reached (offline mode or no network): download it once online ({_one_line(exc)})"
        ) from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{ref.repo_id}: download failed: {_one_line(exc)}") from None
    return Path(folder)


def is_released_snapshot(folder: Path) -> bool:
    """A snapshot with ``json/*.json`` (the released MVTamperBench layout)."""
    return (folder / "json").is_dir() and any((folder / "json").glob("*.json"))


def free_bytes(path: Path) -> int:
    """Free space on the file system holding ``path`` (or its nearest existing parent)."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def _release_zip(folder: Path, zip_path: Path) -> tuple[str, str, str]:
    """``(name, into, own)`` of a released zip: ``video/perception.zip`` unzips into ``video/``
    and may only fill ``video/perception/``."""
    rel = zip_path.relative_to(folder).as_posix()
    parent = Path(rel).parent.as_posix()
    return rel, "" if parent == "." else parent, Path(rel).stem


def prepare_released(folder: Path, dest: Path) -> dict[str, Any]:
    """Unzip every ``*.zip`` of the snapshot into ``dest`` once (under a file lock).

    Returns:
        ``{"zips": n, "unzipped_now": k, "zip_bytes": ..., "unzipped_bytes": ...}``.

    Raises:
        DatasetError: not enough free disk space for the zips still to unzip, or a zip the
            unzip rules refuse (damaged, duplicate members, members outside its own folder).
    """
    zips = sorted(p for p in folder.rglob("*.zip") if p.is_file())
    sizes = {z: unzipped_size(z) for z in zips}
    with unzip_lock(dest):
        pending = [z for z in zips if not is_unzipped(z, _release_zip(folder, z)[0], dest)]
        need = sum(sizes[z] for z in pending)
        free = free_bytes(dest)
        if need > free:
            raise DatasetError(
                f"unzipping {len(pending)} zip(s) needs {need / 1e9:.1f} GB in {dest}, "
                f"only {free / 1e9:.1f} GB free (set MMROBUST_CACHE to a larger disk)"
            )
        done = 0
        for z in pending:
            name, into, own = _release_zip(folder, z)
            done += unzip_once(z, name, dest, into=into, own=own)
    return {
        "zips": len(zips),
        "unzipped_now": done,
        "zip_bytes": sum(z.stat().st_size for z in zips),
        "unzipped_bytes": sum(sizes.values()),
    }


def unzip_root(ref: HubRef) -> Path:
    """Where a released snapshot's zips are unzipped: ``<mmrobust cache>/unzipped/<owner>--<name>``."""
    from mmrobust.paths import unzip_dir

    return unzip_dir(ref.repo_id.replace("/", "--"))


def _check_mmr_release(ds: Dataset, commit: str) -> None:
    """Log whether the hub's ``MMR-benchmark.json`` is the pinned file (the sha256 of the
    authors' GitHub copy, :data:`MMR_SHA256`): only then do the
    report and the cards treat the run as made on the released benchmark (Table 2's rows)."""
    if ds.data_hash == MMR_SHA256:
        log.info("%s@%s: MMR-benchmark.json is the pinned release (sha256 %s...)",
                 MMR_RELEASE, commit[:12], MMR_SHA256[:12])  # fmt: skip
    else:
        log.warning(
            "%s@%s: MMR-benchmark.json has sha256 %s..., not the pinned release's %s... (the "
            "authors' GitHub copy): another revision; the published Table 2 rows are hidden by "
            "default for it",
            MMR_RELEASE, commit[:12], ds.data_hash[:12], MMR_SHA256[:12],
        )  # fmt: skip


def load_hub(
    path: str | Path,
    *,
    images: str | Path | None = None,
    text_only: bool = False,
    hub_cache: str | Path | None = None,
    unzip_dir: str | Path | None = None,
    **options: Any,
) -> Dataset:
    """Load ``hf:<owner>/<name>[@revision]`` (downloaded once, then from the cache).

    Args:
        path: the ``hf:`` reference.
        images: media root override (default: the unzipped videos).
        text_only: do not resolve media.
        hub_cache: hub cache folder (default: the library's).
        unzip_dir: where zips are unzipped (default :func:`unzip_root`).
        **options: passed to the loader of a non-released snapshot.

    Raises:
        DatasetError: the download failed (one line saying what to do), or the
            snapshot holds no dataset mmrobust can read.
    """
    from mmrobust.datasets.mvtamperbench import load_mvtamperbench

    ref = parse_hub_ref(str(path))
    folder = snapshot(ref, cache_dir=hub_cache)
    commit = folder.name
    if is_released_snapshot(folder):
        dest = Path(unzip_dir) if unzip_dir else unzip_root(ref)
        media_root = Path(images) if images else dest
        unzipped: dict[str, Any] = {}
        if not text_only and images is None:
            try:
                unzipped = prepare_released(folder, dest)
            except OSError as exc:
                raise DatasetError(
                    f"cannot unzip {ref.repo_id} into {dest}: {_one_line(exc)}"
                ) from None
        ds = load_mvtamperbench(folder, images=media_root, text_only=text_only)
        ds.name = ref.repo_id.split("/")[-1]
        media = ds.info.get("media")
        if isinstance(media, dict):
            log.info(
                "%s@%s: %d samples; videos found %d, missing %d, ambiguous %d",
                ref.repo_id,
                commit[:12],
                len(ds.samples),
                media["found"],
                media["missing"],
                media["ambiguous"],
            )
    else:
        sub = next((folder / d for d in HUB_SUBFOLDERS if (folder / d).is_dir()), None)
        folder = sub or folder  # the MMR release keeps its files in MMR-benchmark/
        try:
            fmt = detect_format(folder)
        except DatasetError:
            raise DatasetError(
                f"{ref.repo_id}@{commit[:12]}: no dataset mmrobust can read in the snapshot "
                f"({folder})"
            ) from None
        ds = load_dataset(folder, fmt, images=images, text_only=text_only, **options)
        dest, unzipped = folder, {}
    if ref.repo_id == MMR_RELEASE:
        _check_mmr_release(ds, commit)
    ds.source = f"{HUB_PREFIX}{ref.repo_id}" + (f"@{ref.revision}" if ref.revision else "")
    ds.info = {
        **ds.info,
        "hub": {
            "repo_id": ref.repo_id,
            "revision": ref.revision,
            "commit": commit,
            "snapshot": str(folder),
            "media_root": str(dest),
            **unzipped,
        },
    }
    return ds


__all__ = [
    "HUB_PATTERNS",
    "HUB_SUBFOLDERS",
    "MARKER_DIR",
    "MMR_RELEASE",
    "MMR_SHA256",
    "RELEASES",
    "HubRef",
    "announce_size",
    "free_bytes",
    "is_released_snapshot",
    "is_unzipped",
    "load_hub",
    "parse_hub_ref",
    "prepare_released",
    "snapshot",
    "unzip_once",
    "unzip_root",
    "with_revision",
]
