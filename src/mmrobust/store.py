"""Results store: one SQLite database (WAL) per run folder, one row per answered sample
(per repeat of it with ``--repeats``).

Key: ``(sample_id, repeat, model_fp, prompt_fp, policy_fp)`` — the sample, which of its
``--repeats`` asks this is (0 without repeats), the model's fingerprint hash, the prompt
configuration hash and the frame sampling policy hash. The key is the table's primary key,
so a sample is never stored twice for one configuration and repeat. The schema and the
upgrade of older stores: ``mmrobust.store_schema``.

Write order: the runner stores the rows of each finished work item (a Ray
run: of each block) as soon as they are known, in one transaction
(:meth:`ResultStore.put_many`; :meth:`ResultStore.put` for one row),
committed before the next rows are written. With WAL and
``synchronous=NORMAL`` a process killed with SIGKILL loses nothing that
was committed (only a power loss can drop the last transactions), and a
half-written row never becomes visible. Re-running skips the samples already
answered under the key; rows with a transient error
(``api_error``, ``timeout``, ``rate_limited``, ``model_error``) are not
finished and are retried, overwriting the failed row.

Each row also keeps the sample itself as JSON (so reports and ``rescore``
work without the dataset), the prompt exactly as sent (system message, user
turn, assistant prefill; ``prompts.prompt_record``), the options and answer
letter *as displayed* (after any permutation), the sampled frame indices and
window coverage, and a thinking model's reasoning (``reasoning``, ``reasoning_chars``,
``reasoning_form``). Stores written before the ``prompt`` or reasoning columns existed
gain them (empty for their rows) when opened for writing; read-only they read as ``None``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.records import ScoredRecord
from mmrobust.schema import Sample, Window
from mmrobust.status import Status
from mmrobust.store_schema import COLUMNS as _COLUMNS
from mmrobust.store_schema import SCHEMA as _SCHEMA
from mmrobust.store_schema import RunFolderWriteError, StoreError, is_write_failure, upgrade

STORE_FILE = "results.sqlite"
TRANSIENT: frozenset[Status] = frozenset(
    {Status.API_ERROR, Status.TIMEOUT, Status.RATE_LIMITED, Status.MODEL_ERROR}
)
"""Statuses a re-run retries (the failure may not recur)."""


@dataclass(frozen=True)
class RunKey:
    """The configuration part of a row's key (everything but the sample id)."""

    model_fp: str
    prompt_fp: str
    policy_fp: str


@dataclass
class StoredRow:
    """One stored answer.

    Attributes:
        sample: the sample as loaded (original option order).
        key: the configuration key.
        status: typed outcome (``ok``, ``parse_fail`` or an error).
        raw_text: the model's reply ("" when it failed).
        letter: the extracted option letter (display order), or ``None``.
        rule: the extraction rule that decided, or the failure kind.
        answer: the ground-truth letter in display order.
        options: letter -> text, as displayed.
        latency_s: seconds the model took for this sample.
        prompt_tokens, completion_tokens: token counts, when reported.
        error: one-line reason for an error status.
        extra: backend extras (JSON).
        frame_indices: frames shown to the model (video, ``frames`` input only).
        window_covered: whether a shown frame lies inside the tamper window.
        created_at: UNIX time of the write.
        prompt: the prompt as sent (``prompts.prompt_record``), or ``None`` (older stores).
        reasoning: a thinking model's reasoning, separated from its answer
            (:func:`mmrobust.reasoning.split_reasoning`: a ``<think>`` block of the reply or
            the server's separate field), or ``None``.
        reasoning_chars: its length in characters, or ``None``.
        reasoning_form: ``none``, ``closed``, ``unopened``, ``cut`` (the reply ended
            inside its reasoning), ``field`` or ``harmony`` (gpt-oss channels); ``None`` for
            rows stored before it existed.
        repeat: which of ``--repeats`` asks of the sample this is (0: the first, the only
            one without repeats); part of the row's key.
    """

    sample: Sample
    key: RunKey
    status: Status
    raw_text: str = ""
    letter: str | None = None
    rule: str | None = None
    answer: str = ""
    options: dict[str, str] = field(default_factory=dict)
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    frame_indices: list[int] | None = None
    window_covered: bool | None = None
    created_at: float = 0.0
    prompt: str | None = None
    reasoning: str | None = None
    reasoning_chars: int | None = None
    reasoning_form: str | None = None
    repeat: int = 0

    @property
    def sample_id(self) -> str:
        """The sample's id."""
        return self.sample.id

    @property
    def window(self) -> Window | None:
        """The tamper window in the clip's timeline: the sample's, else the one the runner
        derived by the released rule (``extra["derived_window"]``, flagged ``derived``)."""
        if self.sample.window is not None:
            return self.sample.window
        derived = self.extra.get("derived_window")
        if isinstance(derived, Mapping):
            fields = ("start_frame", "end_frame", "start_s", "end_s")
            return Window(**{k: derived[k] for k in fields})
        return None

    def to_record(self) -> ScoredRecord:
        """The metrics view of this row (``window``: the sample's, or one derived by the
        released rule; ``extra`` gains ``task_question`` for a ``--task`` question: its option
        keys and truth)."""
        s = self.sample
        extra = dict(self.extra)
        if "task_question" in s.meta:
            extra["task_question"] = s.meta["task_question"]
        return ScoredRecord(
            sample_id=s.id,
            benchmark=s.benchmark,
            group=s.group or s.id,
            answer=self.answer or s.answer,
            options=self.options or dict(s.options),
            predicted=self.letter if self.status is Status.OK else None,
            status=self.status,
            task=s.task,
            tamper_type=s.tamper_type,
            category=s.category,
            polarity=s.polarity,
            window_covered=self.window_covered,
            window=self.window,
            extra=extra,
            rule=self.rule,
            meta=dict(s.meta),
        )


