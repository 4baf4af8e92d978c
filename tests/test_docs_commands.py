"""Every ``mmrobust`` command in README.md and docs/*.md parses as written (issue 33.2).

The fenced shell blocks (```bash, ```sh, ```shell, ```console) of the README and
every guide are read, continuation lines joined and comments dropped; each
``mmrobust ...`` (or ``-m mmrobust.cli ...``) command is split on ``&&``, ``;`` and
``|`` and parsed by click exactly as the shell would hand it over, without running
the command (``make_context``: option names, required options, value types and
choices are checked; no callback body runs).

Placeholders the docs use: a bare ``...`` marks an excerpt ("the options shown
before"); such a command may lack required options, but every option it names
must exist and take the value given. ``$(...)`` becomes one file name and
``$NAME`` a folder name. Upper-case words (``BUILD_DIR``, ``RUN_DIR``) are plain
values and need no substitution.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer._click import core as click_core  # typer 0.29 vendors click: its own classes
from typer._click import exceptions as click_errors
from typer.core import TyperGroup, TyperOption

from mmrobust.cli import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(bash|sh|shell|console)[ \t]*\n(.*?)^```", re.M | re.S)
_SEPARATORS = {"&&", "||", ";", "|", "&"}


@dataclass(frozen=True)
class DocCommand:
    """One ``mmrobust`` command found in a document: its file, line and arguments."""

    where: str
    args: tuple[str, ...]
    excerpt: bool

    def __str__(self) -> str:
        return f"{self.where}: mmrobust {shlex.join(self.args)}"


def _substitute_command_substitutions(text: str) -> str:
    """``$(...)`` (balanced parentheses) -> ``clip.mp4``; ``$NAME`` -> ``NAME``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            out.append("clip.mp4")
            i = j
        else:
            out.append(text[i])
            i += 1
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", r"\1", "".join(out))


def _logical_lines(block: str, first_line: int) -> list[tuple[int, str]]:
    """The block's shell lines with ``\\`` continuations joined, numbered in the file."""
    lines: list[tuple[int, str]] = []
    pending, start = "", first_line
    for n, raw in enumerate(block.splitlines(), start=first_line):
        if not pending:
            start = n
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append((start, pending + raw))
        pending = ""
    if pending:
        lines.append((start, pending))
    return lines


def _mmrobust_args(tokens: list[str]) -> list[str] | None:
    """The arguments after ``mmrobust`` (or ``-m mmrobust.cli``) in one simple command."""
    for i, tok in enumerate(tokens):
        if tok == "mmrobust" and all(re.fullmatch(r"\w+=\S*", t) for t in tokens[:i]):
            return tokens[i + 1 :]
        if tok == "-m" and i + 1 < len(tokens) and tokens[i + 1] in ("mmrobust.cli", "mmrobust"):
            return tokens[i + 2 :]
    return None


def doc_commands(paths: list[Path] = DOCS) -> list[DocCommand]:
    """Every ``mmrobust`` command in the fenced shell blocks of ``paths``."""
    found: list[DocCommand] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            first = text.count("\n", 0, m.start(2)) + 1
            for lineno, line in _logical_lines(m.group(2), first):
                lexer = shlex.shlex(
                    _substitute_command_substitutions(line), posix=True, punctuation_chars=";&|"
                )
                lexer.whitespace_split = True
                lexer.commenters = "#"
                tokens = list(lexer)
                simple: list[list[str]] = [[]]
                for tok in tokens:
                    if tok in _SEPARATORS:
                        simple.append([])
                    else:
                        simple[-1].append(tok)
                for cmd in simple:
                    args = _mmrobust_args(cmd)
                    if args is not None:
                        where = f"{path.relative_to(ROOT)}:{lineno}"
                        found.append(DocCommand(where, tuple(args), "..." in args))
    return found


