"""Typed outcome of one sample (DESIGN.md, "Typed failures").

A failure is never a sentinel string inside the answer and never a random
fallback: it is one of these values, stored next to the raw text.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """Outcome of asking a model about one sample.

    ``OK`` and ``PARSE_FAIL`` mean the model answered; every other value is an
    error (the model, its server, the media or the data failed) and counts in
    ``error_rate``. ``docs/failures.md`` tables each value: when it happens,
    whether a re-run asks again, how metrics count it.
    """

    OK = "ok"
    """The model answered and an option letter was extracted."""
    PARSE_FAIL = "parse_fail"
    """The model answered but no option could be extracted from the text."""
    API_ERROR = "api_error"
    """The server returned an error (5xx, 401/403/404, malformed body, connection lost) after
    all retries."""
    TIMEOUT = "timeout"
    """The request did not finish within the timeout after all retries."""
    RATE_LIMITED = "rate_limited"
    """The server kept answering 429 after all retries."""
    MEDIA_ERROR = "media_error"
    """The sample's video or image could not be read or decoded."""
    DATA_ERROR = "data_error"
    """The sample itself is malformed or its media path is missing/ambiguous."""
    MODEL_ERROR = "model_error"
    """A local model raised while generating."""
    JUDGE_ERROR = "judge_error"
    """The optional LLM judge failed to give a verdict."""
    REJECTED = "rejected"
    """The server refused this request for good (a 4xx other than 401/403/404/408/429, e.g.
    ``400`` context too long for this sample); final: a re-run does not ask again unless
    ``--retry-failed``."""
    EMPTY_REPLY = "empty_reply"
    """The model answered with empty content (final: at temperature 0 asking again gives the
    same nothing)."""

    @property
    def is_error(self) -> bool:
        """True for every status except ``ok`` and ``parse_fail``."""
        return self not in (Status.OK, Status.PARSE_FAIL)


__all__ = ["Status"]
