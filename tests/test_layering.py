"""The whole import graph of ``src/mmrobust``, read from the source (issue 26).

Every ``import`` / ``from ... import`` naming mmrobust, and every ``importlib.import_module``
/ ``__import__`` call with a literal mmrobust name, is an edge, wherever it stands: at
module level, inside a function (a lazy import is still a dependency), or under
``if TYPE_CHECKING:``. ``from pkg import name`` is an edge to ``pkg.name`` when that is a
module, else to ``pkg`` (its ``__init__``). Asserted:

* no import cycle between modules, and none between the top-level packages;
* no upward import between the layers of :data:`LAYERS` (lowest first; imports inside one
  layer are free, the cycle check still applies to them);
* every module of ``src/mmrobust`` has a layer (a new package must be placed here).

Names that a lower layer may reach *without importing them*: ``"module:attr"`` strings in a
:class:`mmrobust.registry.Registry` resolved at first use (the families' metric and report
functions, ``models.spec.MODELS``, ``distributed.RAY_RUNNERS``). That is the seam, not a
loophole: the lower code names an entry point, and never runs the higher module's import.

Function-level imports that cross packages, and why they are inside a function (none of
them holds a cycle together; the cycle tests include them):

* ``cli/*`` -> every library module: ``mmrobust --help`` stays light
  (``tests/test_startup_imports.py``);
* the Ray path: ``run.eval``, ``tamper.console``, ``mmrdata.command`` -> ``distributed``'s
  Ray-free ``__init__`` (``RayOptions``, ``RAY_RUNNERS``) only when ``--executor ray``;
  ``distributed.replicas`` -> ``run``, ``judge``, ``models``, ``mmrdata`` inside the replica
  actor (imported on the Ray worker), ``distributed.tamper`` -> ``tamper.console``;
* decoding only where frames are read: ``datasets.windows``, ``forensic.detector``,
  ``models.forensic``, ``run.process``, ``audit``, ``finetune.pixels`` -> ``media``; ``models.base`` /
  ``models.spec`` -> ``media.jpeg``;
* torch only when training: ``finetune.data`` / ``finetune.train`` -> ``datasets.mmr``,
  ``prompts``, ``models._adapter``;
* one path each: ``families.base`` -> ``datasets.base`` (a family's loaders into ``FORMATS``),
  ``run.config`` -> ``extract`` / ``tasks`` / ``media.cache`` (validating options),
  ``report.view`` -> ``run.process`` (scoring a run stopped before ``metrics.json``),
  ``report.tamper`` -> ``datasets.hub``, ``judge`` -> ``models.spec``, ``audit`` ->
  ``metrics`` / ``report.units``, ``demo`` / ``suite`` -> ``report.site``, ``suite`` -> ``report.wandb_log`` (after the runs),
  ``catalog`` -> every registry (``mmrobust list``).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mmrobust"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # imports nothing of mmrobust but this layer: types, statuses, registry, cache paths,
    # the Ray-free options module (mmrobust.distributed's __init__, no Ray import)
    (
        "base",
        (
            "mmrobust",
            "schema",
            "status",
            "redact",
            "registry",
            "paths",
            "runlock",
            "workers",
            "records",
            "reasoning",
            "reply_words",
            "reply_json",
            "reply_lang",
            "reply_correction",
            "extraction",
            "safenames",
            "atomicfile",
            "frame_size",
            "wandb_login",
            "plugins",
            "settings_doc",
            "distributed.__init__",
        ),
    ),
    ("media", ("media",)),  # decode, sample, cache: schema's Window only
    (
        "datasets",
        ("datasets", "store", "store_schema", "store_stream", "forensic"),
    ),  # loaders; the SQLite store
    ("tamper", ("tamper", "perturb")),  # the builders write manifests the datasets read
    ("families", ("families",)),  # the family seam (higher code named by "module:attr")
    (
        "protocol",
        ("official", "official_extract", "prompts", "extract", "tasks"),
    ),  # reference quirks, templates
    ("metrics", ("metrics",)),  # pure, over stored rows
    ("models", ("models",)),  # adapters (forensic's answers via tasks)
    ("model tools", ("judge", "mmrdata")),  # use a model: the LLM judge, MMR data generation
    # eval, rescore; finetune; per-sample logs (export: where it writes, export_targets)
    ("run", ("run", "runner", "finetune", "export", "export_targets")),
    ("distributed", ("distributed",)),  # Ray executors over run / tamper / mmrdata
    ("report", ("report",)),  # one run view, tables, plots, site
    ("apps", ("audit", "audit_scores", "audit_builds", "demo", "suite", "catalog")),  # whole jobs
    ("cli", ("cli",)),
]
"""Lowest first. A key names a top-level module or package (``media`` is ``mmrobust.media``
and all under it); ``distributed.__init__`` names that one file only (longest key wins)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(name: str) -> str:
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imported_name(node: ast.AST) -> str:
    """The module a call ``importlib.import_module("name")`` / ``import_module("name")`` /
    ``__import__("name")`` with a literal name imports, else ``""``."""
    if not isinstance(node, ast.Call) or not node.args:
        return ""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    arg = node.args[0]
    if name in ("import_module", "__import__") and isinstance(arg, ast.Constant):
        return str(arg.value) if isinstance(arg.value, str) else ""
    return ""


