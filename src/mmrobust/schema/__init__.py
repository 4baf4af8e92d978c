"""The core types every layer shares (DESIGN.md, "Target layout": ``schema``).

Imports nothing of mmrobust but itself and :mod:`mmrobust.registry` (for
:mod:`~mmrobust.schema.benchmarks`, the family ids ``Sample.benchmark`` is checked
against; pydantic otherwise), so ``media``,
``datasets``, ``tamper``, ``tasks``, ``metrics`` and everything above may
import it without a cycle or an upward import.

* :mod:`~mmrobust.schema.sample`: ``Sample`` (one question about one piece of
  media), ``Window`` (frames ``[start, end)`` and seconds), ``Benchmark``, ``Polarity``;
* :mod:`~mmrobust.schema.vocab`: the effect vocabulary (canonical names, aliases,
  official tokens, Table 7 labels, ``normalise_type``) and the benchmark question text;
* :mod:`~mmrobust.schema.manifest`: ``ManifestEntry``, the one model the tamper
  builder writes and the loader reads (``Donor``, ``BuildError``);
* :mod:`~mmrobust.schema.window`: where a tamper window lies (paper rule and the
  released generator's rule, ``released_window``).
"""

from __future__ import annotations

from mmrobust.schema.manifest import (
    ERRORS_NAME,
    MANIFEST_NAME,
    SAMPLE_META_FIELDS,
    BuildError,
    Donor,
    ManifestEntry,
)
from mmrobust.schema.sample import Benchmark, MediaKind, Polarity, Sample, Window
from mmrobust.schema.vocab import (
    CANONICAL_TYPES,
    OFFICIAL_TOKENS,
    TABLE7_LABELS,
    TAMPER_ORIGINAL,
    TAMPER_QUESTION,
    TYPE_ALIASES,
    YES_NO,
    normalise_type,
)
from mmrobust.schema.window import (
    DerivedWindow,
    Position,
    WindowError,
    make_window,
    parse_position,
    released_window,
    source_window,
)

__all__ = [
    "CANONICAL_TYPES",
    "ERRORS_NAME",
    "MANIFEST_NAME",
    "OFFICIAL_TOKENS",
    "SAMPLE_META_FIELDS",
    "TABLE7_LABELS",
    "TAMPER_ORIGINAL",
    "TAMPER_QUESTION",
    "TYPE_ALIASES",
    "YES_NO",
    "Benchmark",
    "BuildError",
    "DerivedWindow",
    "Donor",
    "ManifestEntry",
    "MediaKind",
    "Polarity",
    "Position",
    "Sample",
    "Window",
    "WindowError",
    "make_window",
    "normalise_type",
    "parse_position",
    "released_window",
    "source_window",
]
