"""A run folder of many rows, made in seconds: for the report's scale tests and benchmarks.

:func:`big_run` evaluates 6 text-only tamper samples for real (``run.json``,
``metrics.json`` and the store's schema come from ``mmrobust eval``), then replaces the
stored rows by ``n`` synthetic ones written with one ``executemany`` into the store's own
columns (:data:`mmrobust.store_schema.COLUMNS`). ``metrics.json`` still describes the 6
real rows: these runs are for the sample browser, not for the leaderboards' numbers.

Sample ``i``: id ``s0000042`` (zero-padded, so id order is ``i`` order), type
``TYPES[i % 6]``, truth ``B`` (No) for originals and ``A`` (Yes) otherwise; the reply is
``answer_of(model, i)``: ``"A"`` / ``"B"`` / ``"?"`` (a parse failure, every 97th row).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmrobust.store_schema import COLUMNS

TYPES = ("original", "dropping", "masking", "repetition", "rotation", "substitution")


def sample_id(i: int) -> str:
    """The id of synthetic sample ``i``."""
    return f"s{i:07d}"


def answer_of(model: str, i: int) -> str:
    """The reply of ``constant:A`` / ``constant:B`` to sample ``i`` (``?`` every 97th row)."""
    return "?" if i % 97 == 96 else model.rsplit(":", 1)[-1]


def _seed_run(out: Path, model: str) -> None:
    from typer.testing import CliRunner

    from mmrobust.cli import app

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "seed.jsonl"
        common = {
            "benchmark": "tamper",
            "question": "Tampered?",
            "options": {"A": "Yes", "B": "No"},
        }
        data.write_text("".join(
            json.dumps({**common, "id": f"v0__{t}", "tamper_type": t, "group": "v0",
                        "answer": "B" if t == "original" else "A"}) + "\n" for t in TYPES
        ), encoding="utf-8")  # fmt: skip
        res = CliRunner().invoke(app, ["eval", "--data", str(data), "--model", model, "--out",
                                       str(out), "--bootstrap", "0", "-q"])  # fmt: skip
        assert res.exit_code == 0, res.output


def big_run(out: Path, n: int, model: str = "constant:A") -> Path:
    """A run folder at ``out`` with ``n`` stored rows of ``model`` (see the module docstring).

    Returns:
        ``out``.
    """
    _seed_run(out, model)
    with sqlite3.connect(out / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        template: dict[str, Any] = dict(db.execute("SELECT * FROM results LIMIT 1").fetchone())
        db.execute("DELETE FROM results")
        db.execute("DELETE FROM selection")
        sample = json.loads(template["sample"])

        def rows() -> Iterator[tuple[Any, ...]]:
            for i in range(n):
                t = TYPES[i % len(TYPES)]
                truth = "B" if t == "original" else "A"
                reply = answer_of(model, i)
                s = {**sample, "id": sample_id(i), "tamper_type": t, "answer": truth,
                     "group": f"g{i // 6}"}  # fmt: skip
                row = {**template, "sample_id": s["id"], "sample": json.dumps(s), "answer": truth,
                       "raw_text": reply, "letter": None if reply == "?" else reply,
                       "status": "parse_fail" if reply == "?" else "ok"}  # fmt: skip
                yield tuple(row[c] for c in COLUMNS)

        cols = ", ".join(COLUMNS)
        marks = ", ".join("?" for _ in COLUMNS)
        db.executemany(f"INSERT INTO results ({cols}) VALUES ({marks})", rows())
    return out


__all__ = ["TYPES", "answer_of", "big_run", "sample_id"]