def _to_db(row: StoredRow) -> tuple[Any, ...]:
    return (
        row.sample.id,
        row.key.model_fp,
        row.key.prompt_fp,
        row.key.policy_fp,
        row.status.value,
        row.raw_text,
        row.letter,
        row.rule,
        row.answer or row.sample.answer,
        json.dumps(row.options or row.sample.options),
        row.latency_s,
        row.prompt_tokens,
        row.completion_tokens,
        row.error,
        json.dumps(row.extra, default=str),
        json.dumps(row.frame_indices) if row.frame_indices is not None else None,
        None if row.window_covered is None else int(row.window_covered),
        row.sample.model_dump_json(),
        row.created_at or time.time(),
        row.prompt,
        row.reasoning,
        row.reasoning_chars,
        row.reasoning_form,
        row.repeat,
    )


def _from_db(r: sqlite3.Row, samples: dict[str, Sample] | None = None) -> StoredRow:
    wc = r["window_covered"]
    text = r["sample"]
    sample = samples.get(text) if samples is not None else None
    if sample is None:
        sample = Sample.model_validate_json(text)
        if samples is not None:
            samples[text] = sample
    have = r.keys()
    return StoredRow(
        sample=sample,
        key=RunKey(r["model_fp"], r["prompt_fp"], r["policy_fp"]),
        status=Status(r["status"]),
        raw_text=r["raw_text"],
        letter=r["letter"],
        rule=r["rule"],
        answer=r["answer"],
        options=json.loads(r["options"]),
        latency_s=r["latency_s"],
        prompt_tokens=r["prompt_tokens"],
        completion_tokens=r["completion_tokens"],
        error=r["error"],
        extra=json.loads(r["extra"]),
        frame_indices=json.loads(r["frame_indices"]) if r["frame_indices"] else None,
        window_covered=None if wc is None else bool(wc),
        created_at=r["created_at"],
        prompt=r["prompt"] if "prompt" in have else None,
        reasoning=r["reasoning"] if "reasoning" in have else None,
        reasoning_chars=r["reasoning_chars"] if "reasoning_chars" in have else None,
        reasoning_form=r["reasoning_form"] if "reasoning_form" in have else None,
        repeat=int(r["repeat"]) if "repeat" in have else 0,
    )


