"""The plugin package of docs/extending.md ("A plugin package"), installed for a test.

Its modules and its ``pyproject.toml``'s entry points are read from the docs as written and
installed into a folder as a distribution (``mmrobust_pope-0.1.dist-info`` with
``entry_points.txt``, the file pip writes from ``[project.entry-points]``), to be put on
``PYTHONPATH``; :func:`mmrobust` runs the command in a fresh interpreter with it there.
Used by ``tests/test_plugins.py`` and ``tests/test_ray.py`` (the Ray workers load it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from PIL import Image

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


def install_site(site: Path) -> Path:
    """Install the docs' plugin package into the folder ``site`` (made here), and a broken
    one beside it (its entry point names a module that does not exist)."""
    site.mkdir(parents=True)
    pkg = site / "mmrobust_pope"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for module in ("family", "backend", "effects"):
        text = docs_block(f"`mmrobust_pope/{module}.py`", "python")
        (pkg / f"{module}.py").write_text(text, encoding="utf-8")
    _install(site, "mmrobust-pope", "0.1", entry_points_txt())
    _install(site, "mmrobust-broken", "0.2", "[mmrobust.effects]\nbroken = no_such_module_x\n")
    return site


def write_pope_data(folder: Path) -> Path:
    """Four questions about two tiny images (3 Yes, 1 No) in ``folder`` (made here)."""
    folder.mkdir(parents=True)
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
"""Where ``mmrobust list`` says the package's parts came from (then the entry point)."""
