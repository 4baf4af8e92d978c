"""What users read carries no notes of how the project was built.

README.md, docs/*.md, the ``--help`` of every command and the ``mmrobust list`` tables
must not say "load average", "2-core" or "issue N", nor name a commit of this repository
(the reference implementations' commits, ``eb58e9e`` and ``e8e78f0``, and data hashes are
facts users need and stay). Measured figures live in docs/performance.md, which names its
machine once. The README stays short: at most about 200 lines.
"""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mmrobust.cli import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PROCESS_WORDS = re.compile(r"load average|\b2-core\b|\bissues? #?\d+", re.IGNORECASE)
"""Notes of how a figure or a fix came about: they belong to the history, not the docs."""

HEX = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{7,40}(?![0-9A-Za-z_])")
"""A token that could be a commit (7 to 40 hexadecimal digits, not part of a longer word)."""

REFERENCE_COMMITS = {"eb58e9e", "e8e78f0"}
"""The reference implementations' commits (VLMEvalKit, the MMR repository): facts, kept."""


def _command_texts() -> dict[str, str]:
    """``{what: text}``: ``mmrobust --help``, each command's ``--help`` and ``mmrobust list``."""
    group = typer.main.get_command(app)
    texts = {}
    runner = CliRunner()
    commands = sorted(group.commands)  # type: ignore[attr-defined]
    for args in [["--help"], *([c, "--help"] for c in commands)]:
        result = runner.invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, (args, result.output)
        texts["mmrobust " + " ".join(args)] = result.output
    for kind in ("", "datasets", "models", "effects", "tasks", "templates", "references"):
        result = runner.invoke(app, ["list", *([kind] if kind else [])], terminal_width=200)
        assert result.exit_code == 0, (kind, result.output)
        texts[f"mmrobust list {kind}".strip()] = result.output
    assert "mmrobust list models" in texts
    return texts


def _hits(text: str) -> list[str]:
    return [m.group(0) for m in PROCESS_WORDS.finditer(text)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_user_doc_has_no_process_words(doc: Path) -> None:
    lines = doc.read_text(encoding="utf-8").splitlines()
    found = [f"{n}: {line.strip()[:100]}" for n, line in enumerate(lines, 1) if _hits(line)]
    assert found == [], f"{doc.name} says how it was built, not what it does:\n" + "\n".join(found)


def test_help_and_lists_have_no_process_words() -> None:
    found = {what: _hits(text) for what, text in _command_texts().items() if _hits(text)}
    assert found == {}


def test_the_pattern_flags_what_it_must_and_spares_the_reference_commits() -> None:
    assert _hits("measured at load average 9 on our 2-core machine (issue 30)") == [
        "load average",
        "2-core",
        "issue 30",
    ]
    assert _hits("Issues 30, 33 and issue #7") == ["Issues 30", "issue #7"]
    text = "VLMEvalKit at eb58e9e, MMR at e8e78f0, sha256 e55290e603f41c74, an issue-free tissue 3"
    assert _hits(text) == []
    assert set(HEX.findall(text)) == {"eb58e9e", "e8e78f0", "e55290e603f41c74"}


def test_no_user_doc_names_a_commit_of_this_repository() -> None:
    """Every hexadecimal token of the docs that git resolves to one of this repository's
    commits (a clone's history; the reference commits are another repository's)."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("no git history here (a copy of the files without .git)")
    tokens = sorted({t for doc in DOCS for t in HEX.findall(doc.read_text(encoding="utf-8"))})
    tokens = [t for t in tokens if t not in REFERENCE_COMMITS]
    query = "".join(f"{t}^{{commit}}\n" for t in tokens)
    out = subprocess.run(
        [git, "-C", str(ROOT), "cat-file", "--batch-check"],
        input=query,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(out) == len(tokens)
    # "<sha> commit <size>" for a commit; "<token>^{commit} missing" (or "ambiguous") otherwise
    ours = [t for t, line in zip(tokens, out, strict=True) if " commit " in line]
    assert ours == []


def test_the_readme_is_for_users_and_short() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first_screen = "\n".join(text.splitlines()[:60])
    assert "pip install -e . && mmrobust demo" in first_screen
    assert "pytest -q" in first_screen
    assert "requires Python 3.10" in first_screen or "Python >= 3.10" in first_screen
    assert "docs/performance.md" in text


def test_the_performance_page_names_its_machine_once() -> None:
    """One table of figures with the command that measures each; the machine stated once at
    the top (its cores), not beside every figure."""
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert len(re.findall(r"\bcores?\b", text, re.IGNORECASE)) == 1
    header = next(line for line in text.splitlines() if line.startswith("| what"))
    assert header.split("|")[1:4] == [" what ", " figure ", " measured by "]


def test_an_old_python_is_refused_before_anything_is_downloaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``setup.py`` runs when pip first asks the build backend (seconds in); pip reads
    ``requires-python`` only after fetching dependencies (minutes on Python 3.9)."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^requires-python = ">=3.10"$', pyproject, re.M)
    monkeypatch.setattr(sys, "version_info", (3, 9, 18, "final", 0))
    with pytest.raises(SystemExit) as refused:
        runpy.run_path(str(ROOT / "setup.py"))
    assert str(refused.value.code).startswith("mmrobust requires Python 3.10 or newer; this is")
