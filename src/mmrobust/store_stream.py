"""Reading a run's rows from its store without holding them: :func:`stream_rows` (one row
at a time), :func:`count_rows` and :func:`tally` (counted by SQLite). The report reads a
million rows this way. Functions over an open :class:`mmrobust.store.ResultStore`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from mmrobust.store import ResultStore, RunKey, StoredRow, _from_db


def stream_rows(
    self: ResultStore, key: RunKey, *, repeat: int | None = 0, by_id: bool = False,
    media_only: bool = False, limit: int | None = None,
) -> Iterator[StoredRow]:  # fmt: skip
    """Stream the rows of ``key`` that count (its selection, see :meth:`ResultStore.selection`) one at
    a time, so memory does not grow with the rows: ``repeat`` (``None``: every ask),
    ``by_id`` (sample id order, SQLite's binary UTF-8 order = ``str`` order; else insertion
    order), ``media_only`` (samples with a video or image), ``limit`` (at most so many)."""
    where = _counted(self, key, repeat)
    if where is None:
        return
    sql, params = f"SELECT r.* FROM results r WHERE {where[0]}", where[1]
    if media_only:
        sql += (
            " AND (json_extract(r.sample, '$.video') IS NOT NULL"
            " OR json_extract(r.sample, '$.image') IS NOT NULL)"
        )
    sql += " ORDER BY " + ("r.sample_id, r.rowid" if by_id else "r.rowid")
    if limit is not None:
        sql += " LIMIT ?"
        params = [*params, max(0, limit)]
    for r in self._db.execute(sql, params):
        yield _from_db(r)


def count_rows(self: ResultStore, key: RunKey, *, repeat: int | None = 0) -> int:
    """How many rows :func:`stream_rows` yields (one SQL count)."""
    w = _counted(self, key, repeat)
    return 0 if w is None else int(self._db.execute(
        f"SELECT COUNT(*) FROM results r WHERE {w[0]}", w[1]).fetchone()[0])  # fmt: skip


def tally(
    self: ResultStore, key: RunKey, paths: Sequence[str], *, repeat: int | None = 0
) -> list[tuple[tuple[Any, ...], int, int, int]]:
    """The rows of :func:`stream_rows` counted in SQL, grouped by the values at JSON ``paths``
    of their sample (``$.meta.position``): ``(values, rows, coverage known, covered)``."""
    where = _counted(self, key, repeat)
    if where is None:
        return []
    cols = ", ".join("json_extract(r.sample, ?)" for _ in paths)
    groups = ", ".join(str(i + 1) for i in range(len(paths)))
    sql = (
        f"SELECT {cols}, COUNT(*), SUM(r.window_covered IS NOT NULL), "
        f"COALESCE(SUM(r.window_covered), 0) FROM results r WHERE {where[0]} GROUP BY {groups}"
    )
    n = len(paths)
    return [
        (tuple(r[:n]), int(r[n]), int(r[n + 1]), int(r[n + 2]))
        for r in self._db.execute(sql, [*paths, *where[1]])
    ]


def _counted(self: ResultStore, key: RunKey, repeat: int | None) -> tuple[str, list[Any]] | None:
    """The ``WHERE`` clause (table alias ``r``) and parameters of the rows of ``key`` that
    count; ``None`` when none can (``repeat`` > 0 in a store older than repeats)."""
    k: list[Any] = [key.model_fp, key.prompt_fp, key.policy_fp]
    where = "r.model_fp=? AND r.prompt_fp=? AND r.policy_fp=?"
    if repeat is not None:
        if "repeat" in {c[1] for c in self._db.execute("PRAGMA table_info(results)")}:
            where += " AND r.repeat=?"
            k.append(repeat)
        elif repeat:  # an older store holds first asks only
            return None
    try:  # an older store opened read-only has no selection table
        sel = self._db.execute("SELECT 1 FROM selection WHERE model_fp=? AND prompt_fp=? AND "
                               "policy_fp=? LIMIT 1", k[:3]).fetchone()  # fmt: skip
    except sqlite3.OperationalError:
        sel = None
    if sel is not None:
        where += (
            " AND EXISTS (SELECT 1 FROM selection s WHERE s.model_fp=r.model_fp AND "
            "s.prompt_fp=r.prompt_fp AND s.policy_fp=r.policy_fp AND s.sample_id=r.sample_id)"
        )
    return where, k


__all__ = ["count_rows", "stream_rows", "tally"]
