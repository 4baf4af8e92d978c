"""The ``mmrobust`` command: thin wrappers over library calls.

Each command parses its options and calls one library function; anything a command does, a
notebook user can do by calling that function. Heavy modules are imported inside the commands
so ``mmrobust --help`` stays fast.

One module per command group: :mod:`~mmrobust.cli.tamper` (``tamper``),
:mod:`~mmrobust.cli.eval` (``eval``, ``rescore``), :mod:`~mmrobust.cli.report` (``report``,
``compare``), :mod:`~mmrobust.cli.export` (``export``), :mod:`~mmrobust.cli.data` (``audit``, ``mmr-data``, ``list``),
:mod:`~mmrobust.cli.demo` (``finetune``, ``run``, ``demo``); shared options in
:mod:`~mmrobust.cli.options`. They are imported here in the order ``mmrobust --help`` lists
the commands. ``mmrobust.cli:main`` is the console script; ``python -m mmrobust.cli`` runs it too.
"""

from __future__ import annotations

# isort: off
# first: a Ctrl-C while the imports below run is one line, exit 130 (it installs on import)
from mmrobust.cli import _startup

# The import order is the order of the commands in ``mmrobust --help``.
from mmrobust.cli._app import app
from mmrobust.cli import tamper as _tamper  # noqa: F401  (tamper)
from mmrobust.cli import perturb as _perturb  # noqa: F401  (perturb)
from mmrobust.cli import eval as _eval  # noqa: F401  (eval, rescore)
from mmrobust.cli import report as _report  # noqa: F401  (report, compare)
from mmrobust.cli import export as _export  # noqa: F401  (export)
from mmrobust.cli import data as _data  # noqa: F401  (audit, mmr-data, list)
from mmrobust.cli import demo as _demo  # noqa: F401  (finetune, run, demo)
# isort: on


def main() -> None:
    """Console-script entry point."""
    _startup.started()
    app()


__all__ = ["app", "main"]
