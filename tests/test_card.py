"""Robustness cards (issue 30): one page and one JSON per model, linked from the leaderboards.

Data: bikes (250 frames, 25 fps) with ``dropping`` built at the start, middle and end
(1 s window): 1 original + 3 tampered clips; plus ``mmr-demo`` (24 pairs of 4-option
questions). ``constant:A`` answers "Yes" to every detection question: over all clips
(position ``all``) 3 tampered + 1 original, F1 2*3/(2*3+1) = 85.71 %, the always-Yes chance
level beside it; a coin flip expects 2*3/(3*3+1) = 60 %. At each position 1 tampered + the
1 original: F1 2/3 = 66.67 %, coin flip 2/(3+1) = 50 %. (One tamper type: pooling the
tampered clips gives the same levels here; ``tests/test_chance.py`` checks sets where the
per-type levels differ from pooled ones.) A uniform guess on a 4 x 4-option MMR pair: RA
1/16 = 6.25 %, MR 3/4 = 75 %.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips


@pytest.fixture(scope="module")
def positions_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("card") / "pos"
    args = ["tamper", str(sample_clips()["bikes"]), "--out", str(out), "--effects", "dropping"]
    args += ["--position", "start,middle,end", "--duration", "1", "--seed", "0", "--jobs", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def _suite(data: Path, out: Path, audits: list[str] = ()) -> Path:  # type: ignore[assignment]
    args = ["run", "--model", "constant:A", "--model", "random:0", "--data", str(data)]
    args += ["--data", "mmr-demo", "--out", str(out), "--bootstrap", "50", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out / "report"


def test_card_values_chance_and_links(positions_set: Path, tmp_path: Path) -> None:
    report = _suite(positions_set, tmp_path / "OUT")
    card = json.loads((report / "cards" / "constant-A.json").read_text())
    assert card["model"] == "constant:A" and card["units"] == "percent"
    det = card["detection"]
    assert [d["position"] for d in det] == ["all", "start", "middle", "end"]
    assert (det[0]["n_tampered"], det[0]["n_original"]) == (3, 1)
    assert det[0]["f1"] == 85.71 and det[0]["ci95"] == [85.71, 85.71]
    assert det[0]["chance"] == {"coin_flip": 60.0, "always_yes": 85.71}
    for d in det[1:]:
        assert (d["n_tampered"], d["n_original"]) == (1, 1)
        assert d["f1"] == 66.67 and d["ci95"] == [66.67, 66.67]
        assert d["chance"] == {"coin_flip": 50.0, "always_yes": 66.67}
    for d in det:
        assert d["parse_fail_rate"] == 0.0
        assert d["window_coverage"] is None  # constant:A is sent no frames
        assert d["leak_audit_ceiling"] is None
        assert d["published"]["shown"] is False
        assert "released MVTamperBench" in d["published"]["why"]
        assert d["run_dir"] == "../../constant-A/pos/detect"
    mmr = card["mmr"][0]
    assert (mmr["RA"], mmr["MR"], mmr["pairs"]) == (4.17, 83.33, 24)
    assert mmr["chance"] == {"RA": 6.25, "MR": 75.0}
    assert "MMR-benchmark.json" in mmr["published"]["why"]
    typ = card["type"][0]
    assert typ["n"] == 4 and typ["chance"]["uniform_guess"] == 50.0  # none or dropping
    when = card["when"][0]
    assert when["chance"]["uniform_guess"] == 25.0  # beginning, middle, end, nowhere
    lead = card["leading"][0]
    assert lead["pairs"] == 4 and lead["chance"] == {"RA": 12.5, "MR": 75.0}  # 2 x 4 options
    # the random model's card: its own numbers, another file
    rnd = json.loads((report / "cards" / "random-0.json").read_text())
    assert rnd["model"] == "random:0" and len(rnd["detection"]) == 4
    page = (report / "cards" / "constant-A.html").read_text()
    assert "Robustness card: constant:A" in page and "66.7" in page and "6.25" in page
    assert 'href="../index.html"' in page
    index = (report / "index.html").read_text()
    # every leaderboard row of constant:A links to its card, in a last column
    link = (
        '<td class="cardlink"><a href="cards/constant-A.html" '
        'title="robustness card of constant:A">card</a></td></tr>'
    )
    n_links, n_heads = index.count(link), index.count('<th class="cardlink">Robustness card</th>')
    # 7 tables: detection, type, when, when per type, leading, leading's text-only floor, MMR;
    # the two Table 2-shaped ones (leading, MMR) give each model an RA and an MR row
    assert (n_heads, n_links) == (7, 9)
    assert "Timeline under each clip" in index  # the clips' timelines get their legend


def test_card_audit_ceiling_and_published_neighbours(positions_set: Path, tmp_path: Path) -> None:
    """An audit of the same dataset gives the ceiling; a run on the released MMR file
    (its sha256) gets Table 2's three nearest rows by RA."""
    from mmrobust.report.card import card_data
    from mmrobust.report.mmr import RELEASED_SHA256
    from mmrobust.report.view import RunView

    audit = {
        "dataset": "pos", "n_clips": 4, "n_original": 1, "n_tampered": 3, "n_groups": 1,
        "always_yes": {"f1": 0.857}, "classifier": {"f1": 0.95, "model": "tree"},
        "fields": {"codec": {"f1": 0.9}, "duration": {"f1": 0.7}},
        "window_coverage": {"policy": "segments:8"},
    }  # fmt: skip
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(audit))
    out = tmp_path / "OUT"
    _suite(positions_set, out)
    from mmrobust.report.site import build_site

    runs = sorted(str(p.parent) for p in out.glob("*/*/*/run.json"))
    build_site(runs, tmp_path / "rep", audits=[str(path)], thumb_seconds=None)
    card = json.loads((tmp_path / "rep" / "cards" / "constant-A.json").read_text())
    assert {d["leak_audit_ceiling"]["f1"] for d in card["detection"]} == {95.0}
    assert card["detection"][0]["leak_audit_ceiling"]["by"] == "all-fields classifier (tree)"

    released = RunView(
        Path("x"),
        {"dataset": {"name": "MMR-benchmark", "data_hash": RELEASED_SHA256}},
        {"benchmark": "mmr", "RA": 53.0, "MR": 30.0, "pairs": 300, "ci": {"RA": [48.0, 58.0]}},
    )
    mmr = card_data("m", [released], tmp_path / "rep")["mmr"][0]
    assert mmr["published"]["shown"] is True
    # |RA - 53.0|: Step-1V 53.33 (0.33), Phi-3-vision 52.33 (0.67), Cogvlm2 54.0 (1.0)
    assert [r["model"] for r in mmr["published"]["rows"]] == [
        "Step-1V", "Phi-3-vision (4B)", "Cogvlm2-llama3",
    ]  # fmt: skip
    assert mmr["RA_ci95"] == [48.0, 58.0] and mmr["chance"] == {"RA": None, "MR": None}
