"""Screenshots of the main screens, taken in headless Debian chromium, for the docs.

    .venv/bin/python scripts/screenshots.py [--base http://127.0.0.1:8000] [--out docs/screenshots]

Needs a running app with freshly seeded demo data (`make run`). It changes that data the way
people would: the demo's blocked task is submitted and goes through the first two review layers.
The evaluation screenshots (leaderboard, run, failure analysis, trajectory viewer) are taken by
tests/e2e/test_evaluation.py.
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


def pass_checklist(page) -> None:
    for radio in page.locator("input[type=radio][value=pass]").all():
        radio.check()


def review_screens(page, base: str, out: Path, blocked_url: str) -> None:
    """Submit the blocked task, self-check it, and show the peer review, pipeline, dashboard."""
    page.context.clear_cookies()
    login(page, base, "author", "author-demo")
    page.goto(blocked_url)
    page.click("text=Open workspace")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#submit-btn")
    page.wait_for_url(blocked_url)
    page.goto(f"{base}/review/")
    page.click("text=Your self-checks >> xpath=.. >> a")
    page.locator("table.checklist").scroll_into_view_if_needed()
    page.screenshot(path=out / "review-self-check.png")
    pass_checklist(page)
    page.click("button[name=outcome][value=approve]")
    page.wait_for_selector(".messages")

    page.context.clear_cookies()
    login(page, base, "author2", "author2-demo")
    page.goto(f"{base}/review/")
    page.screenshot(path=out / "review-queue.png", full_page=True)
    page.locator("tr", has_text="Peer review").locator("button", has_text="Take next").click()
    page.wait_for_selector(".layer-steps .current")
    page.fill("#new-thread-body", "Could the review year name its calendar?")
    page.select_option("#new-thread-blocker", "review_year_dates")
    page.click("button:text-is('Comment')")
    page.wait_for_selector("#threads article.thread")
    pass_checklist(page)
    page.fill("textarea[name=blocker-comment-review_year_dates]", "Fine as it is.")
    page.fill("#summary", "Blockers are real gaps; the blocked question reads naturally.")
    page.screenshot(path=out / "review-task.png", full_page=True)

    page.context.clear_cookies()
    login(page, base, "lead", "lead-demo")
    page.goto(f"{base}/review/")
    page.click("text=Pipeline · Demo benchmark")
    page.screenshot(path=out / "review-pipeline.png")
    page.goto(f"{base}/review/")
    page.click("text=Dashboard · Demo benchmark")
    page.wait_for_selector("#h-states")
    page.screenshot(path=out / "review-dashboard.png", full_page=True)
    page.goto(blocked_url)
    page.click("text=Judge validation")
    page.click("button:has-text('Measure the judge')")
    page.wait_for_selector("#measured")
    page.screenshot(path=out / "judge-validation.png", full_page=True)
    page.goto(f"{blocked_url}timeline/")
    page.screenshot(path=out / "timeline.png", full_page=True)
    page.goto(f"{base}/tokens/")
    page.screenshot(path=out / "api-tokens.png")


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

        # The demo's blocked SQL task: its page, then the workspace.
        page.click("text=Among the clients whose loan contract is running")
        page.wait_for_selector("#blocker-troubled_loan_definition")
        blocked_url = page.url
        page.screenshot(path=out / "task-page.png", full_page=True)
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
        page.click("button:text-is('Run gold SQL')")
        page.wait_for_selector("#gold-query-result table")
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
        page.locator("#environment-spec").scroll_into_view_if_needed()
        page.wait_for_selector("#environment-card")
        page.locator("#environment-spec").screenshot(path=out / "workspace-swe-specification.png")
        page.goto(f"{base}/imports/")
        page.screenshot(path=out / "import.png", full_page=True)

        review_screens(page, base, out, blocked_url)
        browser.close()
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
