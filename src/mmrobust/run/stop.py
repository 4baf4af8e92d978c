"""When a run stops by itself: the one place (eval's driver and rescore's judge rule share it).

:class:`StopRules` counts consecutive rows: ``ABORT_AFTER`` consecutive transient failures
(unreachable server, dead model), as many consecutive judge backend failures, or a server
limit every sample will hit (a count limit at once; a limit only some samples hit when nearly
all of the first ``LIMIT_WINDOW`` asked samples hit it, else those samples are stored
``rejected`` and the run goes on). :class:`RunAborted` is what a rule raises. Moved out of
:mod:`mmrobust.run.process` (issue 26, modules under 500 lines), which re-exports every name.
"""

from __future__ import annotations

import logging

from mmrobust.status import Status
from mmrobust.store import TRANSIENT, StoredRow

log = logging.getLogger("mmrobust")

ABORT_AFTER = 8
"""A run stops after this many consecutive transient failures (unreachable server, dead model)."""


COUNT_LIMITS = frozenset({"images", "videos"})
"""Server-limit kinds (``models.limits``) that are the same for every sample: stop at once."""

LIMIT_WINDOW = 10
"""Asked samples over which a sample-dependent server limit (``context``) is judged."""

LIMIT_SHARE = 0.9
"""Share of the first ``LIMIT_WINDOW`` asked samples refused by such a limit that stops the run."""

NOT_ASKED = frozenset({Status.DATA_ERROR, Status.MEDIA_ERROR})
"""Row statuses of samples the model was never asked about."""


class RunAborted(RuntimeError):
    """Raised when a stop rule fires (every recent sample failed the same transient way, a
    dead judge, a server limit every sample will hit).

    Attributes:
        written: rows stored before stopping.
    """

    def __init__(self, message: str, written: int) -> None:
        super().__init__(message)
        self.written = written


def judge_failed(row: StoredRow) -> bool:
    """True for a ``judge_error`` row whose judge backend failed (down, timing out, raising),
    not one whose judge answered something unusable."""
    cause = row.extra.get("judge_status")
    return row.status is Status.JUDGE_ERROR and cause in {s.value for s in TRANSIENT}


