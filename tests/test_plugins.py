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
``tamper``, ``eval``, ``rescore``, ``report``, ``compare`` and ``run``, with no file under
``src/`` changed (``--executor ray``: ``tests/test_ray.py``, on its 2-node loopback cluster,
whose workers find the package by the forwarded ``PYTHONPATH``). A second installed package whose entry point names a
missing module is one warning naming it, and every command still works.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.plugin_package import ORIGIN, ROOT, install_site, mmrobust, write_pope_data
from tests.synth import make_synthetic_video


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed plugin package, and a broken one beside it."""
    return install_site(tmp_path_factory.mktemp("plugins") / "site")


@pytest.fixture(scope="module")
def pope_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_pope_data(tmp_path_factory.mktemp("pope") / "data")


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


def test_an_entry_point_naming_the_wrong_object_is_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """In-process: an object of the wrong kind for its group, or a missing attribute, is kept as
    a failure with its reason and logged once; nothing is registered and nothing raises."""
    from mmrobust.models.spec import MODELS
    from mmrobust.plugins import Plugin, failures, load_one

    wrong = Plugin("mmrobust.backends", "dumps", "json:dumps", "plugin test 0 (json:dumps)")
    missing = Plugin("mmrobust.effects", "nope", "json:no_such_thing", "plugin test 0 (json)")
    with caplog.at_level("WARNING", logger="mmrobust.plugins"):
        assert load_one(wrong) is False and load_one(missing) is False
    assert "dumps" not in MODELS
    reasons = {p.name: why for p, why in failures() if p in (wrong, missing)}
    assert reasons == {
        "dumps": "TypeError: function is not a BackendSpec",
        "nope": "AttributeError: module 'json' has no attribute 'no_such_thing'",
    }
    assert [r.getMessage() for r in caplog.records] == [
        "mmrobust: plugin 'dumps' (plugin test 0 (json:dumps)) was not loaded: "
        "TypeError: function is not a BackendSpec",
        "mmrobust: plugin 'nope' (plugin test 0 (json)) was not loaded: "
        "AttributeError: module 'json' has no attribute 'no_such_thing'",
    ]
