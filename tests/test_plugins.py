"""The plugin seam: a package installed beside mmrobust adds a family, a backend and an effect.

The package ``mmrobust-pope`` of docs/extending.md ("A plugin package": its modules and its
``pyproject.toml``'s entry points, read from the docs as written) is installed here into a
temporary folder as a distribution (``mmrobust_pope-0.1.dist-info`` with
``entry_points.txt``, the file pip writes from ``[project.entry-points]``) and put on
``PYTHONPATH``: a POPE-style yes/no family (its ``.pope`` loader, its
scorer, its report section and its robustness-card section with a chance level, named by
module), a backend (``yesno:<letter>``, a ``BackendSpec`` object) and an effect
(``posterize``, an ``Effect`` class). Every ``mmrobust`` command runs in a fresh
``python`` process, so nothing but the entry points can make them known: ``list``,
``tamper``, ``eval``, ``rescore``, ``report``, ``compare``, ``run`` and ``--executor ray``
(a 2-node loopback cluster whose workers find the package by the forwarded ``PYTHONPATH``),
with no file under ``src/`` changed. A second installed package whose entry point names a
missing module is one warning naming it, and every command still works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.ray_cluster import LoopbackCluster, SharedCluster
from tests.synth import make_synthetic_video

ROOT = Path(__file__).resolve().parents[1]

DOCS = ROOT / "docs" / "extending.md"


def docs_block(after: str, lang: str) -> str:
    """The first ``lang`` code block after the line that starts with ``after`` in
    docs/extending.md: the package of "A plugin package" is installed from the docs as written."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(f"```{lang}\n", text.index(after)) + len(lang) + 4
    return text[start : text.index("```", start)]


def entry_points_txt() -> str:
    """``entry_points.txt`` (what pip writes) from the docs' ``pyproject.toml``."""
    import tomllib

    groups = tomllib.loads(docs_block("`pyproject.toml`:", "toml"))["project"]["entry-points"]
    return "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in groups.items()
    )


def _install(site: Path, name: str, version: str, entry_points: str) -> None:
    """A ``.dist-info`` as pip leaves it (the files importlib.metadata reads)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed plugin package, and a broken one beside it."""
    site = tmp_path_factory.mktemp("site")
    pkg = site / "mmrobust_pope"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for module in ("family", "backend", "effects"):
        text = docs_block(f"`mmrobust_pope/{module}.py`", "python")
        (pkg / f"{module}.py").write_text(text, encoding="utf-8")
    _install(site, "mmrobust-pope", "0.1", entry_points_txt())
    _install(site, "mmrobust-broken", "0.2", "[mmrobust.effects]\nbroken = no_such_module_x\n")
    return site


@pytest.fixture(scope="module")
def pope_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four questions about two tiny images: 3 Yes, 1 No."""
    folder = tmp_path_factory.mktemp("pope")
    for name, value in (("red.png", (200, 0, 0)), ("blue.png", (0, 0, 200))):
        Image.fromarray(np.full((16, 16, 3), value, np.uint8)).save(folder / name)
    rows = [
        ("q1", "red.png", "Is there something red?", "yes"),
        ("q2", "red.png", "Is the image mostly red?", "yes"),
        ("q3", "blue.png", "Is there something blue?", "yes"),
        ("q4", "blue.png", "Is there a dog?", "no"),
    ]
    data = folder / "four.pope"
    data.write_text(
        "\n".join(
            json.dumps({"id": i, "image": im, "question": q, "label": lab})
            for i, im, q, lab in rows
        ),
        encoding="utf-8",
    )
    return data


def mmrobust(
    site: Path, *args: str, code: int = 0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``mmrobust ARGS`` in a fresh interpreter with the plugin folder on ``PYTHONPATH``."""
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "src"), str(ROOT)])
    full.pop("MMROBUST_PLUGINS", None)
    full.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "mmrobust.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
    )
    assert proc.returncode == code, f"{args}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


ORIGIN = "plugin mmrobust-pope 0.1"


@pytest.mark.slow
def test_list_shows_each_plugin_part_and_where_it_came_from(site: Path) -> None:
    proc = mmrobust(site, "list", "--json")
    listed = json.loads(proc.stdout)
    (family,) = [e for e in listed["families"] if e["name"] == "pope"]
    assert family["origin"] == f"{ORIGIN} (mmrobust_pope.family)"
    assert (family["formats"], family["card"]) == (["pope"], "pope")
    (backend,) = [e for e in listed["models"] if e["name"] == "yesno"]
    assert backend["origin"] == f"{ORIGIN} (mmrobust_pope.backend:SPEC)"
    assert (backend["spec"], backend["media"]) == ("yesno:ARG", ["image", "text"])
    (effect,) = [e for e in listed["effects"] if e["name"] == "posterize"]
    assert effect["origin"] == f"{ORIGIN} (mmrobust_pope.effects:Posterize)"
    assert [p["name"] for p in effect["params"]] == ["levels"]
    (fmt,) = [e for e in listed["datasets"] if e["name"] == "pope"]
    assert fmt["origin"] == f"{ORIGIN} (mmrobust_pope.family)"
    assert listed["models"][0]["origin"] == "built-in"
    # the broken package: one warning naming it, nothing else stopped
    warnings = [line for line in proc.stderr.splitlines() if "plugin" in line]
    assert warnings == [
        "mmrobust: plugin 'broken' (plugin mmrobust-broken 0.2 (no_such_module_x)) was not "
        "loaded: ModuleNotFoundError: No module named 'no_such_module_x'"
    ]
    text = mmrobust(site, "list", "models").stdout
    (line,) = [x for x in text.splitlines() if x.strip().startswith("yesno:ARG")]
    assert line.endswith(f"answers one letter (a plugin's backend)  [from {ORIGIN} "
                         "(mmrobust_pope.backend:SPEC)]")  # fmt: skip


