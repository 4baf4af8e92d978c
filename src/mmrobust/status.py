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
    ``error_rate``.
    """

    OK = "ok"
    """The model answered and an option letter was extracted."""
    PARSE_FAIL = "parse_fail"
    """The model answered but no option could be extracted from the text."""
    API_ERROR = "api_error"
    """The server returned an error (5xx, malformed body, empty content) after all retries."""
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

    @property
    def is_error(self) -> bool:
        """True for every status except ``ok`` and ``parse_fail``."""
        return self not in (Status.OK, Status.PARSE_FAIL)


__all__ = ["Status"]
