"""Screenshots of the main pages, taken in headless Debian chromium, for docs and review.

    .venv/bin/python scripts/screenshots.py [--base http://127.0.0.1:8000] [--out docs/screenshots]

Needs a running app with the demo data (`make run`).
"""

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--user", default="author")
    parser.add_argument("--password", default="author-demo")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{args.base}/login/")
        page.fill("#id_username", args.user)
        page.fill("#id_password", args.password)
        page.click("button[type=submit]")
        page.wait_for_url(f"{args.base}/")
        page.screenshot(path=args.out / "task-list.png", full_page=True)
        page.click("text=Among the clients whose loan contract is running")
        page.wait_for_load_state()
        page.screenshot(path=args.out / "task-detail-sql.png", full_page=True)
        page.goto(f"{args.base}/?domain=swe")
        page.click("td.title a")
        page.wait_for_load_state()
        page.screenshot(path=args.out / "task-detail-swe.png", full_page=True)
        page.goto(f"{args.base}/imports/")
        page.screenshot(path=args.out / "import.png", full_page=True)
        browser.close()
    print(f"screenshots in {args.out}")


if __name__ == "__main__":
    main()
