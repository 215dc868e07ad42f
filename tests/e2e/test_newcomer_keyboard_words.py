"""Issue 30, items 7 and 8: the keyboard paths a newcomer tried, and the words meant for
developers where people read (lint, the task header, gate texts, the self-check)."""

import re

import pytest
from playwright.sync_api import expect

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True)


def _task(source_id="retail_bank/4"):
    from hilbench_annotate.models import Task

    return Task.objects.get(project__slug="demo", source_id=source_id)


def _focused(page) -> str:
    return page.evaluate(
        "() => { const e = document.activeElement;"
        " return (e.getAttribute('aria-label') || e.textContent || e.name || '').trim(); }"
    )


def test_a_skip_link_reaches_the_workspace_in_a_few_tabs(page, live_server, demo):
    """Item 7: 14 Tab presses through the navigation to reach Save."""
    task = _task()
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    expect(page.get_by_role("link", name="Skip to content")).to_be_visible()
    page.keyboard.press("Enter")
    presses = 0
    while _focused(page) != "Save" and presses < 8:
        page.keyboard.press("Tab")
        presses += 1
    assert _focused(page) == "Save", f"Save not reached in {presses} presses after the skip link"
    assert presses <= 5


def test_the_tab_strip_follows_the_arrow_keys(page, live_server, demo):
    """Item 7: the tab strip, marked role="tab", ignored the arrow keys."""
    task = _task()
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    spec = page.get_by_role("tab", name="Specification")
    spec.focus()
    page.keyboard.press("ArrowRight")
    environment = page.get_by_role("tab", name="Environment")
    expect(environment).to_be_focused()
    expect(environment).to_have_attribute("aria-selected", "true")
    expect(page.locator("#panel-env")).to_be_visible()
    page.keyboard.press("End")
    expect(page.get_by_role("tab", name="Preview")).to_be_focused()
    page.keyboard.press("ArrowRight")  # wraps round
    expect(spec).to_be_focused()
    expect(spec).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("tab", name="Preview")).to_have_attribute("aria-selected", "true")
    # One Tab stop for the whole strip: the selected tab.
    tabbable = page.locator('[role="tab"]:not([tabindex="-1"])')
    expect(tabbable).to_have_count(1)
    expect(tabbable).to_have_attribute("aria-selected", "true")


def test_alt_b_starts_the_new_blocker_at_its_id(page, live_server, demo):
    """Item 7: Alt+B put focus in the new blocker's description, not its id."""
    task = _task()
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    before = page.locator("fieldset.blocker-edit").count()
    page.keyboard.press("Alt+b")
    expect(page.locator("fieldset.blocker-edit")).to_have_count(before + 1)
    new = page.locator("fieldset.blocker-edit").last
    expect(new.locator('input[name$="-key"]')).to_be_focused()


def test_the_lint_panel_speaks_to_people(page, live_server, demo):
    """Item 8: lint said `blocker_count blockers` and `empty_field blockers[0].description`."""
    task = _task()
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/#blockers")
    first = page.locator("fieldset.blocker-edit").first
    first.locator('textarea[name$="-description"]').fill("")
    panel = page.locator("#lint-panel")
    finding = panel.locator('li.finding[data-rule="empty_field"]')
    expect(finding).to_contain_text("Empty field")
    expect(finding).to_contain_text("Blocker 1 › description")
    expect(panel).not_to_contain_text("empty_field")
    expect(panel).not_to_contain_text("blockers[0]")


def test_the_task_header_names_its_author_as_a_person(page, live_server, demo):
    """Item 8: the header read "author author"."""
    task = _task()
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    header = page.locator(".page-head")
    expect(header).to_contain_text("written by author")
    expect(header).not_to_contain_text(re.compile(r"\bauthor author\b"))


def test_a_gate_text_is_whole_and_says_its_name_once(page, live_server, demo):
    """Item 8: "judge_recall: judge_recall: … accept trigger-phrase suggestion" (cut
    mid-word, its prefix doubled) on the final sign-off."""
    from hilbench_annotate.selectors import revision_current
    from validators.models import ValidationResult, ValidationRun

    task = _task()
    message = (
        "Judge recall 70% on 12 held-out questions (precision 100%); the floor is 85%. "
        "Below 80%: accept trigger-phrase suggestions from the misses and re-validate."
    )
    run = ValidationRun.objects.create(
        task=task, revision=revision_current(task=task), checks=["judge_recall"],
        status=ValidationRun.Status.FAILED, created_by=task.author,
    )  # fmt: skip
    ValidationResult.objects.create(
        run=run, group="judge_recall", check_name="judge_recall", outcome="failed",
        message=message,
    )  # fmt: skip
    type(task).objects.filter(pk=task.pk).update(status="in_review", review_layer=6)
    login(page, live_server, "lead", "lead-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/review/")
    gates = page.locator("aside .card", has_text="Gates")
    expect(gates).to_contain_text("accept trigger-phrase suggestions from the misses")
    expect(gates).not_to_contain_text("judge_recall: judge_recall")


def test_the_self_check_asks_each_criterion_of_each_blocker(page, live_server, demo):
    """Item 8: the self-check asked the seven criteria once per task; the guide says per
    blocker. Each criterion now has a tick per blocker (first as attested in the workspace);
    leaving one blocker unticked fails the criterion and names the blocker."""
    from review.models import ReviewDecision

    task = _task()
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    page.once("dialog", lambda d: d.accept())
    page.click("#submit-btn")
    page.wait_for_url(re.compile(rf".*/tasks/{task.pk}/$"))
    page.goto(f"{live_server.url}/tasks/{task.pk}/review/")
    keys = list(task.blockers.order_by("position").values_list("key", flat=True))
    row = page.locator("table.checklist tr", has_text="Realistic")
    for key in keys:
        expect(row.get_by_label(key, exact=True)).to_be_checked()
    row.get_by_label(keys[1], exact=True).uncheck()
    page.fill("#summary", "One blocker is not realistic yet.")
    page.click("button[name=outcome][value=request_changes]")
    expect(page.locator(".messages")).to_be_visible()
    decision = ReviewDecision.objects.get(task=task)
    realistic = next(a for a in decision.checklist if a["item"].startswith("Realistic"))
    assert realistic["passed"] is False and keys[1] in realistic["note"]
    assert all(a["passed"] for a in decision.checklist if not a["item"].startswith("Realistic")), (
        decision.checklist
    )
