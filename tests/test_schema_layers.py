"""The core schema's place in the layers (issue 26): read from the source, imports inside
functions included (a lazy import is still a dependency).

``mmrobust.schema`` imports nothing of mmrobust but itself and the registry; ``media`` does not import
``datasets``; ``tasks`` does not import ``metrics``; ``datasets`` imports only the schema, the
registry, ``paths``, ``atomicfile`` and ``media``; the run does not reach into ``tamper/``; the manifest's
entry model and the effect vocabulary exist once. Each of these failed before the re-layout.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mmrobust"


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "mmrobust" or m.startswith("mmrobust.")}


def _package_imports(*parts: str) -> dict[str, set[str]]:
    base = SRC.joinpath(*parts)
    files = [base.with_suffix(".py")] if base.with_suffix(".py").is_file() else base.rglob("*.py")
    return {str(f.relative_to(SRC)): _imports(f) for f in files}


def _top(module: str) -> str:
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        # the registry of family ids (schema.benchmarks): Sample refuses an unknown benchmark
        # without importing mmrobust.families (the registry imports only mmrobust.plugins)
        (("schema",), {"mmrobust.schema", "mmrobust.registry"}),
        (("media",), {"mmrobust.media", "mmrobust.schema"}),
        (
            ("datasets",),
            {
                "mmrobust.datasets",
                "mmrobust.schema",
                "mmrobust.registry",
                "mmrobust.paths",
                "mmrobust.media",
                # the base layer's one way to write a kept file (temp + rename, no link followed)
                "mmrobust.atomicfile",
            },
        ),
        (("records",), {"mmrobust.schema", "mmrobust.status"}),
        (("paths",), set()),
    ],
)
def test_lower_layers_import_only_what_is_under_them(
    package: tuple[str, ...], allowed: set[str]
) -> None:
    bad = {
        f: sorted(m for m in mods if _top(m) not in allowed)
        for f, mods in _package_imports(*package).items()
    }
    assert {f: m for f, m in bad.items() if m} == {}


def test_tasks_take_effect_names_from_the_schema_not_metrics() -> None:
    bad = {
        f: m
        for f, m in _package_imports("tasks").items()
        if any(_top(x) == "mmrobust.metrics" for x in m)
    }
    assert bad == {}


def test_datasets_base_does_not_import_a_loader() -> None:
    assert not any(
        m.startswith("mmrobust.datasets.") and m != "mmrobust.datasets.checks"
        for m in _imports(SRC / "datasets" / "base.py")
    )


def test_the_run_does_not_reach_into_tamper() -> None:
    files = {**_package_imports("run"), **_package_imports("runner")}
    bad = {f: m for f, m in files.items() if any(_top(x) == "mmrobust.tamper" for x in m)}
    assert bad == {}


def test_each_shared_concept_is_defined_once() -> None:
    """The manifest entry model, the alias map and the tamper question exist in one module."""
    patterns = {
        "class ManifestEntry": r"^class ManifestEntry\b",
        "alias map": r"\{\s*\"rotate\":\s*\"rotation\"",
        "tamper question": r"\"Does this video exhibit any signs of tampering, such as corruption",
        "unzip": r"\.extractall\(|archive\.extract\(",
    }
    found: dict[str, list[str]] = {k: [] for k in patterns}
    for f in SRC.rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        for key, pattern in patterns.items():
            if re.search(pattern, text, re.M):
                found[key].append(str(f.relative_to(SRC)))
    assert found == {
        "class ManifestEntry": ["schema/manifest.py"],
        "alias map": ["schema/vocab.py"],
        "tamper question": ["schema/vocab.py"],
        "unzip": ["datasets/unzip.py"],
    }
