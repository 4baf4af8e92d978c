"""``--push-to-hub REPO`` of ``mmrobust run`` and ``mmrobust report``: results on the hub.

:func:`push_suite` / :func:`push_report` upload, in **one commit** to a hub *dataset*
repository (``huggingface_hub.HfApi.upload_folder`` of a staging folder; the repository is
created if needed, ``--private`` makes it private):

* the report folder (``index.html``, tables, plots, thumbnails, ``cards/`` with each
  model's robustness card as HTML and JSON, and ``suite.yaml`` for a suite);
* ``suite.json`` (the plan, how each run ended, the suite file) for a suite;
* per run folder ``run.json``, ``metrics.json`` and ``samples.jsonl`` (the per-sample log,
  :func:`mmrobust.export.sample_records`, written fresh from the stored rows).

Nothing else: no ``results.sqlite``, no media, no file reached through a link. Everything
uploaded is what mmrobust already writes scrubbed of credentials (``run.json``'s settings,
the suite file, cards); before the commit every file is also searched for the hub token
itself, and a file holding it stops the push. With ``cards`` (``--model-card SPEC=REPO_ID``)
each model's ``model-index`` (:mod:`mmrobust.report.model_index`, its ``source`` the
dataset repository) is proposed to the model's card as a pull request
(``huggingface_hub.metadata_update(..., create_pr=True, overwrite=True)``: an entry of the
same task, dataset, metric and mmrobust version gets the new value, others are added),
never a direct write. The token comes from the environment (``HF_TOKEN``, or the one
``hf auth login`` saved: ``huggingface_hub.get_token``); :meth:`HubTarget.check` refuses a
push without one before any work.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPORT_DIR, SUITE_FILE = "report", "suite.json"
"""A suite folder's report folder and plan file (``mmrobust.suite.names``, a higher layer)."""

RUN_FILES = ("run.json", "metrics.json")
"""The files of a run folder that are uploaded (beside its fresh ``samples.jsonl``)."""


@dataclass(frozen=True)
class HubTarget:
    """Where ``--push-to-hub`` goes: a dataset repository, its visibility, the model cards
    (model spec -> hub model repository) to propose ``model-index`` entries to."""

    repo_id: str
    private: bool = False
    cards: Mapping[str, str] = field(default_factory=dict)
    token: str = field(default="", repr=False)

    @classmethod
    def check(
        cls, repo_id: str, *, private: bool = False, cards: Mapping[str, str] | None = None
    ) -> HubTarget:
        """The target, checked before any work.

        Raises:
            ValueError: no token in the environment; a repository id the hub refuses
                (``owner/name``); ``cards`` without a push (one line each).
        """
        from huggingface_hub import get_token
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        for repo in [repo_id, *(cards or {}).values()]:
            try:
                validate_repo_id(repo)
            except HFValidationError as exc:
                raise ValueError(f"{repo!r} is not a hub repository id: {exc}") from None
        if "/" not in repo_id:
            raise ValueError(f"--push-to-hub {repo_id}: give OWNER/NAME (your user or org)")
        token = get_token()
        if not token:
            raise ValueError(
                "--push-to-hub needs a Hugging Face token with write access: set HF_TOKEN "
                "(or run `hf auth login`); nothing was run"
            )
        return cls(repo_id, private, dict(cards or {}), token)

    @property
    def url(self) -> str:
        """The dataset repository's page."""
        from huggingface_hub import constants

        return f"{constants.ENDPOINT}/datasets/{self.repo_id}"


