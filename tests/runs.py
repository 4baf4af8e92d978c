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


def duplicate_rows(run_dir: Path) -> int:
    """(sample, configuration key) pairs stored more than once in ``run_dir/results.sqlite``
    (0 when each sample has one row per key, as the store's primary key promises)."""
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        (n,) = db.execute(
            "SELECT COUNT(*) FROM (SELECT sample_id FROM results GROUP BY sample_id, model_fp, "
            "prompt_fp, policy_fp HAVING COUNT(*) > 1)"
        ).fetchone()
    return int(n)
