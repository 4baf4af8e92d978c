"""Refuse an unsupported Python at once, before pip resolves and downloads the dependencies.

The project's metadata is in pyproject.toml (``requires-python = ">=3.10"``); pip reads it
only after it has fetched much of what the project depends on, so an install on Python 3.9
spent minutes downloading before it failed. setuptools runs this file when pip first asks the
build backend for anything, seconds into the install.
"""

import sys

if sys.version_info < (3, 10):
    sys.exit(
        "mmrobust requires Python 3.10 or newer; this is Python "
        f"{sys.version.split()[0]} ({sys.executable}). Install with a newer python, e.g. "
        "python3.11 -m venv .venv && . .venv/bin/activate && pip install -e ."
    )

from setuptools import setup

setup()
