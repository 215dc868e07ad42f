"""Issue 30: what a newcomer hit on real data, each fixed at its cause and shown in a browser.
(Item 1, questions added fast, is in test_judge_labelling.py.)"""

import pytest
from playwright.sync_api import expect

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_structural_checks_can_be_run_after_the_judge_was_measured(page, live_server, demo):
    """Item 2: once the judge's recall was measured (a validation run of judge_recall only),
    the task page's checks card showed that run, and its one button re-ran judge_recall: the
    structural checks the final sign-off needs could not be started. The card shows the
    structural checks' own run — here none yet, so the button that starts them."""
    from hilbench_annotate.models import Task
    from hilbench_annotate.selectors import revision_current
    from validators.models import ValidationRun

    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    ValidationRun.objects.filter(task=task).delete()
    ValidationRun.objects.create(
        task=task, revision=revision_current(task), checks=["judge_recall"],
        status=ValidationRun.Status.PASSED, created_by=task.author,
    )  # fmt: skip
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    card = page.locator("#validation")
    expect(card).to_contain_text("Not validated yet")
    card.get_by_role("button", name="Run structural checks").click()
    expect(card).not_to_contain_text("Not validated yet")
    run = ValidationRun.objects.filter(task=task).order_by("-pk").first()
    assert "spec" in run.checks and "judge_recall" not in run.checks


def test_a_search_is_kept_in_the_address_bar(page, live_server, demo):
    """Item 6: the guide says the address bar keeps the filter for bookmarking."""
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/")
    page.fill("#id_q", "loan")
    expect(page).to_have_url(f"{live_server.url}/?q=loan", timeout=5000)
    rows = page.locator("#results tbody tr")
    expect(rows.first).to_contain_text("loan")
    page.reload()
    expect(page.locator("#id_q")).to_have_value("loan")