def _copy_tree(src: Path, dest: Path) -> None:
    """Copy the regular files under ``src`` to ``dest`` (a link, or anything under one, is
    left out)."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any((src / Path(*rel.parts[: i + 1])).is_symlink() for i in range(len(rel.parts))):
            continue
        if path.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest / rel)


def _stage_run(run_dir: Path, dest: Path) -> None:
    """``run.json``, ``metrics.json`` and a fresh ``samples.jsonl`` of one run folder."""
    from mmrobust.export import SAMPLES_FILE, sample_records, write_records

    dest.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        path = run_dir / name
        if path.is_file() and not path.is_symlink():
            shutil.copyfile(path, dest / name)
    write_records(sample_records(run_dir), dest / SAMPLES_FILE, "jsonl")


def staged_files(staging: Path) -> list[str]:
    """The files of a staging folder as repository paths (``/``-separated, sorted)."""
    return sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())


def _check_no_token(staging: Path, token: str) -> None:
    """Raise ``ValueError`` naming the first staged file that holds the token."""
    needle = token.encode()
    for path in sorted(staging.rglob("*")):
        if path.is_file() and needle in path.read_bytes():
            raise ValueError(
                f"{path.relative_to(staging).as_posix()} holds the hub token; nothing was pushed"
            )


def _upload(target: HubTarget, staging: Path, message: str) -> list[str]:
    """Create the dataset repository if needed and upload ``staging`` in one commit."""
    from huggingface_hub import HfApi

    _check_no_token(staging, target.token)
    files = staged_files(staging)
    api = HfApi(token=target.token)
    api.create_repo(target.repo_id, repo_type="dataset", private=target.private, exist_ok=True)
    info = api.upload_folder(
        repo_id=target.repo_id, repo_type="dataset", folder_path=staging, commit_message=message
    )
    url = getattr(info, "commit_url", None) or str(info)
    return [f"pushed {len(files)} files to {target.url} in one commit ({url})"]


def propose_cards(target: HubTarget, results: str | Path | Sequence[str | Path]) -> list[str]:
    """Open one pull request per model card of ``target.cards`` adding or updating the
    model's ``model-index`` (from ``results``: a suite folder, a run folder or several run
    folders); one line each."""
    from huggingface_hub import metadata_update

    from mmrobust import __version__
    from mmrobust.report.model_index import MODEL_INDEX, check_model_index, model_index

    if not target.cards:
        return []
    source = {"name": f"mmrobust {__version__}", "url": target.url}
    blocks = model_index(results, source=source)
    lines: list[str] = []
    for spec, repo in target.cards.items():
        block = blocks.get(spec)
        if not block:
            lines.append(f"no scores of {spec} for the card of {repo}: no pull request")
            continue
        if problems := check_model_index(block):
            raise ValueError(f"model-index of {spec} does not validate: {problems[0]}")
        url = metadata_update(
            repo, {MODEL_INDEX: block}, overwrite=True, create_pr=True, token=target.token,
            commit_message=f"Robustness scores from mmrobust {__version__}",
            commit_description=f"model-index entries of {spec}; results and report: {target.url}",
        )  # fmt: skip
        lines.append(f"opened a pull request on the card of {repo} ({url})")
    return lines


def push_suite(target: HubTarget, suite_dir: str | Path) -> list[str]:
    """Push a suite folder (``mmrobust run --out``): ``report/``, ``suite.json`` and each run
    folder's files under the same paths; then the card pull requests. One line per step.

    Raises:
        OSError, ValueError: a file cannot be read or staged; the hub refused
            (``huggingface_hub`` errors are ``OSError`` / ``ValueError`` subclasses).
    """
    from mmrobust.report.model_index import run_folders

    out = Path(suite_dir)
    with tempfile.TemporaryDirectory(prefix="mmrobust-push-") as tmp:
        staging = Path(tmp)
        if (out / REPORT_DIR).is_dir() and not (out / REPORT_DIR).is_symlink():
            _copy_tree(out / REPORT_DIR, staging / REPORT_DIR)
        shutil.copyfile(out / SUITE_FILE, staging / SUITE_FILE)
        for run_dir in run_folders(out):
            _stage_run(run_dir, staging / run_dir.relative_to(out))
        lines = _upload(target, staging, "mmrobust run: report, cards, suite.json, samples")
    return lines + propose_cards(target, out)


def push_report(
    target: HubTarget, report_dir: str | Path, run_dirs: Sequence[str | Path]
) -> list[str]:
    """Push a report folder (``mmrobust report --out``) as ``report/`` and each run folder's
    files as ``runs/<name>/`` (names: :func:`mmrobust.safenames.folder_names` of the
    folders); then the card pull requests (over each run folder)."""
    from mmrobust.safenames import folder_names

    names = folder_names([str(Path(d)) for d in run_dirs])
    with tempfile.TemporaryDirectory(prefix="mmrobust-push-") as tmp:
        staging = Path(tmp)
        _copy_tree(Path(report_dir), staging / "report")
        for d in run_dirs:
            _stage_run(Path(d), staging / "runs" / names[str(Path(d))])
        lines = _upload(target, staging, "mmrobust report: report, cards, samples")
    return lines + propose_cards(target, list(run_dirs))


def card_pairs(values: Sequence[str], models: Sequence[str] | None = None) -> dict[str, str]:
    """``--model-card`` values (``SPEC=REPO_ID``, or a bare ``REPO_ID`` when ``models`` holds
    one model) as spec -> repo id.

    Raises:
        ValueError: a bare repo id with other than one model.
    """
    out: dict[str, str] = {}
    for value in values:
        spec, sep, repo = value.rpartition("=")
        if not sep:
            if not models or len(models) != 1:
                raise ValueError(f"--model-card {value}: name the model as SPEC=REPO_ID")
            spec, repo = models[0], value
        out[spec] = repo
    return out


__all__ = [
    "RUN_FILES",
    "HubTarget",
    "card_pairs",
    "propose_cards",
    "push_report",
    "push_suite",
    "staged_files",
]
