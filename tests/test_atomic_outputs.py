"""Files a user keeps are written whole, never through a link (:mod:`mmrobust.atomicfile`).

* A symlink planted at an output name (pointing at a sentinel file outside the output
  folder) is replaced by a regular file and the sentinel is unchanged: every file of
  ``mmrobust report`` (page, Markdown, CSV, PNG, cards), ``mmrobust run``'s ``suite.json``,
  ``mmrobust tamper-data``'s ``tamper_data.json`` and ``llava.json`` files.
* A write that fails part-way leaves the previous file (or none) and no temporary.
* A stream appended row by row refuses a link or a FIFO at its name.

Data: the tamper JSONL records without media of ``tests/test_report_newuser.py`` (a run in
about a second), ``mmr-demo`` with a ``constant:`` model, and a two-clip ``tamper-data``
build with one effect (under 2 s; a re-run rewrites only its JSON files).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.atomicfile import atomic_write, open_append, write_bytes, write_text, write_with
from mmrobust.cli import app
from tests.test_report_newuser import evaluate, tamper_jsonl

REPORT_FILES = (
    "report.md",
    "index.html",
    "table7.csv",
    "f1_per_type.png",
    "cards/constant-A.json",
    "cards/constant-A.html",
    "samples/chunk-000000.js",
    "samples/index-0000.js",
    "samples/ids-0000.js",
)
"""What ``mmrobust report`` writes for one tamper run without media (hand-listed)."""
SENTINEL = b"the user's own file\n"


def _temps(folder: Path) -> list[Path]:
    """Temporaries left in ``folder`` (and below): ``.<name>.<random>.tmp[.suffix]``."""
    return [p for p in folder.rglob(".*") if ".tmp" in p.name]


def _plant(outputs: list[Path], outside: Path) -> dict[Path, Path]:
    """A symlink at each of ``outputs`` to its own sentinel file under ``outside``."""
    links = {}
    outside.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(outputs):
        sentinel = outside / f"sentinel{i}{path.suffix}"
        sentinel.write_bytes(SENTINEL)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.symlink_to(sentinel)
        links[path] = sentinel
    return links


def _assert_not_written_through(links: dict[Path, Path]) -> None:
    for path, sentinel in links.items():
        assert sentinel.read_bytes() == SENTINEL, f"{path} was written through its link"
        assert not path.is_symlink() and path.is_file(), path
        assert path.stat().st_size > 0 and path.read_bytes() != SENTINEL, path


@pytest.fixture(scope="module")
def tamper_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("atomic-run")
    return evaluate(tamper_jsonl(root / "set.jsonl", 1), "constant:A", root / "run")


def _report(run: Path, out: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output


def test_report_writes_the_files_the_link_test_plants(tamper_run: Path, tmp_path: Path) -> None:
    """The hand list is what ``report`` writes (so the link test below covers all of it)."""
    _report(tamper_run, tmp_path / "rep")
    written = sorted(p.relative_to(tmp_path / "rep").as_posix() for p in
                     (tmp_path / "rep").rglob("*") if p.is_file())  # fmt: skip
    assert written == sorted(REPORT_FILES)


@pytest.mark.parametrize("name", REPORT_FILES)
def test_report_never_writes_through_a_planted_link(
    tamper_run: Path, tmp_path: Path, name: str
) -> None:
    rep = tmp_path / "rep"
    links = _plant([rep / name], tmp_path / "outside")
    _report(tamper_run, rep)
    _assert_not_written_through(links)
    assert (rep / "table7.csv").read_text().startswith("Model,")
    assert not _temps(rep)


def test_report_replaces_a_linked_samples_folder_and_leaves_its_target(
    tamper_run: Path, tmp_path: Path
) -> None:
    """A link planted at the sample browser's folder is replaced by the report's own folder
    (written whole, then renamed into place); the folder it pointed at is untouched."""
    rep, outside = tmp_path / "rep", tmp_path / "outside"
    outside.mkdir()
    (outside / "chunk-000000.js").write_bytes(SENTINEL)
    rep.mkdir()
    (rep / "samples").symlink_to(outside, target_is_directory=True)
    _report(tamper_run, rep)
    assert sorted(p.name for p in outside.iterdir()) == ["chunk-000000.js"]
    assert (outside / "chunk-000000.js").read_bytes() == SENTINEL
    assert not (rep / "samples").is_symlink()
    assert sorted(p.name for p in (rep / "samples").iterdir()) == [
        "chunk-000000.js", "ids-0000.js", "index-0000.js"]  # fmt: skip
    assert (rep / "samples" / "chunk-000000.js").read_text().startswith('mmrobustChunk("chunk",0,')
    assert not _temps(rep) and sorted(p.name for p in rep.iterdir() if p.name.startswith(".")) == []


def test_suite_json_is_not_written_through_a_link(tmp_path: Path) -> None:
    from mmrobust.suite import SuiteConfig, run_suite

    out = tmp_path / "s"
    links = _plant([out / "suite.json"], tmp_path / "outside")
    config = SuiteConfig(models=["constant:A"], data=["mmr-demo"], tasks=["detect"],
                         out=str(out), options={"n_resamples": 0}, report=False)  # fmt: skip
    run_suite(config, progress=False)
    _assert_not_written_through(links)
    assert '"runs"' in (out / "suite.json").read_text()
    assert not _temps(out)


def test_tamper_data_json_is_not_written_through_a_link(tmp_path: Path) -> None:
    from mmrobust.media import sample_clips

    clips = sample_clips()
    out = tmp_path / "td"
    args = ["tamper-data", str(clips["bikes"]), str(clips["carphone_pristine"]), "--out",
            str(out), "--effects", "dropping", "--positions", "start", "--eval-fraction", "0.5"]  # fmt: skip
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    names = ["tamper_data.json", "train/llava.json", "eval/llava.json"]
    links = _plant([out / n for n in names], tmp_path / "outside")
    again = CliRunner().invoke(app, args)  # resumes: rewrites the JSON files only
    assert again.exit_code == 0, again.output
    _assert_not_written_through(links)
    assert not _temps(out)


# -- a failed write ------------------------------------------------------------------------


class Boom(RuntimeError):
    pass


def _half_then_fail_file(path: Path) -> None:
    with atomic_write(path) as f:
        f.write("half")
        raise Boom


def _half_then_fail_callback(path: Path) -> None:
    def writer(tmp: Path) -> None:
        tmp.write_text("half")
        raise Boom

    write_with(path, writer)


def _full_disk_at_rename(path: Path) -> None:
    write_text(path, "new")  # os.replace is patched to fail: as a full disk


FAULTS: dict[str, Callable[[Path], None]] = {
    "atomic_write": _half_then_fail_file,
    "write_with": _half_then_fail_callback,
    "rename": _full_disk_at_rename,
}


@pytest.mark.parametrize("before", ["old", None])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failed_write_leaves_the_previous_file_or_none_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, before: str | None
) -> None:
    target = tmp_path / "out" / "table.csv"
    target.parent.mkdir()
    if before is not None:
        target.write_text(before)

    def enospc(*_: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if fault == "rename":
        monkeypatch.setattr(os, "replace", enospc)
    with pytest.raises(OSError if fault == "rename" else Boom):
        FAULTS[fault](target)
    monkeypatch.undo()
    assert sorted(p.name for p in target.parent.iterdir()) == (
        [] if before is None else [target.name]
    )
    if before is not None:
        assert target.read_text() == before


def test_a_report_plot_that_fails_part_way_keeps_the_previous_png(
    tamper_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    rep = tmp_path / "rep"
    _report(tamper_run, rep)
    before = (rep / "f1_per_type.png").read_bytes()
    real = Figure.savefig

    def half(self: Any, fname: Any, *args: Any, **kwargs: Any) -> None:
        real(self, fname, *args, **kwargs)
        with open(fname, "r+b") as f:
            f.truncate(100)  # half a PNG at the temporary, then the disk fills
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Figure, "savefig", half)
    result = CliRunner().invoke(app, ["report", str(tamper_run), "--out", str(rep)])
    assert result.exit_code != 0
    assert (rep / "f1_per_type.png").read_bytes() == before
    assert not _temps(rep)


def test_write_text_and_bytes_replace_a_link_and_keep_mode(tmp_path: Path) -> None:
    links = _plant([tmp_path / "a.md", tmp_path / "b.jpg"], tmp_path / "outside")
    write_text(tmp_path / "a.md", "é\r\n")
    write_bytes(tmp_path / "b.jpg", b"\xff\xd8")
    _assert_not_written_through(links)
    assert (tmp_path / "a.md").read_bytes() == "é\r\n".encode()  # UTF-8, no translation
    assert (tmp_path / "b.jpg").stat().st_mode & 0o777 == 0o644


# -- streams appended by design ------------------------------------------------------------


def test_open_append_grows_a_file_and_refuses_a_link_or_a_fifo(tmp_path: Path) -> None:
    log = tmp_path / "errors.jsonl"
    for row in ("1\n", "2\n"):
        with open_append(log) as f:
            f.write(row)
    assert log.read_text() == "1\n2\n"
    links = _plant([tmp_path / "linked.jsonl"], tmp_path / "outside")
    with pytest.raises(OSError, match="a link is at this name") as link:
        open_append(tmp_path / "linked.jsonl")
    assert link.value.errno == errno.ELOOP
    assert next(iter(links.values())).read_bytes() == SENTINEL
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError) as fifo:  # no reader: ENXIO at the open; else not a file
        open_append(tmp_path / "fifo")
    assert fifo.value.errno in (errno.ENXIO, errno.EINVAL)


def test_tamper_manifest_append_refuses_a_link(tmp_path: Path) -> None:
    from mmrobust.tamper.manifest import BuildError, append_jsonl

    links = _plant([tmp_path / "errors.jsonl"], tmp_path / "outside")
    row = BuildError(source="s.mp4", reason="r")
    with pytest.raises(OSError):
        append_jsonl(tmp_path / "errors.jsonl", [row])
    assert next(iter(links.values())).read_bytes() == SENTINEL
