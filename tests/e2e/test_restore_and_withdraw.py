"""Issue 45, item 7 (first half): restore an earlier revision from the history, and withdraw a
review decision made by mistake, as users of Label Studio and Argilla expect to."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Revision, Task
from review.models import ReviewAssignment, ReviewDecision
from review.selectors import pipeline_layers
from review.services import review_decide, task_submit

from .conftest import new_page, workspace_ready
from .test_review import pass_checklist_and, take_next

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots/h6")


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def latest(task) -> Revision:
    return Revision.objects.filter(task=task).order_by("-number").first()


def test_an_author_restores_an_earlier_revision_from_the_history(browser, live_server, demo):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    original = latest(task)
    question = original.snapshot["blocked_spec"]["question"]

    # The author rewrites the question and saves: a revision they regret.
    page = new_page(browser, live_server, "author")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    workspace_ready(page)
    page.locator("#spec-question").fill("Which clients are troubled? List them all.")
    page.keyboard.press("Control+s")
    expect(page.locator("#save-status")).to_contain_text("Saved · revision")
    regretted = latest(task).number
    assert regretted == original.number + 1

    # A second tab of the same history, loaded now: it will be stale after the restore.
    stale = page.context.new_page()
    stale.goto(f"{live_server.url}/tasks/{task.pk}/edit/revisions/")

    # From the workspace to the history; it compares the last two revisions.
    page.click("a:has-text('History')")
    expect(page.locator("h1")).to_have_text("Revision history")
    expect(page.locator("h2").first).to_have_text(f"Revision {original.number} → {regretted}")
    shot(page, "01-history-before-restore")
    page.click(f"button:has-text('Restore revision {original.number}')")

    restored = regretted + 1
    expect(page.locator(".messages")).to_contain_text(
        f"Restored revision {original.number} as revision {restored}"
    )
    expect(page.locator("h2").first).to_have_text(f"Revision {regretted} → {restored}")
    expect(page.locator("section.card").first).to_contain_text(
        f"Restored revision {original.number} · Edited the question"
    )
    expect(page.locator("table.compact tbody tr").first).to_contain_text(str(restored))
    shot(page, "02-history-after-restore")
    revision = latest(task)
    assert revision.number == restored
    assert revision.reason == f"restored revision {original.number}"
    assert revision.snapshot["blocked_spec"]["question"] == question
    task.refresh_from_db()
    assert task.blocked_spec["question"] == question
    assert Revision.objects.filter(task=task).count() == original.number + 2  # nothing deleted

    # The stale tab's restore is refused, saying why; nothing more is stored.
    stale.click(f"button[aria-label='Restore revision {original.number}']")
    expect(stale.locator(".messages")).to_contain_text(
        f"Revision {original.number} was not restored"
    )
    expect(stale.locator(".messages")).to_contain_text("changed this task since you opened it")
    shot(stale, "03-history-stale-restore-refused")
    assert latest(task).number == restored

    # The timeline tells it.
    page.goto(f"{live_server.url}/tasks/{task.pk}/timeline/")
    expect(page.locator("body")).to_contain_text(
        f"restored revision {original.number} as revision {restored}"
    )
    shot(page, "04a-timeline-restored")

    # A reviewer reads the history but is offered no restore.
    reviewer = new_page(browser, live_server, "reviewer")
    reviewer.goto(f"{live_server.url}/tasks/{task.pk}/edit/revisions/")
    expect(reviewer.locator("h1")).to_have_text("Revision history")
    expect(reviewer.locator("button:has-text('Restore')")).to_have_count(0)
    shot(reviewer, "04-history-as-reviewer")


def _at_peer_review(task) -> None:
    """Submitted by its author, who passed the self-check (layer 1): waiting at layer 2."""
    author = task.author
    task_submit(actor=author, task_id=task.pk, expected_version=task.version)
    layer = pipeline_layers(project=task.project)[0]
    review_decide(
        actor=author,
        task_id=task.pk,
        outcome="approve",
        revision_number=latest(task).number,
        checklist=[{"item": item, "passed": True} for item in layer.checklist],
    )


def test_a_reviewer_withdraws_a_decision_made_by_mistake(browser, live_server, demo):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    _at_peer_review(task)

    # author2 approves at peer review by mistake, and lands on the queue.
    peer = new_page(browser, live_server, "author2")
    take_next(peer, live_server, "Peer review")
    pass_checklist_and(peer, "approve")
    expect(peer.locator("#last-decision")).to_contain_text("Approve")
    expect(peer.locator("#last-decision")).to_contain_text("layer 2 (Peer review)")
    shot(peer, "05-queue-last-decision")
    task.refresh_from_db()
    assert task.review_layer == 3

    # Withdrawn from the queue: back at layer 2, in author2's hands, the row kept.
    peer.click("button:has-text('Withdraw this decision')")
    expect(peer.locator(".messages")).to_contain_text("Withdrew your decision (approve)")
    expect(peer.locator(".decision.withdrawn")).to_contain_text("withdrawn")
    shot(peer, "06-review-page-after-withdraw")
    task.refresh_from_db()
    assert (task.status, task.review_layer) == ("in_review", 2)
    withdrawn = ReviewDecision.all_objects.get(task=task, layer=2)
    assert withdrawn.withdrawn_at is not None
    assert ReviewAssignment.objects.get(task=task, status="active").reviewer.username == "author2"
    peer.goto(f"{live_server.url}/tasks/{task.pk}/timeline/")
    expect(peer.locator("body")).to_contain_text("withdrew their decision (approved on revision")
    shot(peer, "07-timeline-withdrawn")

    expect(peer.locator(".tl-decision .badge")).to_contain_text("withdrawn")

    # This time author2 asks for changes, from the review page; withdraws it there too,
    # reaching it from the task's page (the task has left their queue).
    peer.goto(f"{live_server.url}/tasks/{task.pk}/review/")
    pass_checklist_and(peer, "request_changes", "Name the calendar of the review year.")
    task.refresh_from_db()
    assert task.status == "changes_requested"
    peer.goto(f"{live_server.url}/tasks/{task.pk}/")
    peer.click("a:has-text('Review page')")
    peer.click("button:has-text('Withdraw my decision')")
    expect(peer.locator(".messages")).to_contain_text("Withdrew your decision (request changes)")
    task.refresh_from_db()
    assert (task.status, task.review_layer) == ("in_review", 2)

    # Approved for real; once the auditor holds it at layer 3, it can no longer be withdrawn.
    pass_checklist_and(peer, "approve")
    auditor = new_page(browser, live_server, "auditor")
    take_next(auditor, live_server, "Registry audit")
    peer.goto(f"{live_server.url}/review/")
    expect(peer.locator("#last-decision")).to_have_count(0)
    peer.goto(f"{live_server.url}/tasks/{task.pk}/review/")
    expect(peer.locator(".decision").first).to_contain_text(
        "Can no longer be withdrawn: auditor has taken it at layer 3"
    )
    expect(peer.locator("button:has-text('Withdraw my decision')")).to_have_count(0)
    shot(peer, "08-review-page-no-longer-withdrawable")
    # Nobody else is offered it: the auditor sees no withdraw button for author2's decision.
    auditor.goto(f"{live_server.url}/tasks/{task.pk}/review/")
    expect(auditor.locator("button:has-text('Withdraw my decision')")).to_have_count(0)
