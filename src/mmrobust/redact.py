"""Secrets out of everything mmrobust stores or prints.

Every string that comes from a server (error bodies, answers) or names a
server (``base_url``) goes through this module before it is stored in
``results.sqlite``, ``run.json``, ``metrics.json``, the report or the console:

* :func:`redact` replaces each known secret (the API key a backend sends),
  any ``Bearer <token>`` / ``Basic <credentials>`` and the credentials of any URL (``user:pass@``) by
  ``***``;
* :func:`clip` makes it one line and cuts it to a length, always *after*
  redacting (a key cut in half by truncation would leak its first half);
* :func:`server_text` does both, in that order: the one call for a server's text;
* :func:`scrub_url` and :func:`scrub_args` clean a URL and a ``--model-arg``
  mapping for the record (secret-named values dropped, URLs scrubbed);
* :func:`url_auth` and :func:`url_secrets` split a URL's user and password out for an HTTP
  client and for masking what a server echoes.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
"""What a secret is replaced by."""

MIN_SECRET_CHARS = 4
"""Secrets shorter than this are not searched for (they would mask ordinary words)."""

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"<>]+@")
_BEARER = re.compile(r"(?i)\b((?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}")
_SECRET_PARAM = re.compile(
    r"(?i)([?&;](?:api[_-]?key|key|token|access[_-]?token|secret|password|sig)=)[^&#\s'\"<>]+"
)
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "sig",
        "signature",
        "bearer",
        "header",
        "headers",
    }
)


def is_secret_name(name: str) -> bool:
    """Whether a setting or parameter ``name`` names a credential: its words (split at
    ``_``, ``-``, ``.`` and camel case, case-insensitive) include ``key``, ``apikey``,
    ``token``, ``secret``, ``password``, ``passwd``, ``pwd``, ``auth``, ``authorization``,
    ``credential(s)``, ``cookie``, ``sig``, ``signature``, ``bearer`` or ``header(s)``, and
    its last word is not ``env`` (``api_key_env`` names a variable). ``max_tokens`` is not
    one (``tokens``)."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()
    parts = [w for w in re.split(r"[^a-z0-9]+", words) if w]
    if parts and parts[-1] == "env":
        return False
    return any(w in _SECRET_WORDS for w in parts)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret, bearer token and URL credential replaced by ``***``.

    Args:
        text: any string (an error body, a reply, a URL).
        secrets: exact values to remove (an API key); ``None``, empty and
            values shorter than ``MIN_SECRET_CHARS`` are ignored.
    """
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len)[::-1]:
        text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    return _SECRET_PARAM.sub(rf"\1{MASK}", text)


def clip(text: str, limit: int | None = None) -> str:
    """One line (whitespace runs collapsed to one space), at most ``limit`` characters.

    A cut string ends with ``...`` (counted in ``limit``).
    """
    line = " ".join(text.split())
    if limit is not None and len(line) > limit:
        return line[: max(0, limit - 3)] + "..."
    return line


def server_text(text: str, secrets: Iterable[str | None] = (), limit: int | None = None) -> str:
    """A server's text made safe to store or print: :func:`redact`, then :func:`clip`."""
    return clip(redact(text, secrets), limit)


def scrub_url(url: str) -> str:
    """``url`` without credentials: ``http://user:pass@host/v1?key=k`` -> ``http://***@host/v1?key=***``.

    A string that is not a URL is returned redacted the same way.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if not parts.scheme or not parts.netloc or "@" not in parts.netloc:
        return redact(url)
    host = parts.netloc.rsplit("@", 1)[1]
    return redact(urlunsplit(parts._replace(netloc=f"{MASK}@{host}")))


def scrub_args(args: Mapping[str, str]) -> dict[str, str]:
    """``--model-arg`` pairs fit for ``run.json`` / ``metrics.json``.

    Values of secret-named arguments (:func:`is_secret_name`: ``api_key``, ``token``,
    ``headers`` ...; ``api_key_env`` names a variable, not a secret, and is kept) become
    ``***``; every other value is scrubbed like a URL.
    """
    out: dict[str, str] = {}
    for name, value in args.items():
        if is_secret_name(name):
            out[name] = MASK
        else:
            out[name] = scrub_url(str(value))
    return out


def url_auth(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user and password, and them (``None``: none), for an HTTP client
    that sends them as a ``Basic`` header: the URL it logs then holds neither."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    return urlunsplit(parts._replace(netloc=host)), (user, password)


def url_secrets(url: str) -> list[str]:
    """The password, ``user:password`` and its base64 (the ``Basic`` header) of ``url`` (a user
    name alone, when there is no password: a token): what a server's text must be cleaned of
    (``HttpModel``)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return []
    if not parts.password:  # a token as the user name (``http://TOKEN@host``)
        user = unquote(parts.username or "")
        return [user, parts.username or "", base64.b64encode(f"{user}:".encode()).decode()]
    user, password = unquote(parts.username or ""), unquote(parts.password)
    pair = f"{user}:{password}"
    return [password, parts.password, pair, base64.b64encode(pair.encode()).decode()]


__all__ = [
    "MASK",
    "clip",
    "is_secret_name",
    "redact",
    "scrub_args",
    "scrub_url",
    "server_text",
    "url_auth",
    "url_secrets",
]