def _edges(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """``(target module, line, inside a function)`` for each mmrobust import of ``module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package
                    for _ in range(child.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                if base.split(".")[0] == "mmrobust":
                    for alias in child.names:
                        sub = f"{base}.{alias.name}"
                        out.append((sub if sub in MODULES else _resolve(base), child.lineno, inner))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "mmrobust":
                        out.append((_resolve(alias.name), child.lineno, inner))
            elif _imported_name(child).split(".")[0] == "mmrobust":
                # importlib.import_module("mmrobust.x") / __import__("mmrobust.x"): an edge too
                out.append((_resolve(_imported_name(child)), child.lineno, inner))
            visit(child, inner)

    visit(tree, False)
    return out


GRAPH: dict[str, list[tuple[str, int, bool]]] = {m: _edges(m, p) for m, p in MODULES.items()}


def _layer_of(module: str) -> int:
    rel = module.removeprefix("mmrobust").removeprefix(".")
    if module in MODULES and MODULES[module].name == "__init__.py":
        keys = [f"{rel}.__init__" if rel else "mmrobust"]
    else:
        keys = []
    parts = rel.split(".") if rel else []
    keys += [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    for key in keys:
        for index, (_, members) in enumerate(LAYERS):
            if key in members:
                return index
    raise AssertionError(f"{module} has no layer: add it to LAYERS in tests/test_layering.py")


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_is_read() -> None:
    """The reader sees both kinds of import (guards against an empty graph passing)."""
    assert len(MODULES) > 150
    edges = [(m, t, f) for m, es in GRAPH.items() for t, _, f in es]
    assert ("mmrobust.run.eval", "mmrobust.run.config", False) in edges
    assert any(f for _, _, f in edges)  # function-level imports are read too
    assert ("mmrobust.run.eval", "mmrobust.distributed", True) in edges
    call = ast.parse('importlib.import_module("mmrobust.families")').body[0]
    assert _imported_name(getattr(call, "value", call)) == "mmrobust.families"  # hidden edges too


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer_of(module)


def test_no_import_cycle_between_modules() -> None:
    graph = {m: {t for t, _, _ in es if t != m} for m, es in GRAPH.items()}
    assert _cycles(graph) == []


def test_no_import_cycle_between_packages() -> None:
    """Top-level packages as nodes; distributed's Ray-free ``__init__`` (below run, tamper and
    mmrdata) is its own node, as in :data:`LAYERS`, its Ray modules (above them) another."""

    def node(module: str) -> str:
        return "distributed.__init__" if module == "mmrobust.distributed" else _package(module)

    graph: dict[str, set[str]] = defaultdict(set)
    for module, edges in GRAPH.items():
        graph[node(module)] |= {node(t) for t, _, _ in edges} - {node(module)}
    assert _cycles(graph) == []


def test_no_upward_import() -> None:
    upward = sorted(
        f"{module}:{line} imports {target} ({LAYERS[_layer_of(target)][0]} above "
        f"{LAYERS[_layer_of(module)][0]}{', in a function' if inner else ''})"
        for module, edges in GRAPH.items()
        for target, line, inner in edges
        if _layer_of(target) > _layer_of(module)
    )
    assert upward == []


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("media", "datasets"),
        ("datasets", "metrics"),
        ("metrics", "models"),
        ("models", "run"),
        ("run", "report"),
        ("report", "cli"),
    ],
)
def test_the_issues_order(lower: str, higher: str) -> None:
    """media < datasets/schema < metrics < models < run < report < cli (issue 26)."""
    assert _layer_of(f"mmrobust.{lower}") < _layer_of(f"mmrobust.{higher}")
    assert _layer_of("mmrobust.schema") <= _layer_of("mmrobust.media")


MAX_LINES = 500
"""Largest module, in lines (issue 26; the house rule)."""


def test_every_module_is_under_500_lines() -> None:
    """Catches growth: a module that reaches the limit is split by job (``run/stop.py`` came
    out of ``run/process.py``, ``cli/`` out of ``cli.py``)."""
    over = {
        str(path.relative_to(SRC)): n
        for path in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_LINES
    }
    assert over == {}


def _subscript_benchmark_comparisons(tree: ast.AST) -> list[int]:
    """Lines comparing ``x["benchmark"]`` to a string literal: the one spelling the families'
    own check (``tests/test_family_seam.py``: names, attributes, ``.get("benchmark")``)
    does not read."""

    def is_literal(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return True
        elts = getattr(node, "elts", None)
        return bool(elts) and all(is_literal(e) for e in elts)

    def is_bench(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == "benchmark"
        )

    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(is_bench(s) for s in (node.left, *node.comparators))
        and any(is_literal(s) for s in (node.left, *node.comparators))
    ]


def test_no_subscript_benchmark_comparison_outside_families() -> None:
    assert _subscript_benchmark_comparisons(ast.parse('m["benchmark"] == "mmr"')) == [1]
    assert _subscript_benchmark_comparisons(ast.parse('r["benchmark"] in ("a", "b")')) == [1]
    found = {
        str(path.relative_to(SRC)): lines
        for path in MODULES.values()
        if "families" not in path.relative_to(SRC).parts
        and (lines := _subscript_benchmark_comparisons(ast.parse(path.read_text("utf-8"))))
    }
    assert found == {}
