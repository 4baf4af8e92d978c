"""The benchmark-family seam: a new family defined in this one file runs end to end.

The toy family ``toy-sums`` is a worked example of docs/extending.md ("Add a benchmark
family"): its own data format (``*.sums``: ``a+b`` per line), its own score (accuracy
and the mean absolute error of the chosen sum), its console lines, its Markdown section
and CSV, its HTML leaderboard and its ``compare`` note. It is registered here and then
``eval``, ``rescore``, ``report`` and ``compare`` run on it through the CLI, with no
change under ``src/``. The rest checks the seam itself: no module outside
``mmrobust.families`` compares ``benchmark`` to a string literal, and an unknown family
gets a "did you mean".
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets.base import Dataset, sha256_files
from mmrobust.families import (
    BenchmarkFamily,
    ScoreOptions,
    UnknownFamilyError,
    get_family,
    register_family,
)
from mmrobust.records import ScoredRecord
from mmrobust.report.common import to_markdown
from mmrobust.report.html import Table, frame_to_table
from mmrobust.report.view import ReportPaths, RunGroup
from mmrobust.schema import Sample
from mmrobust.status import Status

SRC = Path(__file__).resolve().parents[1] / "src" / "mmrobust"
runner = CliRunner()

# --------------------------------------------------------------------------- the toy family


def load_sums(path: str | Path, **options: Any) -> Dataset:
    """``*.sums``: one ``a+b`` per line; four options around the true sum, answer ``B``."""
    file = Path(path)
    samples = []
    for n, line in enumerate(file.read_text(encoding="utf-8").split(), start=1):
        a, b = (int(x) for x in line.split("+"))
        total = a + b
        options_ = {"A": str(total - 1), "B": str(total), "C": str(total + 1), "D": str(total + 2)}
        samples.append(
            Sample(
                id=f"s{n}",
                benchmark="toy-sums",
                question=f"What is {a} + {b}?",
                options=options_,
                answer="B",
                group=f"s{n}",
            )
        )
    return Dataset(
        name=file.stem, benchmark="toy-sums", samples=samples, defects=[],
        data_hash=sha256_files([file]), source=str(file),
    )  # fmt: skip


def score_sums(records: Sequence[ScoredRecord], *, failures: str = "wrong") -> dict[str, Any]:
    """Accuracy (failures wrong) and the mean absolute error of the chosen sums."""
    n = len(records)
    answered = [r for r in records if r.status is Status.OK and r.predicted]
    errors = [abs(int(r.options[str(r.predicted)]) - int(r.options[r.answer])) for r in answered]
    return {
        "benchmark": "toy-sums",
        "n_samples": n,
        "accuracy": sum(r.correct for r in records) / n if n else 0.0,
        "mae": sum(errors) / len(errors) if errors else None,
        "parse_fail_rate": sum(r.status is Status.PARSE_FAIL for r in records) / n if n else 0.0,
        "error_rate": sum(r.status.is_error for r in records) / n if n else 0.0,
        "failures": failures,
    }


def sums_frame(group: RunGroup) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"Model": lab, "Accuracy": 100 * m["accuracy"], "MAE": m["mae"]}
            for lab, m in group.metrics().items()
        ]
    )


def sums_markdown(groups: Sequence[RunGroup], out: Path, paths: ReportPaths) -> list[str]:
    md = []
    for g in groups:
        frame = sums_frame(g)
        csv = out / "toy_sums.csv"
        frame.to_csv(csv, index=False)
        paths.files.append(csv)
        md += [f"## Toy sums on {g.where}", "", to_markdown(frame), ""]
    return md


def sums_tables(group: RunGroup, published: bool) -> list[Table]:
    return [frame_to_table(sums_frame(group), f"Toy sums on {group.where}", group="toy-sums")]


TOY = BenchmarkFamily(
    id="toy-sums",
    title="toy sums",
    score=score_sums,
    score_options=lambda o: {"failures": o.failures},
    failure_rule=lambda failures: "a failed answer counts as wrong; MAE over answered sums",
    summary=lambda m: [f"accuracy {100 * m['accuracy']:.1f}%  MAE {m['mae']}"],
    headline=lambda m: f"acc {100 * m['accuracy']:.1f}%",
    markdown=sums_markdown,
    leaderboards=sums_tables,
    compare_notes=lambda records: [f"toy note: {len(records)} sums compared"],
    loaders={"sums": load_sums},
)


@pytest.fixture(scope="module")
def toy() -> BenchmarkFamily:
    return register_family(TOY, replace=True)


# --------------------------------------------------------------------------- end to end


def test_a_family_from_one_test_file_runs_eval_rescore_report_compare(
    toy: BenchmarkFamily, tmp_path: Path
) -> None:
    data = tmp_path / "four.sums"
    data.write_text("1+1\n2+3\n10+5\n7+0\n", encoding="utf-8")
    runs = {}
    for letter in ("B", "C"):
        out = tmp_path / f"run-{letter}"
        res = runner.invoke(app, [
            "eval", "--data", str(data), "--format", "sums", "--model", f"constant:{letter}",
            "--out", str(out), "-q",
        ])  # fmt: skip
        assert res.exit_code == 0, res.output
        runs[letter] = out
        m = json.loads((out / "metrics.json").read_text())
        assert m["benchmark"] == "toy-sums" and m["n_samples"] == 4
        assert (m["accuracy"], m["mae"]) == ((1.0, 0.0) if letter == "B" else (0.0, 1.0))
    # eval printed the family's summary line (after the common head line)
    assert "toy-sums: 4 samples, model constant:C" in res.output
    assert "accuracy 0.0%  MAE 1.0" in res.output

    res = runner.invoke(app, ["rescore", str(runs["C"]), "--extract", "strict"])
    assert res.exit_code == 0, res.output
    assert "accuracy 0.0%  MAE 1.0" in res.output and "extraction lenient -> strict" in res.output

    rep = tmp_path / "report"
    res = runner.invoke(app, ["report", str(runs["B"]), str(runs["C"]), "--out", str(rep)])
    assert res.exit_code == 0, res.output
    assert (rep / "toy_sums.csv").read_text().splitlines() == [
        "Model,Accuracy,MAE",
        "constant:B,100.0,0.0",
        "constant:C,0.0,1.0",
    ]
    assert "## Toy sums on four (data sha256 " in (rep / "report.md").read_text()
    page = (rep / "index.html").read_text()
    assert "Toy sums on four" in page  # its HTML leaderboard
    assert "a failed answer counts as wrong; MAE over answered sums" in page  # its failure rule

    res = runner.invoke(app, ["compare", str(runs["B"]), str(runs["C"])])
    assert res.exit_code == 0, res.output
    assert "accuracy: constant:B 100.0%, constant:C 0.0%" in res.output
    assert "toy note: 4 sums compared" in res.output


# --------------------------------------------------------------------------- the seam itself


def test_unknown_family_suggests_close_names() -> None:
    with pytest.raises(UnknownFamilyError, match="Did you mean: tamper"):
        get_family("tampr")
    with pytest.raises(ValueError, match="unknown benchmark family 'mmrr'"):
        Sample(id="x", benchmark="mmrr", question="q", options={"A": "a"}, answer="A")


def test_builtin_families_state_their_own_failure_rule() -> None:
    assert "left out of F1" in get_family("tamper").failure_rule("exclude")
    assert "counted wrong in F1" in get_family("tamper").failure_rule("wrong")
    mmr = get_family("mmr").failure_rule("exclude")
    assert "not right" in mmr and "no F1" in mmr
    opts = ScoreOptions(failures="wrong", n_resamples=0, seed=3, defects=("d",), official=True)
    assert get_family("mmr").score_options(opts) == {
        "n_boot": 0, "seed": 3, "defects": ["d"], "pairing": "position",
    }  # fmt: skip
    assert get_family("tamper").score_options(opts)["official"] is True


def _benchmark_literal_comparisons(tree: ast.AST) -> list[int]:
    """Lines comparing something named ``benchmark`` (or ``.benchmark``, ``bench``) to a str
    literal (``==``, ``!=``, ``in``, ``.startswith``)."""

    def is_bench(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in ("benchmark", "bench")
        if isinstance(node, ast.Attribute):
            return node.attr == "benchmark"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = node.args
            return node.func.attr == "get" and bool(args) and _str(args[0]) == "benchmark"
        return False

    def literal(node: ast.AST) -> bool:
        if _str(node) is not None:
            return True
        elts = getattr(node, "elts", None)
        return bool(elts) and all(_str(e) is not None for e in elts)

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_bench(s) for s in sides) and any(literal(s) for s in sides):
                lines.append(node.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "removeprefix", "endswith")
            and is_bench(node.func.value)
        ):
            lines.append(node.lineno)
    return lines


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def test_no_module_outside_families_compares_benchmark_to_a_string() -> None:
    found = {
        str(p.relative_to(SRC)): lines
        for p in sorted(SRC.rglob("*.py"))
        if "families" not in p.relative_to(SRC).parts
        and (lines := _benchmark_literal_comparisons(ast.parse(p.read_text(encoding="utf-8"))))
    }
    assert found == {}


def test_the_literal_check_sees_the_old_forms() -> None:
    old = (
        'if benchmark == "tamper": pass\n'
        'x = [r for r in runs if r.benchmark == "mmr"]\n'
        'y = bench in ("mmr", "tamper-leading")\n'
        'z = r.benchmark.startswith("tamper-")\n'
        'w = metrics.get("benchmark") == "mmr"\n'
    )
    assert sorted(_benchmark_literal_comparisons(ast.parse(old))) == [1, 2, 3, 4, 5]


def _imports(path: Path) -> set[str]:
    """Every ``mmrobust`` module a file imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mmrobust"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mmrobust"))
    return found


def _module(path: Path) -> str:
    parts = ("mmrobust", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_report_and_families_import_without_cycles_or_upward_edges() -> None:
    files = [*(SRC / "report").glob("*.py"), *(SRC / "families").glob("*.py")]
    names = {_module(p) for p in files}
    graph = {_module(p): (_imports(p) & names) - {_module(p)} for p in files}
    # the families import nothing above them (metrics, report, run, models: named lazily)
    for p in (SRC / "families").glob("*.py"):
        upward = {m for m in _imports(p) if m.split(".")[1] in ("metrics", "report", "run")}
        assert upward == set(), (p.name, upward)
    # no cycle among the report modules (plots -> tables -> tasks -> plots was one)
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            assert state.get(d) != 1, " -> ".join([*path, m, d])
            if d not in state:
                visit(d, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
