"""Non-ASCII source names keep their letters in sample ids (issue 33.3).

Before: ``電話.mp4`` and ``映像.mp4`` both became the stem ``__`` (then
``__-1c4add78`` / ``__-91028f9d`` by the collision suffix) and ``vélo 1.mp4``
became ``v_lo_1``, so the sample browser's id filter could not find them by name.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets import load_dataset
from mmrobust.tamper import read_manifest
from mmrobust.tamper.config import BuildConfig
from mmrobust.tamper.layout import safe_stem
from mmrobust.tamper.plan import plan_sources
from tests.synth import make_synthetic_video


def test_safe_stem_keeps_letters_of_any_script() -> None:
    assert safe_stem("電話") == "電話"
    assert safe_stem("vélo 1") == "vélo_1"
    assert safe_stem(unicodedata.normalize("NFD", "vélo 1")) == "vélo_1"  # macOS names: NFC
    assert safe_stem("हिन्दी") == "हिन्दी"  # combining vowel signs are marks, kept
    assert safe_stem('a/b\\c:d*e?f"g<h>i|j') == "a_b_c_d_e_f_g_h_i_j"
    assert safe_stem("clip.v2-final") == "clip.v2-final"
    assert safe_stem("") == "video"


def test_unicode_names_keep_distinct_uids_and_the_collision_suffix(tmp_path: Path) -> None:
    """Distinct names are their own uids; the same stem in two folders still gets the hash."""
    make_synthetic_video(tmp_path / "電話.mp4", 30, 25, (64, 48), seed=1)
    make_synthetic_video(tmp_path / "映像.mp4", 30, 25, (64, 48), seed=2)
    make_synthetic_video(tmp_path / "vélo 1.mp4", 30, 25, (64, 48), seed=3)
    for sub, seed in (("a", 4), ("b", 5)):
        (tmp_path / sub).mkdir()
        make_synthetic_video(tmp_path / sub / "猫.mp4", 30, 25, (64, 48), seed=seed)
    plans, _, errors = plan_sources(
        [tmp_path / "電話.mp4", tmp_path / "映像.mp4", tmp_path / "vélo 1.mp4",
         tmp_path / "a" / "猫.mp4", tmp_path / "b" / "猫.mp4"],
        BuildConfig(),
    )  # fmt: skip
    assert errors == []
    uids = {p.path.name if p.path.parent == tmp_path else p.path.parent.name: p.uid for p in plans}
    assert uids["電話.mp4"] == "電話"
    assert uids["映像.mp4"] == "映像"
    assert uids["vélo 1.mp4"] == "vélo_1"
    by_folder = {p.path.parent.name: p for p in plans if p.path.name == "猫.mp4"}
    for p in by_folder.values():
        assert p.uid == f"猫-{p.sha256[:8]}"
    assert by_folder["a"].uid != by_folder["b"].uid


def test_a_build_of_unicode_names_has_findable_ids(tmp_path: Path) -> None:
    """``mmrobust tamper`` writes ``電話__dropping``; the dataset loads it back by that id."""
    src = tmp_path / "src"
    src.mkdir()
    make_synthetic_video(src / "電話.mp4", 40, 25, (64, 48), seed=1)
    make_synthetic_video(src / "vélo 1.mp4", 40, 25, (64, 48), seed=2)
    out = tmp_path / "build"
    result = CliRunner().invoke(
        app, ["tamper", str(src), "--out", str(out), "--effects", "dropping", "-q"]
    )
    assert result.exit_code == 0, result.output
    ids = sorted(e.id for e in read_manifest(out))
    assert ids == ["vélo_1__dropping", "vélo_1__original", "電話__dropping", "電話__original"]
    assert (out / "videos" / "電話" / "dropping.mp4").is_file()
    assert sorted(s.id for s in load_dataset(str(out)).samples) == ids
