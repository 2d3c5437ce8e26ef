"""The report page as a reader sees it: Chromium (Debian's /usr/bin/chromium), driven by Playwright, renders the page
and takes one PNG of all of it.   python screenshot.py PAGE.html OUT.png"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip


def main() -> None:
    page, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        view = browser.new_page(viewport={"width": 1280, "height": 900})
        view.goto(page.as_uri(), wait_until="load")
        view.screenshot(path=str(out), full_page=True)
        browser.close()


if __name__ == "__main__":
    main()
