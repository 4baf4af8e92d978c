"""Compatibility re-export: the tamper window rules live in :mod:`mmrobust.schema.window`.

(MVTamperBench section 3.3: ``F = round(duration * fps)`` frames at the
clip's ``start``/``middle``/``end`` or a fraction; ``official_fps`` for the
released generator's ``int(fps)``.)
"""

from __future__ import annotations

from mmrobust.schema.window import (
    NamedPosition,
    Position,
    WindowError,
    make_window,
    parse_position,
    source_window,
    window_length,
    window_start,
)

__all__ = [
    "NamedPosition",
    "Position",
    "WindowError",
    "make_window",
    "parse_position",
    "source_window",
    "window_length",
    "window_start",
]
