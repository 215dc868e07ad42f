"""Screenshots of the main screens, taken in headless Debian chromium, for the docs.

    .venv/bin/python scripts/screenshots.py [--base http://127.0.0.1:8000] [--out docs/screenshots]

Needs a running app with freshly seeded demo data (`make run`).
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


def login(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    out, base = args.out, args.base
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        login(page, base, "author", "author-demo")
        page.screenshot(path=out / "task-list.png", full_page=True)

        # The demo's blocked SQL task, in the workspace.
        page.click("text=Among the clients whose loan contract is running")
        page.click("text=Open workspace")
        page.wait_for_load_state("networkidle")
        page.screenshot(path=out / "workspace-sql-spec.png")
        page.click("[data-tab=env]")
        page.click(".table-list button >> text=transaction_log")
        page.fill(
            "#console-sql", "SELECT k_symbol, COUNT(*) AS n FROM transaction_log GROUP BY k_symbol"
        )
        page.click("button:text-is('Run')")
        page.wait_for_selector("#query-result table")
        page.screenshot(path=out / "workspace-sql-environment.png", full_page=True)
        page.click("[data-tab=blockers]")
        question = page.locator("input[name$='-q']").first
        question.fill("What does this blocker mean and which year is it?")
        page.wait_for_selector("#lint-panel .finding[data-rule=self_referential]")
        page.screenshot(path=out / "workspace-sql-blockers-lint.png")
        page.reload()  # drop the demonstration edit: it was never saved
        page.click("[data-tab=preview]")
        page.wait_for_selector("#preview details[open] pre")
        page.screenshot(path=out / "workspace-preview.png")
        page.click("text=History")
        page.screenshot(path=out / "revision-diff.png", full_page=True)

        # The demo SWE task: repository browser and setup patch.
        page.context.clear_cookies()
        login(page, base, "author2", "author2-demo")
        page.goto(f"{base}/?domain=swe")
        page.click("td.title a")
        page.click("text=Open workspace")
        page.click("[data-tab=env]")
        page.click("#repo >> text=invoicing/")
        page.click("#repo >> text=money.py")
        page.wait_for_selector("#repo-file")
        page.screenshot(path=out / "workspace-swe-environment.png", full_page=True)
        page.goto(f"{base}/imports/")
        page.screenshot(path=out / "import.png", full_page=True)
        browser.close()
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
