"""Reading a suite file (:func:`load_suite_file`, :func:`parse_suite_text`) and its errors.

A file that does not validate is one line: file, line, key, nearest valid key.
:func:`error_line` turns the first error of pydantic's ``ValidationError`` into
``FILE line N: ...``: the line comes from the YAML node tree of the text
(:func:`yaml.compose`, which also reads JSON), an unknown key gets the nearest valid key of
its place (:func:`difflib.get_close_matches`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mmrobust.suite.file import DataEntry, ModelEntry, SuiteFile, SuiteFileError


def _model_at(loc: Sequence[Any]) -> type[BaseModel]:
    """The model whose keys an error at ``loc`` (the key's own place) is about."""
    if len(loc) >= 3 and loc[0] == "models" and isinstance(loc[1], int):
        return ModelEntry
    if len(loc) >= 3 and loc[0] == "data" and isinstance(loc[1], int):
        return DataEntry
    return SuiteFile


def _where(loc: Sequence[Any]) -> str:
    """``models[1].args`` for the pydantic location ``("models", 1, "args")``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _line_of(text: str, loc: Sequence[Any]) -> int | None:
    """The 1-based line of the key (or item) at ``loc`` in a YAML or JSON text, following the
    location as far as the document goes; ``None`` when it cannot be parsed as YAML."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    line, nxt = key.start_mark.line + 1, value
                    break
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(node.value)
        ):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        node = nxt
    return line


def error_line(where: str, text: str | None, exc: ValidationError) -> str:
    """One line for the first error of ``exc``: ``WHERE line N: KEY: what`` (an unknown key
    with the nearest valid one, by :func:`difflib.get_close_matches`)."""
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    line = _line_of(text, loc) if text is not None else None
    head = f"{where} line {line}" if line else where
    if err.get("type") == "extra_forbidden" and loc:
        key = str(loc[-1])
        valid = list(_model_at(loc).model_fields)
        near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        hint = f" (did you mean '{near[0]}'?)" if near else f" (valid keys: {', '.join(valid)})"
        place = f" in {_where(loc[:-1])}" if len(loc) > 1 else ""
        return f"{head}: unknown key '{key}'{place}{hint}"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{head}: {_where(loc) or 'file'}: {msg}"


def parse_suite_text(text: str, where: str, *, as_json: bool = False) -> SuiteFile:
    """A :class:`SuiteFile` from YAML (or JSON) ``text``; ``where`` names it in errors.

    Raises:
        SuiteFileError: not YAML/JSON, not a mapping, or a key or value the model refuses
            (one line: ``WHERE line N: ...``).
    """
    if as_json:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SuiteFileError(f"{where} line {exc.lineno}: not JSON: {exc.msg}") from None
    else:
        import yaml

        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or "cannot be parsed"
            raise SuiteFileError(f"{where}{line}: not YAML: {problem}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SuiteFileError(
            f"{where}: a suite file is a mapping of keys (models, data, tasks, out ...), "
            f"not a {type(raw).__name__}"
        )
    try:
        return SuiteFile.model_validate(raw)
    except ValidationError as exc:
        raise SuiteFileError(error_line(where, text, exc)) from None


def load_suite_file(path: str | Path) -> SuiteFile:
    """Read ``--config FILE`` (YAML, or JSON for ``.json``).

    Raises:
        SuiteFileError: missing or unreadable, or as :func:`parse_suite_text`.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SuiteFileError(f"--config {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteFileError(f"--config {path}: cannot be read: {exc}") from None
    return parse_suite_text(text, str(path), as_json=p.suffix.lower() == ".json")


__all__ = ["error_line", "load_suite_file", "parse_suite_text"]
