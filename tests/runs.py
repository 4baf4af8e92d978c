"""Reading a run folder's results table in tests (raw columns, keyed by sample id)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def stored_rows(run_dir: Path) -> dict[str, dict[str, Any]]:
    """``{sample_id: {column: value}}`` of ``run_dir/results.sqlite``."""
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM results").fetchall()
    return {r["sample_id"]: dict(r) for r in rows}
