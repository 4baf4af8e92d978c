"""The sample browser at scale: its data in chunk files beside a small page, filtered and paged
in a real headless Chromium from ``file://``, written from rows streamed out of SQLite.

The runs are made fast (``tests/big_run.py``); the chunk and index sizes are made small
here so that a few thousand rows cross many chunks and several index blocks, the paths a
million-row report takes (``benchmarks/report_browser.py`` opens a 1M-row report).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mmrobust.report import browser_files
from mmrobust.report.browser_files import chunk_name, read_browser
from mmrobust.report.site import build_site
from mmrobust.report.view import load_run
from tests.big_run import TYPES, answer_of, big_run, sample_id


def _manifest(report: Path) -> dict:
    page = (report / "index.html").read_text()
    m = re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', page, re.S)
    assert m is not None
    return dict(json.loads(m.group(1)))


def _expected_code(model: str, i: int) -> str:
    """By hand: ``constant:X`` answers X (``?`` every 97th row: a parse failure, wrong)."""
    reply, truth = answer_of(model, i), "B" if TYPES[i % 6] == "original" else "A"
    if reply == "?":
        return "3"  # 1 + 2 x parse_fail (1) + 0
    return "2" if reply == truth else "1"  # 1 + 2 x ok (0) + correct


@pytest.fixture()
def small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser_files, "CHUNK_SAMPLES", 100)
    monkeypatch.setattr(browser_files, "BLOCK_SAMPLES", 500)


def test_browser_files_stream_every_row_into_chunks_and_an_index(
    tmp_path: Path, small_files: None
) -> None:
    n = 1234
    runs = [big_run(tmp_path / m.replace(":", "-"), n, m) for m in ("constant:A", "constant:B")]
    report = tmp_path / "rep"
    build_site(runs, report, max_thumbs=0)
    man = _manifest(report)
    assert (man["n"], man["chunk"], man["block"], man["dir"]) == (n, 100, 500, "samples")
    assert man["types"] == ["original", "dropping", "masking", "repetition", "rotation",
                            "substitution"]  # fmt: skip
    names = sorted(p.name for p in (report / "samples").iterdir())
    assert names == sorted([chunk_name("chunk", k) for k in range(13)]
                           + [chunk_name(kind, k) for kind in ("index", "ids") for k in range(3)])  # fmt: skip
    data = read_browser(report, man)
    assert [s["id"] for s in data["samples"]] == [sample_id(i) for i in range(n)] == data["ids"]
    assert data["index"][:7] == [(TYPES[i % 6], _expected_code("constant:A", i)
                                  + _expected_code("constant:B", i)) for i in range(7)]  # fmt: skip
    assert data["index"][96] == ("original", "33")  # both runs failed to parse sample 96
    assert all(codes == _expected_code("constant:A", i) + _expected_code("constant:B", i)
               for i, (_, codes) in enumerate(data["index"]))  # fmt: skip
    s = data["samples"][1]  # a dropping clip: A right, B wrong; one prompt in the chunk
    assert [(a[0], a[1], a[3], a[4]) for a in s["r"]] == [(0, "A", "ok", 1), (1, "B", "ok", 0)]
    (prompt,) = data["prompts"]  # each chunk lists it once; every answer points at it
    assert prompt.startswith("Does this video exhibit") and prompt.endswith("A. Yes\nB. No")
    # the page carries none of the samples: the manifest alone
    page = (report / "index.html").read_text()
    assert sample_id(1000) not in page and len(page) < 60_000
    # the store's rows are streamed, never all loaded: the view holds none of them
    view = load_run(runs[0])
    assert not isinstance(view.rows, list) and len(view.rows) == n
    assert next(iter(view.rows)).sample.id == sample_id(0)


def test_a_second_report_replaces_the_browser_files_whole(
    tmp_path: Path, small_files: None
) -> None:
    big = big_run(tmp_path / "big", 700)
    report = tmp_path / "rep"
    build_site([big], report, max_thumbs=0)
    assert (report / "samples" / chunk_name("chunk", 6)).is_file()
    small = big_run(tmp_path / "small", 150)
    build_site([small], report, max_thumbs=0)  # fewer rows: no chunk of the older report stays
    assert sorted(p.name for p in (report / "samples").iterdir()) == [
        "chunk-000000.js", "chunk-000001.js", "ids-0000.js", "index-0000.js"]  # fmt: skip
    assert _manifest(report)["n"] == 150
    assert [p.name for p in report.iterdir() if p.name.startswith(".")] == []


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.browser
def test_chromium_filters_and_pages_a_chunked_report(tmp_path: Path, small_files: None) -> None:
    """30,000 rows (two runs of 15,000 samples) in 150 chunks and 30 index blocks: the first
    page, a page that spans two chunks, a filter with paging deep into the last blocks, a
    status filter and the id search each show what the rows give by hand."""
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    n = 15_000
    runs = [big_run(tmp_path / m.replace(":", "-"), n, m) for m in ("constant:A", "constant:B")]
    index = build_site(runs, tmp_path / "rep", max_thumbs=0).index_html
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip

    def show(fragment: str) -> tuple[int, list[str]]:
        dom = subprocess.run(
            [browser, *flags, "--dump-dom", index.resolve().as_uri() + fragment],
            check=True, capture_output=True, text=True, timeout=300,
        ).stdout  # fmt: skip
        found = re.search(rf'id="count" data-ms="\d+">(\d+) of {n} samples<', dom)
        assert found, dom[-3000:]
        return int(found.group(1)), re.findall(r'<div class="head"><span class="id">([^<]+)<', dom)

    assert show("") == (n, [sample_id(i) for i in range(50)])
    assert show("#size=200&page=3") == (n, [sample_id(i) for i in range(400, 600)])
    # constant:B (run 1) is wrong on every tampered clip: all rotation clips, page 40 of 50
    rotation = [i for i in range(n) if i % 6 == 4]
    assert show("#type=rotation&run=1&answer=incorrect&page=40") == (
        len(rotation), [sample_id(i) for i in rotation[1950:2000]])  # fmt: skip
    # every run correct: the clips constant:A and constant:B both got right (none: they differ)
    assert show("#answer=correct")[0] == 0
    failed = [i for i in range(n) if i % 97 == 96]  # both runs failed to parse the same rows
    assert show("#status=parse_fail&page=2") == (
        len(failed),
        [sample_id(i) for i in failed[50:100]],
    )
    assert show("#id=S0014") == (1000, [sample_id(i) for i in range(14_000, 14_050)])
