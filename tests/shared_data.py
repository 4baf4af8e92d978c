"""Data that lives beside the repository, in the team's ``../shared`` folder.

A bare clone has no ``../shared``: every test that reads it must skip with a
printed reason (``pytest -ra``, the default here, lists skip reasons), never
fail. Use :func:`needs_shared` as a marker or :func:`shared_file` inside a
test; ``.ci/bare_clone_check.sh`` runs the test files that mention
``shared`` in a copy of the repository with no ``../shared`` beside it.

``MMROBUST_SHARED`` points the tests at another copy of the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DIR = Path(
    os.environ.get("MMROBUST_SHARED") or Path(__file__).resolve().parents[2] / "shared"
)
"""``<repo>/../shared`` (or ``$MMROBUST_SHARED``)."""

MMR_JSON = SHARED_DIR / "data" / "mmr" / "MMR-benchmark.json"
"""The released MMR file (300 pairs), when the shared folder is present."""


def _reason(path: Path) -> str:
    return f"shared data not found at {path} (a bare clone has no ../shared beside it)"


def needs_shared(path: Path) -> pytest.MarkDecorator:
    """A ``skipif`` marker: skip the test with a reason when ``path`` does not exist."""
    return pytest.mark.skipif(not path.exists(), reason=_reason(path))


def shared_file(path: Path) -> Path:
    """``path`` if it exists, else skip the calling test with the reason."""
    if not path.exists():
        pytest.skip(_reason(path))
    return path


__all__ = ["MMR_JSON", "SHARED_DIR", "needs_shared", "shared_file"]