@pytest.mark.slow
def test_eval_rescore_report_compare_run_use_the_plugin(
    site: Path, pope_data: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    for letter in ("A", "B"):
        out = mmrobust(site, "eval", "--data", str(pope_data), "--format", "pope", "--model",
                       f"yesno:{letter}", "--out", str(runs / letter), "-q").stdout  # fmt: skip
        assert ("POPE accuracy 75.0%" if letter == "A" else "POPE accuracy 25.0%") in out
    metrics = json.loads((runs / "A" / "metrics.json").read_text())
    assert (metrics["benchmark"], metrics["f1"], metrics["yes_ratio"]) == ("pope", 6 / 7, 1.0)
    assert metrics["parse_fail_rate"] == 0.0  # every question was shown its image

    rescored = mmrobust(site, "rescore", str(runs / "B"), "--extract", "strict").stdout
    assert "POPE accuracy 25.0%" in rescored
    report = tmp_path / "report"
    mmrobust(site, "report", str(runs / "A"), str(runs / "B"), "--out", str(report))
    assert "## POPE on" in (report / "report.md").read_text()
    assert (report / "pope.csv").read_text().splitlines()[0] == "model,accuracy,f1,yes_ratio"
    card = json.loads(next((report / "cards").glob("yesno-A.json")).read_text())
    assert card["mmr"] == [] and card["sections"][0]["section"] == "pope"
    (row,) = card["pope"]
    assert (row["accuracy"], round(row["f1"], 2), row["n"]) == (75.0, 85.71, 4)
    assert {k: round(v, 2) for k, v in row["chance"].items()} == {
        "always yes": 85.71,  # 2P / (2P + N), P = 3, N = 1
        "coin flip": 60.0,  # 2P / (3P + N)
    }
    page = next((report / "cards").glob("yesno-A.html")).read_text()
    assert "POPE yes/no (object hallucination)" in page and "chance: always yes" in page

    compared = mmrobust(site, "compare", str(runs / "A"), str(runs / "B")).stdout
    assert "pope note: 4 questions" in compared

    suite = tmp_path / "suite"
    mmrobust(site, "run", "--model", "yesno:A", "--data", str(pope_data), "--out", str(suite),
             "--bootstrap", "0", "--no-report", "-q")  # fmt: skip
    (found,) = list(suite.rglob("metrics.json"))
    assert json.loads(found.read_text())["accuracy"] == 0.75


@pytest.mark.slow
def test_tamper_builds_the_plugin_effect(site: Path, tmp_path: Path) -> None:
    clip = make_synthetic_video(tmp_path / "clip.mp4", 40)
    out = tmp_path / "set"
    mmrobust(site, "tamper", str(clip), "--out", str(out), "--effects", "posterize",
             "-p", "posterize.levels=2", "--preset", "ultrafast", "-q")  # fmt: skip
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [(r["tamper_type"], r["params"]) for r in rows if r["tamper_type"] != "original"] == [
        ("posterize", {"levels": 2})
    ]


def test_a_module_named_in_mmrobust_plugins_is_loaded(site: Path, tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "loose_effect.py").write_text(
        "from mmrobust.tamper.effects import register_effect\n"
        "from mmrobust_pope.effects import Posterize\n\n"
        "class Invert(Posterize):\n"
        '    """Invert the window."""\n\n'
        '    name = "invert"\n\n'
        "register_effect(Invert)\n",
        encoding="utf-8",
    )
    env = {
        "MMROBUST_PLUGINS": "loose_effect, no_such_plugin_y",
        "PYTHONPATH": os.pathsep.join([str(loose), str(site), str(ROOT / "src"), str(ROOT)]),
    }
    proc = mmrobust(site, "list", "effects", "--json", env=env)
    origins = {e["name"]: e["origin"] for e in json.loads(proc.stdout)["effects"]}
    assert origins["invert"] == "MMROBUST_PLUGINS loose_effect"
    assert origins["posterize"] == f"{ORIGIN} (mmrobust_pope.effects:Posterize)"
    assert "plugin 'no_such_plugin_y' (MMROBUST_PLUGINS no_such_plugin_y) was not" in proc.stderr


@pytest.fixture()
def cluster(ray_cluster: SharedCluster) -> LoopbackCluster:
    """The session's two loopback nodes (``conftest.ray_cluster``); they do not see the plugin
    folder themselves (the driver forwards ``PYTHONPATH``)."""
    return ray_cluster.get()


@pytest.mark.slow
@pytest.mark.ray
def test_ray_workers_load_the_plugins(
    site: Path, pope_data: Path, cluster: LoopbackCluster, tmp_path: Path
) -> None:
    ray_args = ["--executor", "ray", "--ray-address", cluster.address]
    out = tmp_path / "ray-run"
    mmrobust(site, "eval", "--data", str(pope_data), "--format", "pope", "--model", "yesno:A",
             "--out", str(out), "--bootstrap", "0", "-q", *ray_args)  # fmt: skip
    info = json.loads((out / "run.json").read_text())
    assert info["executor"]["name"] == "ray" and info["n_rows"] == 4
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["accuracy"], metrics["error_rate"]) == (0.75, 0.0)

    clip = make_synthetic_video(tmp_path / "clip.mp4", 40)
    built = tmp_path / "set"
    mmrobust(site, "tamper", str(clip), "--out", str(built), "--effects", "posterize",
             "--preset", "ultrafast", "-q", *ray_args)  # fmt: skip
    kinds = [json.loads(x)["tamper_type"] for x in (built / "manifest.jsonl").open()]
    assert sorted(kinds) == ["original", "posterize"]