class ResultStore:
    """The SQLite results store of one run folder (see module docstring).

    Use from one thread (the runner's main thread writes; workers only compute).

    Args:
        path: the database file, or a run folder (``results.sqlite`` inside it).
        readonly: open without creating or writing.

    Raises:
        FileNotFoundError: ``readonly`` and no database there.
        StoreError: the file is not a readable SQLite results database.
        RunFolderWriteError: the database cannot be created or written (full disk ...).
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        p = Path(path)
        self.path = p / STORE_FILE if p.is_dir() or p.suffix == "" else p
        try:
            self._open(readonly)
        except sqlite3.DatabaseError as exc:
            if not readonly and is_write_failure(exc):
                raise RunFolderWriteError(f"cannot write {self.path}: {exc}") from None
            raise StoreError(f"{self.path}: not a readable results database ({exc})") from None

    def _open(self, readonly: bool) -> None:
        if readonly:
            if not self.path.is_file():
                raise FileNotFoundError(f"no results store at {self.path}")
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            self._db.execute("SELECT 1 FROM results LIMIT 1")  # garbage or foreign file -> error
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            upgrade(self._db)
            self._db.commit()
        self._db.row_factory = sqlite3.Row

    def put(self, row: StoredRow) -> None:
        """Insert or replace one row and commit at once (:meth:`put_many` of one row)."""
        self.put_many([row])

    def put_many(self, rows: Sequence[StoredRow]) -> None:
        """Insert or replace ``rows`` in one transaction (all or none), committed at once.

        Raises:
            RunFolderWriteError: the rows could not be written (full disk, I/O error);
                the transaction is rolled back (none of ``rows`` is written), earlier
                rows are intact.
        """
        if not rows:
            return
        placeholders = ", ".join("?" for _ in _COLUMNS)
        with self._transaction():
            self._db.executemany(
                f"INSERT OR REPLACE INTO results ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
                [_to_db(row) for row in rows],
            )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One committed transaction (rolled back on error); a full disk or I/O error is a
        one-line ``RunFolderWriteError`` naming the store."""
        try:
            with self._db:
                yield
        except sqlite3.DatabaseError as exc:
            if is_write_failure(exc):
                raise RunFolderWriteError(f"cannot write {self.path}: {exc}") from None
            raise

    def rows(
        self,
        key: RunKey | None = None,
        sample_ids: Iterable[str] | None = None,
        *,
        samples: dict[str, Sample] | None = None,
    ) -> list[StoredRow]:
        """Stored rows, optionally for one key and a set of sample ids, in insertion order.

        ``samples`` (stored sample JSON -> ``Sample``) lets several calls share parsed
        samples: runs of one dataset store identical sample JSON, parsed once (the report
        reads three runs of 20,922 rows this way). ``Sample`` is frozen, so sharing is safe.
        """
        if key is None:
            cur = self._db.execute("SELECT * FROM results ORDER BY rowid")
        else:
            cur = self._db.execute(
                "SELECT * FROM results WHERE model_fp=? AND prompt_fp=? AND policy_fp=? "
                "ORDER BY rowid",
                (key.model_fp, key.prompt_fp, key.policy_fp),
            )
        out = [_from_db(r, samples) for r in cur]
        if sample_ids is not None:
            wanted = set(sample_ids)
            out = [r for r in out if r.sample.id in wanted]
        return out

    def _where(
        self, key: RunKey, *, selected: bool, repeats: int | None
    ) -> tuple[str, tuple[Any, ...]]:
        """The ``WHERE`` clause (and its arguments) of a key's rows: only the samples of its
        recorded selection (``selected``), only repeats below ``repeats``."""
        k = (key.model_fp, key.prompt_fp, key.policy_fp)
        sql = "model_fp=? AND prompt_fp=? AND policy_fp=?"
        args: tuple[Any, ...] = k
        if selected:
            sql += (
                " AND sample_id IN (SELECT sample_id FROM selection"
                " WHERE model_fp=? AND prompt_fp=? AND policy_fp=?)"
            )
            args += k
        if repeats is not None:
            sql += " AND repeat < ?"
            args += (repeats,)
        return sql, args

    def iter_rows(
        self,
        key: RunKey,
        *,
        selected: bool = False,
        by_sample: bool = False,
        repeats: int | None = None,
    ) -> Iterator[StoredRow]:
        """The rows of ``key`` one at a time, as SQLite reads them (memory does not grow with
        the rows; do not write to this store until the iterator is done).

        Args:
            selected: only the samples of the key's recorded selection (:meth:`set_selection`).
            by_sample: in ``(sample_id, repeat)`` order (code-point order of the ids, as
                Python sorts them), else in insertion order.
            repeats: only repeats below it.
        """
        where, args = self._where(key, selected=selected, repeats=repeats)
        order = "sample_id, repeat" if by_sample else "rowid"
        for r in self._db.execute(f"SELECT * FROM results WHERE {where} ORDER BY {order}", args):
            yield _from_db(r)

    def rows_of(
        self, key: RunKey, sample_ids: Sequence[str], *, repeats: int | None = None
    ) -> list[StoredRow]:
        """The rows of ``key`` for the given sample ids (a chunk of a run's samples: one
        query), only repeats below ``repeats``; in insertion order."""
        if not sample_ids:
            return []
        where, args = self._where(key, selected=False, repeats=None)
        marks = ", ".join("?" for _ in sample_ids)
        cur = self._db.execute(
            f"SELECT * FROM results WHERE {where} AND sample_id IN ({marks}) ORDER BY rowid",
            (*args, *sample_ids),
        )
        rows = [_from_db(r) for r in cur]
        return rows if repeats is None else [r for r in rows if r.repeat < repeats]

    def outcome(
        self, key: RunKey, *, selected: bool = False, repeats: int | None = None
    ) -> tuple[dict[str, int], StoredRow | None, StoredRow | None]:
        """How the rows of ``key`` ended, without holding them: the count of each status (in
        the order each first occurs), the first row and the first row with an error status
        (``Status.is_error``), both in insertion order. ``selected``, ``repeats``: as
        :meth:`iter_rows`."""
        where, args = self._where(key, selected=selected, repeats=repeats)
        counts: dict[str, int] = {}
        for (status,) in self._db.execute(
            f"SELECT status FROM results WHERE {where} ORDER BY rowid", args
        ):
            counts[status] = counts.get(status, 0) + 1
        errors = tuple(s.value for s in Status if s.is_error)
        marks = ", ".join("?" for _ in errors)
        first = self._db.execute(
            f"SELECT * FROM results WHERE {where} ORDER BY rowid LIMIT 1", args
        ).fetchone()
        failed = self._db.execute(
            f"SELECT * FROM results WHERE {where} AND status IN ({marks}) ORDER BY rowid LIMIT 1",
            (*args, *errors),
        ).fetchone()
        return (
            counts,
            None if first is None else _from_db(first),
            None if failed is None else _from_db(failed),
        )

    def set_selection(self, key: RunKey, sample_ids: Iterable[str]) -> None:
        """Record the samples the last ``eval`` of ``key`` selected (and scored), replacing
        the previous selection in one transaction. Rows of other samples stay stored (a
        ``--limit`` run, or a dataset rebuilt without some clips) but are not scored by
        ``rescore``, ``report`` or ``compare`` (:meth:`selection`).

        Raises:
            RunFolderWriteError: the selection could not be written.
        """
        k = (key.model_fp, key.prompt_fp, key.policy_fp)
        with self._transaction():
            self._db.execute(
                "DELETE FROM selection WHERE model_fp=? AND prompt_fp=? AND policy_fp=?", k
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO selection VALUES (?, ?, ?, ?)",
                ((*k, sid) for sid in sample_ids),
            )

    def selection(self, key: RunKey) -> list[str] | None:
        """The sample ids the last ``eval`` of ``key`` selected, or ``None`` for a store
        written before selections were recorded (then every stored row counts)."""
        try:
            cur = self._db.execute(
                "SELECT sample_id FROM selection WHERE model_fp=? AND prompt_fp=? AND policy_fp=?",
                (key.model_fp, key.prompt_fp, key.policy_fp),
            )
        except sqlite3.OperationalError:  # an older store opened read-only: no such table
            return None
        ids = [r[0] for r in cur]
        return ids or None

    def keys(self) -> list[RunKey]:
        """Distinct configuration keys in the store."""
        cur = self._db.execute("SELECT DISTINCT model_fp, prompt_fp, policy_fp FROM results")
        return [RunKey(*r) for r in cur]

    def update_extractions(self, updates: Sequence[tuple[StoredRow, Mapping[str, Any]]]) -> None:
        """Set ``letter``, ``status``, ``rule`` (and ``error`` when given) of several rows in
        one transaction (rescore)."""
        with self._db:
            for row, new in updates:
                self._db.execute(
                    "UPDATE results SET letter=?, status=?, rule=?, error=? WHERE sample_id=? AND "
                    "repeat=? AND model_fp=? AND prompt_fp=? AND policy_fp=?",
                    (
                        new["letter"],
                        Status(new["status"]).value,
                        new["rule"],
                        new.get("error", row.error),
                        row.sample.id,
                        row.repeat,
                        row.key.model_fp,
                        row.key.prompt_fp,
                        row.key.policy_fp,
                    ),
                )

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "STORE_FILE",
    "TRANSIENT",
    "ResultStore",
    "RunFolderWriteError",
    "RunKey",
    "StoreError",
    "StoredRow",
    "is_write_failure",
]
