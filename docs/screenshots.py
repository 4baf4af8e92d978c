"""Regenerate the README's screenshots of the demo report with headless Chromium.

    python docs/screenshots.py [--demo mmrobust-demo]

Runs ``mmrobust demo`` into ``--demo`` unless a finished demo is there, then
writes ``docs/report.png`` (the top of ``index.html``: the contents bar, the first
dataset's leaderboards unfolded, the papers' published rows among the runs) and ``docs/report-samples.png`` (the
sample browser, filtered to dropping clips). Needs ``chromium`` (Debian:
``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def shoot(browser: str, page: Path, out: Path, size: str, profile: Path) -> None:
    """One screenshot of ``page`` (a file, optionally with ``#fragment``) at ``size``."""
    subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={out}",
         f"--window-size={size}", page.as_uri()],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, default=Path("mmrobust-demo"))
    a = ap.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    index = a.demo / "report" / "index.html"
    if not index.is_file():
        subprocess.run(["mmrobust", "demo", "--out", str(a.demo), "-q"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "profile"
        # The leaderboards with the published rows shown (on the demo's own clips they start
        # hidden, one click away: the toggle is switched on in a copy of the page).
        board = index.parent / ".screenshot-board.html"
        board.write_text(
            index.read_text(encoding="utf-8").replace(
                '<input type="checkbox" id="show-published">',
                '<input type="checkbox" id="show-published" checked>',
            ),
            encoding="utf-8",
        )
        try:
            shoot(browser, board.resolve(), DOCS / "report.png", "1280,1000", profile)
        finally:
            board.unlink()
        # The sample browser on its own: a copy of the page that opens there, dropping clips shown.
        page = index.read_text(encoding="utf-8")
        page = page.replace("  update();\n}());", '  fType.value = "dropping"; update();\n}());')
        page = page.replace(
            "</head>", "<style>#leaderboard, #plots, #metadata { display:none; }</style></head>"
        )
        samples = index.parent / ".screenshot-samples.html"
        samples.write_text(page, encoding="utf-8")
        try:
            shoot(browser, samples.resolve(), DOCS / "report-samples.png", "1280,900", profile)
        finally:
            samples.unlink()
    print(f"wrote {DOCS / 'report.png'} and {DOCS / 'report-samples.png'}")


if __name__ == "__main__":
    main()
