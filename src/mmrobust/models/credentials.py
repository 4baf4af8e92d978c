"""Credentials in a model spec and its settings: refused, or held in this process's memory.

A model spec and its ``--model-arg`` settings are written into every result (``run.json``,
``metrics.json``, samples, exports, the report and its cards, W&B, the console, Ray's task
arguments), so a credential must never be part of them. The rule (docs/models.md, "Keys and
passwords"):

* A key comes from the environment variable ``api_key_env`` names. A literal credential
  anywhere else is refused before any work, in one line naming ``api_key_env``
  (:func:`check_spec`, :func:`hold_args`): in the spec's text (a secret-named query parameter,
  ``openai:m?api_key=...`` in any case; a ``user:password@`` URL, ``openai:http://u:p@h/m``),
  or in a setting (a secret-named setting such as ``api_key``, ``token``, ``password``,
  ``headers``; a JSON value with a secret-named field, ``extra_body={"api_key": ...}``; a URL
  with a secret-named query parameter, ``base_url=http://h/v1?key=...``; a ``Bearer``
  token). The one line names the backend and the setting, never the value.
* The one credential taken from the command line is a user and password in a URL setting
  (``base_url=http://user:pass@host/v1``, a server behind HTTP basic auth). :func:`hold_args`
  puts ``http://***@host/v1`` in the settings every later step sees and keeps the URL itself
  in this process's memory; :func:`reveal` gives it back to the model's factory only
  (``models.spec.load_model``). Ray's replicas are other processes that get their settings
  through Ray's task arguments, so a run that holds one is refused on Ray
  (:func:`ray_refusal`).

Secret names: :func:`mmrobust.redact.is_secret_name` (``api_key``, ``Token``, ``x-api-key``,
``headers``; not ``api_key_env``, not ``max_tokens``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mmrobust.redact import MASK, is_secret_name, scrub_url

_USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s@?#]+)@")
_TOKEN = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")
_QUERY_SPLIT = re.compile(r"[?&;#]")

FIX = "put it in an environment variable and pass --model-arg api_key_env=NAME"
"""The fix every refusal names."""

_HELD: dict[str, str] = {}
"""Scrubbed URL (``http://***@host/v1``) -> the URL with its user and password."""


def refusal(where: str, what: str) -> str:
    """The one line a literal credential is refused with (names ``api_key_env``)."""
    return f"{where} holds {what}; mmrobust takes no key on the command line: {FIX}"


def _query_secret(text: str) -> str | None:
    """The first secret-named ``name=`` parameter in ``text`` (after ``?``, ``&``, ``;``, ``#``)."""
    for piece in _QUERY_SPLIT.split(text)[1:]:
        name, sep, value = piece.partition("=")
        if sep and value.strip() and is_secret_name(name.strip()):
            return name.strip()
    return None


def _json_secret(value: Any) -> str | None:
    """The first secret-named field at any depth of parsed JSON ``value``."""
    if isinstance(value, Mapping):
        for name, inner in value.items():
            if is_secret_name(str(name)) and inner not in (None, "", {}, []):
                return str(name)
            found = _json_secret(inner)
            if found:
                return found
    elif isinstance(value, list):
        for inner in value:
            found = _json_secret(inner)
            if found:
                return found
    return None


def _userinfo(text: str) -> str | None:
    """The ``user[:password]`` of the first URL in ``text`` (``None``: none, or masked)."""
    match = _USERINFO.search(text)
    if match is None or match.group(1) == MASK:
        return None
    return match.group(1)


def check_spec(spec: str) -> None:
    """Refuse a credential in the text of a model spec (``NAME:ARG``).

    Raises:
        ValueError: a secret-named query parameter, a ``user:password@`` URL or a
            ``Bearer`` token in ``ARG`` (one line naming the parameter, not its value).
    """
    name, _, arg = spec.strip().partition(":")
    if not arg:
        return
    where = f"the model spec {name}:..."
    param = _query_secret(arg)
    if param:
        raise ValueError(refusal(where, f"a credential ({param}=...)"))
    if _userinfo(arg) or _TOKEN.search(arg):
        raise ValueError(refusal(where, "a credential (a user:password@ URL or a token)"))


def _value_secret(value: str) -> str | None:
    """What literal credential a setting's ``value`` holds besides a URL's user and
    password (``None``: none)."""
    text = value.strip()
    if text[:1] in "{[":
        try:
            found = _json_secret(json.loads(text))
        except ValueError:
            found = None
        if found:
            return f"a credential ({found}: ...)"
    param = _query_secret(text) if "://" in text or text.startswith("?") else None
    if param:
        return f"a credential ({param}=...)"
    if _TOKEN.search(text):
        return "a credential (a Bearer token)"
    return None


def hold_args(args: Mapping[str, str], what: str = "--model-arg") -> dict[str, str]:
    """``args`` fit to be stored and printed: a URL's user and password held in memory
    (the value becomes ``http://***@host/...``), any other literal credential refused.

    Idempotent: settings already held pass through unchanged.

    Raises:
        ValueError: a literal credential (module docstring), or two different passwords
            for one scrubbed URL (one line each, no value in it).
    """
    out: dict[str, str] = {}
    for name, raw in args.items():
        value = str(raw)
        if is_secret_name(name) and value.strip():
            raise ValueError(refusal(f"{what} {name}", "a literal credential"))
        reason = _value_secret(value)
        if reason:
            raise ValueError(refusal(f"{what} {name}", reason))
        if _userinfo(value):
            clean = scrub_url(value)
            if _HELD.get(clean, value) != value:
                raise ValueError(
                    f"{what} {name}={clean} is given with two different passwords in one "
                    "command; run them one at a time"
                )
            _HELD[clean] = value
            value = clean
        out[name] = value
    return out


def reveal(args: Mapping[str, str]) -> dict[str, str]:
    """``args`` with each held URL given back (for a model's factory only; never store it).

    Raises:
        ValueError: a value masked as ``***@`` that this process does not hold (a replica
            in another process: :func:`ray_refusal`).
    """
    out: dict[str, str] = {}
    for name, value in args.items():
        match = _USERINFO.search(str(value))
        if match is not None and match.group(1) == MASK:
            if value not in _HELD:
                raise ValueError(
                    f"--model-arg {name}={value}: its user and password are not known to this "
                    f"process (they stay in the memory of the one that read them); {FIX}"
                )
            value = _HELD[value]
        out[name] = value
    return out


def held(args: Mapping[str, str]) -> list[str]:
    """Names of the settings in ``args`` whose credential is held in memory."""
    return [k for k, v in args.items() if (m := _USERINFO.search(str(v))) and m.group(1) == MASK]


def ray_refusal(*arg_sets: Mapping[str, str]) -> str | None:
    """The one line that refuses a Ray run whose settings hold a password (``None``: none).

    Ray stores the replicas' arguments (the settings) with its tasks, so a credential
    held in this process's memory cannot reach them.
    """
    names = [n for args in arg_sets for n in held(args)]
    if not names:
        return None
    return (
        f"--executor ray: --model-arg {names[0]} holds a user and password, which would be "
        "written into Ray's task arguments; run it without --executor ray, or give the "
        "server a key and set api_key_env=NAME with NAME set on every worker node"
    )


__all__ = [
    "FIX",
    "check_spec",
    "held",
    "hold_args",
    "is_secret_name",
    "ray_refusal",
    "refusal",
    "reveal",
]