def parse_command(args: tuple[str, ...], *, excerpt: bool = False) -> click_core.Context:
    """Parse ``mmrobust ARGS`` with click without running it; raises ``click_errors.UsageError``.

    In an excerpt a bare ``...`` that stands where an option's value goes becomes
    ``VALUE``; any other ``...`` is dropped, and missing required options are allowed.
    """
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    if not args:
        raise click_errors.UsageError("no sub-command")
    name, rest = args[0], list(args[1:])
    root = group.make_context("mmrobust", [name])
    command = group.get_command(root, name)
    if command is None:
        raise click_errors.UsageError(f"no such command {name!r}")
    if excerpt:
        takes_value = {
            opt
            for p in command.params
            if isinstance(p, TyperOption) and not p.is_flag
            for opt in p.opts
        }
        kept: list[str] = []
        for i, tok in enumerate(rest):
            if tok == "...":
                if i and rest[i - 1] in takes_value:
                    kept.append("VALUE")
                continue
            kept.append(tok)
        rest = kept
        # an excerpt may leave out what was shown before (typer builds new click objects
        # on every get_command, so this changes nothing outside this call)
        for p in command.params:
            p.required = False
    return command.make_context(name, rest, parent=root)


COMMANDS = doc_commands()


def test_the_docs_hold_the_commands_this_test_checks() -> None:
    """The extraction finds the guides' commands (a broken regex would pass everything)."""
    files = {c.where.split(":")[0] for c in COMMANDS}
    assert len(COMMANDS) >= 60, len(COMMANDS)
    assert {"README.md", "docs/forensic.md", "docs/mmr.md", "docs/tamper.md"} <= files
    forensic = [c for c in COMMANDS if c.where.startswith("docs/forensic.md")]
    assert len(forensic) == 2
    assert all(c.args[0] == "eval" and "--model" in c.args for c in forensic)
    # the $(python -c ...) of docs/tamper.md is one file name; -m mmrobust.cli is found
    assert any(c.args[:2] == ("tamper", "clip.mp4") for c in COMMANDS)
    assert sum(c.args[0] == "finetune" for c in COMMANDS) >= 5


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.where)
def test_every_documented_command_parses(command: DocCommand) -> None:
    """Each command's options exist, take the values given, and required ones are present."""
    try:
        parse_command(command.args, excerpt=command.excerpt)
    except click_errors.UsageError as exc:
        pytest.fail(f"{command}\n  -> {exc.format_message()}")


def test_the_parser_catches_what_the_docs_got_wrong() -> None:
    """The check fails on the two commands docs/forensic.md had (issue 33.2)."""
    with pytest.raises(click_errors.MissingParameter) as missing:
        parse_command(("eval", "--model", "forensic", "--data", "BUILD_DIR"))
    assert missing.value.format_message() == "Missing option '--out'."
    with pytest.raises(click_errors.MissingParameter) as missing:
        parse_command(("eval", "--model", "forensic", "--model-arg", "prior=middle"))
    assert missing.value.format_message() == "Missing option '--data'."
    with pytest.raises(click_errors.NoSuchOption):
        parse_command(("eval", "--data", "d", "--model", "m", "--out", "o", "--modle", "x"))
    with pytest.raises(click_errors.BadParameter):
        parse_command(("eval", "--data", "d", "--model", "m", "--out", "o", "--frames", "x"))
    # an excerpt may leave out required options, never name a wrong one
    parse_command(("eval", "...", "--executor", "ray"), excerpt=True)
    with pytest.raises(click_errors.NoSuchOption):
        parse_command(("eval", "...", "--executer", "ray"), excerpt=True)


def test_documented_outputs_are_ignored_by_git() -> None:
    """Running the docs' commands in the checkout leaves no untracked folder (issue 33.5).

    Every relative ``--out`` of a documented command (upper-case placeholders aside)
    is ignored by the repository's ``.gitignore`` (``git check-ignore``).
    """
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout (ROOT/.git): not a clone")
    outs = sorted(
        {
            c.args[i + 1]
            for c in COMMANDS
            for i, tok in enumerate(c.args[:-1])
            if tok in ("--out", "-o")
            and not c.args[i + 1].startswith("/")
            and not re.match(r"[A-Z_]+\b", c.args[i + 1])  # RUN_DIR, RUN_DIR-prior
        }
    )
    assert {"report/", "audits/mvtb", "ft/qwen-mmr", "runs/qwen"} <= set(outs)
    probe = [f"{o.rstrip('/')}/results.sqlite" for o in outs]
    done = subprocess.run(
        [git, "-C", str(ROOT), "check-ignore", "--no-index", "--stdin", "-v", "-n"],
        input="\n".join(probe) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    not_ignored = [
        line.split("\t")[-1] for line in done.stdout.splitlines() if line.startswith("::")
    ]
    assert not_ignored == [], f"documented outputs not in .gitignore: {not_ignored}"
