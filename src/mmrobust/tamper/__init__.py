"""Video tampering: effects, the tamper window, the builder and the manifest (MVTamperBench 3.2-3.3)."""

from __future__ import annotations

from mmrobust.schema.window import WindowError, parse_position, source_window, window_length
from mmrobust.tamper.builder import BuildConfig, BuildReport, build
from mmrobust.tamper.effects import (
    EFFECTS,
    PAPER_EFFECTS,
    Effect,
    EffectContext,
    EffectParamError,
    make_effect,
)
from mmrobust.tamper.manifest import BuildError, Donor, ManifestEntry, read_manifest

__all__ = [
    "EFFECTS",
    "PAPER_EFFECTS",
    "BuildConfig",
    "BuildError",
    "BuildReport",
    "Donor",
    "Effect",
    "EffectContext",
    "EffectParamError",
    "ManifestEntry",
    "WindowError",
    "build",
    "make_effect",
    "parse_position",
    "read_manifest",
    "source_window",
    "window_length",
]
