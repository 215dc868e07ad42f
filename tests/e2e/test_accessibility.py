"""axe-core on every main screen, in the states people use them: no serious or critical violation.

One demo seed and one browser context per role keep this fast; every screen is checked and all
violations are reported together, so one run lists everything to fix.
"""

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .axe import axe_violations, describe
from .conftest import new_page

pytestmark = pytest.mark.django_db(transaction=True)


class Audit:
    def __init__(self):
        self.checked: list[str] = []
        self.failures: list[str] = []

    def check(self, page, where: str) -> None:
        self.checked.append(where)
        violations = axe_violations(page)
        if violations:
            self.failures.append(f"== {where} ({page.url})\n{describe(violations)}")

    def assert_clean(self) -> None:
        assert not self.failures, "\n".join(self.failures)


def workspace_tabs(page, audit: Audit, domain: str) -> None:
    audit.check(page, f"workspace {domain}: specification")
    page.click("[data-tab=env]")
    if domain == "sql":
        page.click(".table-list button >> nth=0")
        page.wait_for_selector("#table-view table")
        page.fill("#console-sql", "SELECT status, COUNT(*) AS n FROM loan GROUP BY status")
        page.click("button:text-is('Run')")
        page.wait_for_selector("#query-result table")
    else:
        page.click("#repo >> text=invoicing/")
        page.click("#repo >> text=money.py")
        page.wait_for_selector("#repo-file")
    audit.check(page, f"workspace {domain}: environment")
    page.click("[data-tab=blockers]")
    if not page.locator("fieldset.blocker-edit").count():
        page.keyboard.press("Alt+b")
        expect(page.locator("fieldset.blocker-edit")).to_have_count(1)
    page.wait_for_selector("#lint-panel .finding")
    audit.check(page, f"workspace {domain}: blockers and lint")
    page.click("[data-tab=preview]")
    page.wait_for_selector("#preview details[open] pre")
    audit.check(page, f"workspace {domain}: preview")
    page.keyboard.press("?")
    expect(page.locator("#help-overlay")).to_be_visible()
    audit.check(page, f"workspace {domain}: keyboard shortcuts")
    page.keyboard.press("Escape")


def test_main_screens_have_no_serious_axe_violations(browser, live_server, demo):
    from evaluation.models import TaskPass
    from review.services import task_submit

    audit = Audit()
    blocked = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    swe = Task.objects.get(project__slug="demo", domain="swe")
    # The demo's blocked task goes to review, so the queues and the review page have content.
    task_submit(actor=blocked.author, task_id=blocked.pk, expected_version=blocked.version)

    page = new_page(browser, live_server, "author", bypass_csp=True)
    audit.check(page, "task list")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/")
    audit.check(page, "task page (SQL, blocked)")
    sql = Task.objects.get(project__slug="demo", source_id="retail_bank/0")
    page.goto(f"{live_server.url}/tasks/{sql.pk}/edit/")
    workspace_tabs(page, audit, "sql")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/edit/revisions/")
    audit.check(page, "revision history")
    page.goto(f"{live_server.url}/review/")
    audit.check(page, "review queue (author, with a self-check)")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/review/")
    audit.check(page, "review page with the decision form (self-check)")
    page.goto(f"{live_server.url}/imports/")
    audit.check(page, "import page")
    page.goto(f"{live_server.url}/tokens/")
    audit.check(page, "API tokens")
    page.context.close()

    page = new_page(browser, live_server, "author2", bypass_csp=True)
    page.goto(f"{live_server.url}/tasks/{swe.pk}/")
    audit.check(page, "task page (SWE)")
    page.goto(f"{live_server.url}/tasks/{swe.pk}/edit/")
    workspace_tabs(page, audit, "swe")
    page.context.close()

    page = new_page(browser, live_server, "lead", bypass_csp=True)
    page.goto(f"{live_server.url}/review/")
    audit.check(page, "review queue (lead)")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/review/")
    audit.check(page, "review page of a task in review (lead)")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/timeline/")
    audit.check(page, "timeline")
    project = blocked.project_id
    page.goto(f"{live_server.url}/projects/{project}/dashboard/")
    audit.check(page, "lead dashboard")
    page.goto(f"{live_server.url}/projects/{project}/pipeline/")
    audit.check(page, "pipeline editor")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/judge/")
    audit.check(page, "judge validation")
    page.goto(f"{live_server.url}/projects/{project}/judge-report/")
    audit.check(page, "judge report")
    page.goto(f"{live_server.url}/projects/{project}/evaluation/")
    page.wait_for_selector("#leaderboard")
    audit.check(page, "evaluation page")
    page.click("#runs tbody tr >> nth=0 >> a")
    page.wait_for_selector("#passes")
    audit.check(page, "evaluation run")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/selection/")
    audit.check(page, "pass-rate selection")
    failed = next(
        p
        for p in TaskPass.objects.filter(mode="ask_human", resolved=False).order_by("pk")
        if p.ask_human_run and p.ask_human_run.calls.count() >= 2
    )
    page.goto(f"{live_server.url}/evaluation/passes/{failed.pk}/")
    page.wait_for_selector(".step-ask")
    audit.check(page, "trajectory viewer")
    page.goto(f"{live_server.url}/projects/{project}/failures/")
    page.wait_for_selector("table.heat")
    audit.check(page, "failure analysis")
    page.goto(f"{live_server.url}/projects/{project}/failures/taxonomy/")
    audit.check(page, "failure taxonomy")
    page.context.close()

    assert len(audit.checked) >= 25
    audit.assert_clean()
