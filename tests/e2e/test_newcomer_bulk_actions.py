"""Issue 30, item 11: bulk actions on the task list. Tick tasks (one by one, the whole page, or
every task the filter matches), choose an action, apply it, and read what was done."""

import os
import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True)

# The docs' screenshot is refreshed only when asked (HILBENCH_SCREENSHOTS=1), as in
# test_evaluation.py: a test run leaves the repository's files alone.
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("HILBENCH_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "hilbench-screenshots"
)


@pytest.fixture
def eager_jobs():
    """Validation jobs run in the web process, right after the commit that queues them."""
    from hilbench_annotate.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_a_lead_tags_two_tasks_then_checks_every_task_the_filter_matches(
    page, live_server, demo, eager_jobs
):
    from django.contrib.auth import get_user_model

    from hilbench_annotate.models import Task
    from validators.models import ValidationRun

    lead = get_user_model().objects.get(username="lead")
    login(page, live_server, "lead", "lead-demo")
    page.fill("#id_q", "loan")
    expect(page).to_have_url(f"{live_server.url}/?q=loan", timeout=5000)
    rows = page.locator("#results tbody tr")
    expect(rows.first).to_contain_text("loan")
    loan = Task.objects.visible_to(lead).search("loan")  # what the list's search matches
    matching = loan.count()
    assert matching > 2

    # Two tasks, ticked one by one.
    first, second = rows.nth(0), rows.nth(1)
    titles = [r.locator("td.title a").inner_text() for r in (first, second)]
    ids = sorted(int(r.get_by_role("checkbox").get_attribute("value")) for r in (first, second))
    first.get_by_role("checkbox").check()
    second.get_by_role("checkbox").check()
    bar = page.get_by_role("region", name="Bulk actions")
    expect(bar).to_contain_text("2 selected")
    bar.get_by_label("Action").select_option(label="Add tag")
    bar.get_by_label("Tag", exact=True).fill("Batch-7")
    bar.get_by_role("button", name="Apply").click()

    expect(page.locator(".messages")).to_contain_text("Tagged 2 tasks with “batch-7”")
    expect(page).to_have_url(re.compile(r"\?q=loan$"))  # the filter is kept
    for title in titles:
        row = page.locator("#results tbody tr", has_text=title)
        expect(row.locator(".tag", has_text="batch-7")).to_be_visible()
    tagged = Task.objects.filter(tags__name="batch-7")
    assert sorted(tagged.values_list("pk", flat=True)) == ids  # (the list cuts long titles)

    # The page's box ticks every row of the page (by app.js, deferred: the page the Apply
    # redirected to shows its messages before its scripts have run).
    page.wait_for_load_state()
    page_box = page.get_by_role("checkbox", name="Select all on this page")
    page_box.check()
    boxes = page.locator("#results tbody input[type=checkbox]")
    for i in range(boxes.count()):
        expect(boxes.nth(i)).to_be_checked()
    page_box.uncheck()
    expect(bar).to_contain_text("0 selected")

    # Every task the filter matches, with the structural checks.
    bar.get_by_label(f"All {matching} matching the filter").check()
    expect(bar).to_contain_text(f"{matching} selected")
    bar.get_by_label("Action").select_option(label="Run structural checks")
    bar.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text(
        f"Structural checks started for {matching} tasks"
    )
    runs = ValidationRun.objects.filter(task__in=loan)
    assert runs.values("task").distinct().count() == matching
    assert runs.count() == matching  # one job per task
    # Eager: each ran to the end, as the task page's button runs it.
    assert not runs.filter(status__in=["queued", "running"]).exists()


def test_an_author_is_not_offered_the_assignment_of_reviewers(page, live_server, demo):
    """Only a lead assigns reviewers (review_assign); an author tags and checks tasks."""
    login(page, live_server, "author", "author-demo")
    bar = page.get_by_role("region", name="Bulk actions")
    actions = bar.get_by_label("Action").locator("option").all_inner_texts()
    assert "Add tag" in actions and "Run structural checks" in actions
    assert not [a for a in actions if a.startswith("Assign")], actions

    # The docs' picture: three tasks ticked, the tag about to be added.
    rows = page.locator("#results tbody tr")
    for i in (0, 2, 3):
        rows.nth(i).get_by_role("checkbox").check()
    expect(bar).to_contain_text("3 selected")
    bar.get_by_label("Action").select_option(label="Add tag")
    bar.get_by_label("Tag", exact=True).fill("release-1")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "task-list.png")

    # A lead is.
    page.context.clear_cookies()
    login(page, live_server, "lead", "lead-demo")
    actions = bar.get_by_label("Action").locator("option").all_inner_texts()
    assert "Assign to reviewer…" in actions
