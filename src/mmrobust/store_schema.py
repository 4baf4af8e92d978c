"""The results store's SQL schema and the in-place upgrade of older stores.

One row per ``(sample_id, repeat, model_fp, prompt_fp, policy_fp)``: the sample, which of
its ``--repeats`` asks it is (0 for the first, the only one of a run without repeats),
the model's fingerprint hash, the prompt configuration hash and the frame sampling policy
hash. The store's errors (:class:`StoreError`, :class:`RunFolderWriteError`) live here too.
A store written before ``repeat`` existed keys rows without it; :func:`upgrade`
rebuilds its table with the new key (every old row becomes repeat 0), so the rows of a
run are never lost and a run without repeats keeps its key.
"""

from __future__ import annotations

import sqlite3


class StoreError(ValueError):
    """The results database cannot be opened or read (corrupt, not SQLite)."""


class RunFolderWriteError(OSError):
    """The run folder cannot be written (disk full, quota, read-only): the run must stop.

    What was committed before stays intact; the message is one line naming the file.
    """


_WRITE_FAILURES = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY")
_WRITE_MESSAGES = ("disk is full", "disk i/o error", "readonly database", "unable to open")


def is_write_failure(exc: sqlite3.Error) -> bool:
    """True when SQLite failed to *write* (full disk, I/O error, read-only), not on bad data."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name.startswith(_WRITE_FAILURES) or any(m in str(exc).lower() for m in _WRITE_MESSAGES)


RESULTS_TABLE = """
CREATE TABLE IF NOT EXISTS results (
    sample_id TEXT NOT NULL,
    model_fp TEXT NOT NULL,
    prompt_fp TEXT NOT NULL,
    policy_fp TEXT NOT NULL,
    status TEXT NOT NULL,
    raw_text TEXT NOT NULL DEFAULT '',
    letter TEXT,
    rule TEXT,
    answer TEXT NOT NULL,
    options TEXT NOT NULL,
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    error TEXT,
    extra TEXT NOT NULL DEFAULT '{}',
    frame_indices TEXT,
    window_covered INTEGER,
    sample TEXT NOT NULL,
    created_at REAL NOT NULL,
    prompt TEXT,
    reasoning TEXT,
    reasoning_chars INTEGER,
    reasoning_form TEXT,
    repeat INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sample_id, repeat, model_fp, prompt_fp, policy_fp)
);
"""

SCHEMA = (
    RESULTS_TABLE
    + """
CREATE TABLE IF NOT EXISTS selection (
    model_fp TEXT NOT NULL,
    prompt_fp TEXT NOT NULL,
    policy_fp TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    PRIMARY KEY (model_fp, prompt_fp, policy_fp, sample_id)
);
"""
)

COLUMNS = (
    "sample_id", "model_fp", "prompt_fp", "policy_fp", "status", "raw_text", "letter", "rule",
    "answer", "options", "latency_s", "prompt_tokens", "completion_tokens", "error", "extra",
    "frame_indices", "window_covered", "sample", "created_at", "prompt", "reasoning",
    "reasoning_chars", "reasoning_form", "repeat",
)  # fmt: skip

ADDED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("prompt", "TEXT"),
    ("reasoning", "TEXT"),
    ("reasoning_chars", "INTEGER"),
    ("reasoning_form", "TEXT"),
)
"""Columns added after the first schema, with their SQL types (all nullable)."""


def _columns(db: sqlite3.Connection) -> dict[str, int]:
    """Column name -> its position in the primary key (0: not in it)."""
    return {row[1]: int(row[5]) for row in db.execute("PRAGMA table_info(results)")}


def upgrade(db: sqlite3.Connection) -> None:
    """Bring an older ``results`` table to :data:`SCHEMA` in place, in one transaction:
    the nullable :data:`ADDED_COLUMNS` are added (empty for old rows); a table keyed
    without ``repeat`` is rebuilt with it (its rows become repeat 0). Idempotent."""
    have = _columns(db)
    db.commit()
    db.execute("BEGIN")
    try:
        for name, sql_type in ADDED_COLUMNS:
            if name not in have:
                db.execute(f"ALTER TABLE results ADD COLUMN {name} {sql_type}")
        if have.get("repeat", 0) == 0:  # absent, or not part of the key
            db.execute("ALTER TABLE results RENAME TO results_before_repeat")
            db.execute(RESULTS_TABLE)
            cols = ", ".join(c for c in COLUMNS if c != "repeat")
            db.execute(f"INSERT INTO results ({cols}) SELECT {cols} FROM results_before_repeat")
            db.execute("DROP TABLE results_before_repeat")
    except BaseException:
        db.rollback()
        raise
    db.commit()


__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "RESULTS_TABLE",
    "SCHEMA",
    "RunFolderWriteError",
    "StoreError",
    "is_write_failure",
    "upgrade",
]
