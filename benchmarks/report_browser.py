"""The report at a million rows: page size, memory and CPU of writing it, and the sample browser
in headless Chromium. Prints figures; with ``--check`` also asserts the targets.

    python benchmarks/report_browser.py [--sizes 100000,1000000] [--check] [--keep DIR]

For each size N: a run folder of N text-only tamper rows made in seconds
(``tests/big_run.py``: a real 6-sample eval, its rows replaced by N synthetic ones in the
store's own columns), then ``mmrobust report`` of it in a fresh process: CPU, wall time,
peak resident memory (``ru_maxrss``), the size of ``index.html`` and of the whole folder.
When Chromium is installed, the page is opened from ``file://`` (no server) with
``--dump-dom`` and:

* the first page: the page's ``data-first-ms`` (from navigation start to the first page of
  cards drawn) and the wall time of the whole Chromium call;
* a filter and a page: ``#type=rotation&answer=incorrect&page=20`` (the page's ``data-ms``:
  loading the filter index, filtering every sample and drawing page 20), checked against
  the count and the ids the synthetic rows give by hand;
* the id search ``#id=s00123`` (loads the ids too).

Targets: ``index.html`` under 5 MB at 1M rows with the browser usable (the filtered page
is right), and peak memory that does not grow with N.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scale import child_report  # the same report stage as the scale benchmark's

ROOT = Path(__file__).resolve().parents[1]
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def chromium(index: Path, fragment: str, profile: Path) -> tuple[str, float]:
    """The DOM after load, and the wall time of the Chromium call."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser is not None
    t0 = time.perf_counter()
    dom = subprocess.run(
        [browser, *CHROME_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
         index.resolve().as_uri() + fragment],
        check=True, capture_output=True, text=True, timeout=600,
    ).stdout  # fmt: skip
    return dom, time.perf_counter() - t0


def browse(index: Path, n: int, tmp: Path) -> dict[str, Any]:
    """Open the page three ways (see the module docstring); check what it shows."""
    from tests.big_run import TYPES, sample_id

    out: dict[str, Any] = {}
    blank = tmp / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    _, out["blank_s"] = chromium(blank, "", tmp / "profile")
    dom, out["first_s"] = chromium(index, "", tmp / "profile")
    first = re.search(r'data-first-ms="(\d+)"', dom)
    out["first_ms"] = int(first.group(1)) if first else None
    out["first_ok"] = f">{n} of {n} samples<" in dom and dom.count('class="card"') == min(50, n)
    rotation = [i for i in range(n) if TYPES[i % len(TYPES)] == "rotation"]  # constant:A is
    # right on every tampered clip but the parse failures (every 97th row): those are wrong
    wrong = [i for i in rotation if i % 97 == 96]
    p = min(20, (len(wrong) + 49) // 50)
    fragment = f"#type=rotation&answer=incorrect&page={p}"
    dom, out["filter_s"] = chromium(index, fragment, tmp / "profile")
    got = re.search(r'id="count" data-ms="(\d+)">(\d+) of (\d+) samples<', dom)
    page = [sample_id(i) for i in wrong[(p - 1) * 50 : p * 50]]
    ids = re.findall(r'<div class="card" data-type="rotation"><div class="head"><span class="id">'
                     r"([^<]+)</span>", dom)  # fmt: skip
    out["filter_ms"] = int(got.group(1)) if got else None
    out["filter_ok"] = bool(got) and int(got.group(2)) == len(wrong) and ids == page
    dom, out["id_s"] = chromium(index, "#id=s00123", tmp / "profile")
    got = re.search(r'id="count" data-ms="(\d+)">(\d+) of', dom)
    out["id_ms"] = int(got.group(1)) if got else None
    out["id_ok"] = bool(got) and int(got.group(2)) == len(
        [i for i in range(n) if "s00123" in sample_id(i)]
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--check", action="store_true", help="assert the targets")
    ap.add_argument("--keep", default="", help="build the runs and reports in this folder")
    ap.add_argument("--child", default=None)
    ap.add_argument("--data", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.child == "report":
        print(json.dumps(child_report(a.data, a.out)))
        return
    sys.path.insert(0, str(ROOT))
    from tests.big_run import big_run

    peaks = []
    with tempfile.TemporaryDirectory() as tmpdir:
        root = Path(a.keep or tmpdir)
        for n in (int(x) for x in a.sizes.split(",")):
            run, rep = root / f"run-{n}", root / f"report-{n}"
            if not (run / "results.sqlite").is_file():
                big_run(run, n)
            shutil.rmtree(rep, ignore_errors=True)
            proc = subprocess.run([sys.executable, __file__, "--child", "report", "--data", str(run),
                                   "--out", str(rep)], capture_output=True, text=True, check=False)  # fmt: skip
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-3000:])
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            peaks.append(r["peak_mib"])
            print(f"{n:>9} rows  report: {r['cpu_s']:.1f} s CPU ({r['wall_s']:.1f} s wall), "
                  f"peak RSS {r['peak_mib']:.0f} MiB, index.html {r['page_mb']:.3f} MB, "
                  f"folder {r['folder_mb']:.1f} MB ({r['files']} files)", flush=True)  # fmt: skip
            if a.check:
                assert r["page_mb"] < 5, r
            if shutil.which("chromium") or shutil.which("chromium-browser"):
                b = browse(rep / "index.html", n, root)
                print(f"{'':>9}       Chromium: first page {b['first_ms']} ms in the page "
                      f"({b['first_s']:.1f} s the call, blank page {b['blank_s']:.1f} s); "
                      f"filter + page 20: {b['filter_ms']} ms ({b['filter_s']:.1f} s); id search: "
                      f"{b['id_ms']} ms ({b['id_s']:.1f} s); right: {b['first_ok']}, "
                      f"{b['filter_ok']}, {b['id_ok']}", flush=True)  # fmt: skip
                if a.check:
                    assert b["first_ok"] and b["filter_ok"] and b["id_ok"], b
    if a.check and len(peaks) > 1:
        assert max(peaks) < 1.2 * min(peaks), peaks


if __name__ == "__main__":
    main()