class StopRules:
    """When a run stops by itself (see module docstring); counts consecutive rows.

    Args:
        limit: consecutive failures that stop the run (eval: ``ABORT_AFTER`` or twice the
            workers, whichever is larger).
        judge_tail: the end of the dead-judge message (what was kept, how to go on).
    """

    def __init__(
        self,
        limit: int = ABORT_AFTER,
        *,
        judge_tail: str = "finished rows are kept, fix the judge and re-run to resume "
        "(`mmrobust rescore RUN_DIR --judge SPEC` judges the judge_error rows again)",
    ) -> None:
        self.limit = limit
        self.judge_tail = judge_tail
        self.streak: list[StoredRow] = []  # consecutive rows with a transient failure
        self.judge_streak: list[str] = []  # errors of consecutive judge backend failures
        self._deciding = True  # still within the first LIMIT_WINDOW asked samples
        self._asked = 0  # rows that reached the model, while deciding
        self._held: list[StoredRow] = []  # sample-dependent limit rejections, while deciding
        self._limit_example: StoredRow | None = None
        self._told = False

    def admit(self, row: StoredRow, written: int) -> list[StoredRow]:
        """The rows to store now, given one more computed ``row`` (server-limit rule).

        * A rejection naming a **count limit** (``images``/``videos`` per prompt: the same
          for every sample of the run) raises ``RunAborted`` at once.
        * A rejection naming a limit that depends on the sample (``context``: wide or long
          clips only) is held while the first ``LIMIT_WINDOW`` asked samples come in: if
          ``LIMIT_SHARE`` of them hit it, the run stops (``RunAborted``); otherwise the held
          rows and every later such rejection are stored as ``rejected`` (the fix is logged
          once) and the run goes on.

        Rows not stored before a stop are asked again after the fix; stored ``rejected``
        rows are asked again with ``--retry-failed``.

        Raises:
            RunAborted: as above.
        """
        limit = row.extra.get("server_limit") if row.status is Status.REJECTED else None
        if isinstance(limit, dict) and limit.get("kind") in COUNT_LIMITS:
            raise RunAborted(
                f"the server refused sample {row.sample.id!r} with a limit every sample will hit "
                f"({row.error}); {limit.get('fix', 'change the request or the server')}; "
                "finished rows are kept, re-run to resume",
                written,
            )
        limited = isinstance(limit, dict)
        if limited and self._limit_example is None:
            self._limit_example = row
        if not self._deciding:
            if limited:
                self._tell_limit()
            return [row]
        if row.status not in NOT_ASKED:
            self._asked += 1
        if limited:
            self._held.append(row)
            if len(self._held) >= LIMIT_SHARE * LIMIT_WINDOW:
                self._stop_on_limit(written)
            return []
        if self._asked >= LIMIT_WINDOW:
            return [row, *self._decide(written)]
        return [row]

    def flush(self, written: int) -> list[StoredRow]:
        """The held rows once no more rows come (fewer asked samples than ``LIMIT_WINDOW``).

        Raises:
            RunAborted: ``LIMIT_SHARE`` of the asked samples hit the server limit.
        """
        return self._decide(written) if self._deciding and self._held else []

    def _decide(self, written: int) -> list[StoredRow]:
        self._deciding = False
        if self._held and len(self._held) >= LIMIT_SHARE * max(1, self._asked):
            self._stop_on_limit(written)
        held, self._held = self._held, []
        if held:
            self._tell_limit()
        return held

    def _stop_on_limit(self, written: int) -> None:
        first = self._held[0]
        fix = first.extra["server_limit"].get("fix", "change the request or the server")
        raise RunAborted(
            f"the server refused {len(self._held)} of the first {max(self._asked, 1)} samples "
            f"with a limit (first: {first.sample.id!r}: {first.error}); {fix}; finished rows "
            "are kept, re-run to resume",
            written,
        )

    def _tell_limit(self) -> None:
        if self._told or self._limit_example is None:
            return
        self._told = True
        row = self._limit_example
        fix = row.extra["server_limit"].get("fix", "change the request or the server")
        log.warning(
            "some samples exceed a server limit (first: %s: %s); they are stored as rejected "
            "and the run goes on; %s; then re-run with --retry-failed to ask them again",
            row.sample.id,
            row.error,
            fix,
        )

    def stored(self, row: StoredRow) -> None:
        """Count a stored row into the streaks."""
        self.streak = [*self.streak, row] if row.status in TRANSIENT else []
        if (row.rule or "").startswith("judge"):
            self.judged(row.error if judge_failed(row) else None, failed=judge_failed(row))

    def judged(self, error: str | None, *, failed: bool) -> None:
        """Count one reply the judge was asked about (``failed``: its backend failed)."""
        self.judge_streak = [*self.judge_streak, error or "no detail"] if failed else []

    def stop_point(self, rows: list[StoredRow]) -> int:
        """How many of ``rows`` (about to be stored in order) to store: all, or those up to
        the one with which a streak reaches the limit, so a run stops after exactly
        ``limit`` consecutive failures however many finished rows arrive at once."""
        streak, judge = len(self.streak), len(self.judge_streak)
        for i, row in enumerate(rows, 1):
            streak = streak + 1 if row.status in TRANSIENT else 0
            if (row.rule or "").startswith("judge"):
                judge = judge + 1 if judge_failed(row) else 0
            if streak >= self.limit or judge >= self.limit:
                return i
        return len(rows)

    def check(self, written: int) -> None:
        """Raise ``RunAborted`` when a streak reached the limit (after a batch is stored)."""
        if len(self.streak) >= self.limit:
            first = self.streak[0]
            raise RunAborted(
                f"stopped after {len(self.streak)} consecutive failed samples "
                f"({first.status.value}: {first.error or 'no detail'}); "
                "finished rows are kept, fix the cause and re-run the same command to resume",
                written,
            )
        if len(self.judge_streak) >= self.limit:
            raise RunAborted(
                f"stopped: the judge failed on {len(self.judge_streak)} consecutive replies "
                f"({self.judge_streak[0]}); {self.judge_tail}",
                written,
            )


__all__ = [
    "ABORT_AFTER",
    "COUNT_LIMITS",
    "LIMIT_SHARE",
    "LIMIT_WINDOW",
    "NOT_ASKED",
    "RunAborted",
    "StopRules",
    "judge_failed",
]
