"""Turn ``--model-arg K=V`` strings into a typed, validated options object.

Backends declare their options as a frozen pydantic model with
``extra="forbid"``; pydantic converts the strings (``"0.5"`` -> ``0.5``,
``"true"`` -> ``True``). Any problem becomes one ``ValueError`` with a
one-line message that names the backend, the key and, for an unknown key,
the closest known keys.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

OptionsT = TypeVar("OptionsT", bound=BaseModel)


def parse_options(cls: type[OptionsT], args: Mapping[str, str], backend: str) -> OptionsT:
    """Validate ``args`` against the options model ``cls``.

    Args:
        cls: a pydantic model whose fields are the backend's options.
        args: the raw ``--model-arg`` pairs (strings).
        backend: backend name for messages (``"openai"``, ``"hf"``).

    Raises:
        ValueError: unknown key (with "did you mean"), or a value pydantic rejects.
    """
    known = list(cls.model_fields)
    for key in args:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(
                f"unknown --model-arg {key!r} for {backend}{hint} (known: {', '.join(known)})"
            )
    try:
        return cls.model_validate(dict(args))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise ValueError(
            f"bad --model-arg {where}={args.get(where, '')!r} for {backend}: {first['msg']}"
        ) from None


__all__ = ["parse_options"]
