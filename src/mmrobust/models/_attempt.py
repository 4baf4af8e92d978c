"""The vocabulary of one HTTP attempt: its typed failure, a parsed reply, ``Retry-After``.

Every API backend reads replies with these (``models/_http.py`` runs the
attempts): a failed attempt is an :class:`AttemptError` carrying the status it
maps to and whether the retry policy retries it; a good one is a
:class:`Completion`. Pure; no I/O.
"""

from __future__ import annotations

import email.utils
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tenacity import RetryCallState
from tenacity.wait import wait_base

from mmrobust.status import Status


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110 section 10.2.3).

    Accepts delay-seconds (``"120"``, also ``"1.5"``) or an HTTP date
    (``"Wed, 21 Oct 2015 07:28:00 GMT"``; a date in the past gives 0).
    Returns ``None`` for a missing or unparsable value.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = now or datetime.now(timezone.utc)
    return max(0.0, (when - current).total_seconds())


class AttemptError(Exception):
    """One failed HTTP attempt, classified.

    Attributes:
        status: the typed status this failure maps to if it is the last one.
        message: one-line reason (no secrets).
        retryable: whether the policy retries it.
        retry_after: seconds the server asked us to wait, if it did.
        extra: details stored with the row (``server_limit`` of a rejection).
    """

    def __init__(
        self,
        status: Status,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.extra = extra or {}


class WaitRetryAfter(wait_base):
    """Wait what the server's ``Retry-After`` says (capped), else ``fallback``."""

    def __init__(self, fallback: wait_base, cap: float) -> None:
        self.fallback = fallback
        self.cap = cap

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, AttemptError) and exc.retry_after is not None:
            return min(exc.retry_after, self.cap)
        return float(self.fallback(retry_state))


def is_retryable(exc: BaseException) -> bool:
    """Whether the retry policy retries ``exc`` (a retryable :class:`AttemptError`)."""
    return isinstance(exc, AttemptError) and exc.retryable


@dataclass(frozen=True)
class Completion:
    """A 200 reply read by a backend's :meth:`HttpModel.parse_reply`.

    Attributes:
        text: the answer text; empty only when ``reasoning`` is not (a reply cut
            inside its reasoning: no answer, but not an empty reply).
        usage: ``prompt_tokens`` / ``completion_tokens`` (``None`` when not reported).
        finish: the server's stop reason (``finish_reason`` / ``stop_reason``).
        reasoning: a separate reasoning text the server returned, if any.
    """

    text: str
    usage: Mapping[str, int | None] = field(default_factory=dict)
    finish: str | None = None
    reasoning: str | None = None


def oversize(content_length: str | None, cap: int) -> AttemptError:
    """The final ``rejected`` error of a reply body longer than ``cap`` bytes
    (``max_reply_bytes``; the body was not read on)."""
    told = f" (Content-Length {content_length})" if content_length else ""
    return AttemptError(
        Status.REJECTED,
        f"reply longer than max_reply_bytes={cap} bytes{told}: not read on, not stored; "
        "raise --model-arg max_reply_bytes=N to accept longer replies",
        retryable=False,
    )


def token_count(value: Any) -> int | None:
    """A usage figure as ``int`` (``None`` unless it is a number)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def empty_reply(finish: str | None, *, greedy: bool) -> AttemptError:
    """The error for a reply without content: final when ``greedy``, else retried."""
    return AttemptError(
        Status.EMPTY_REPLY, f"empty content (finish_reason={finish})", retryable=not greedy
    )


def body_shape(body: Any, clean: Callable[[str, int], str]) -> str:
    """A short, safe description of an unexpected JSON body (for an error message)."""
    if isinstance(body, (dict, list)):
        return clean(json.dumps(body), 80)
    return type(body).__name__


__all__ = [
    "AttemptError",
    "Completion",
    "WaitRetryAfter",
    "body_shape",
    "empty_reply",
    "is_retryable",
    "parse_retry_after",
    "token_count",
]
