"""Compatibility re-export: released-clip windows.

The released rule (pure arithmetic) is :func:`mmrobust.schema.window.released_window`;
:class:`mmrobust.datasets.windows.WindowDeriver` applies it to loaded samples.
"""

from __future__ import annotations

from mmrobust.datasets.windows import WindowDeriver
from mmrobust.schema.window import RULE, DerivedWindow, released_window

__all__ = ["RULE", "DerivedWindow", "WindowDeriver", "released_window"]
