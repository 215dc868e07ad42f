"""Issue 30, items 9 and 10 (with item 8's conflict notice): History that reads, and a review
page that shows what was removed and what the layer said last time."""

import os
import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Revision, Task

from .conftest import new_page

pytestmark = pytest.mark.django_db(transaction=True)

# The docs' screenshots are refreshed only when asked (HILBENCH_SCREENSHOTS=1).
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("HILBENCH_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "hilbench-screenshots"
)
SAVED = re.compile(r"Saved · revision (\d+)")


def saved_revision(page) -> int:
    """Wait for the save status to say a revision was saved; its number."""
    status = page.locator("#save-status")
    expect(status).to_contain_text(SAVED, timeout=20_000)
    return int(SAVED.search(status.inner_text()).group(1))


def autosave(page, locator, text: str) -> int:
    """Type into a field, pause as a person would, and wait for the autosave."""
    locator.fill(text)
    expect(page.locator("#save-status")).to_contain_text("Unsaved changes")
    return saved_revision(page)


def blocker(page, key: str):
    return page.locator("fieldset.blocker-edit", has=page.locator("code.blocker-key", has_text=key))


def latest(task) -> Revision:
    return Revision.objects.filter(task=task).order_by("-number").first()


def test_autosaves_of_one_session_fold_into_one_revision_that_says_what_changed(
    browser, live_server, demo
):
    """Item 9: nine autosaves in five minutes were nine revisions, each "saved in workspace".
    The autosaves of one editing session fold into one revision whose summary names what
    changed; a Save (Ctrl+S) ends the session; another person's save starts a new revision;
    and every save still moves the version, so an older tab is refused — and told it was you
    (item 8), not "someone else"."""
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    before = latest(task).number
    url = f"{live_server.url}/tasks/{task.pk}/edit/"
    page = new_page(browser, live_server, "author")
    page.goto(url)
    other_tab = page.context.new_page()  # the same person, a second tab on the same version
    other_tab.goto(url)

    question = page.locator("#spec-question")
    first = autosave(page, question, "Among the troubled clients, who paid the most?")
    assert first == before + 1
    assert autosave(page, question, "Among the troubled clients, who paid most in fees?") == first
    page.click("[data-tab=blockers]")
    resolution = blocker(page, "review_year_dates").locator("textarea[name$='-resolution']")
    assert autosave(page, resolution, "The review year is the calendar year 1998.") == first
    page.locator("fieldset.blocker-edit").first.locator(".q-add").click()
    new_question = page.locator("fieldset.blocker-edit").first.locator("input[name$='-q']").last
    assert autosave(page, new_question, "Which loan statuses count as troubled?") == first

    assert Revision.objects.filter(task=task, number__gt=before).count() == 1
    revision = latest(task)
    assert revision.saves == 4
    for words in ("question", "review_year_dates", "resolution", "trigger question"):
        assert words in revision.summary, revision.summary

    # History shows the summary, not the bare reason.
    history = page.context.new_page()
    history.goto(f"{url}revisions/")
    row = history.locator("aside tr", has=history.locator("td", has_text=str(first)))
    expect(row.first).to_contain_text("Edited the question")
    expect(row.first).to_contain_text("review_year_dates")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    history.screenshot(path=SCREENSHOTS / "revision-diff.png", full_page=True)

    # The second tab still holds the version it opened: refused, and told it was this user.
    other_tab.fill("#spec-question", "My wording from the other tab?")
    notice = other_tab.locator(".save-status.conflict")
    expect(notice).to_be_visible(timeout=20_000)
    expect(notice).to_contain_text(
        re.compile(r"You saved this task in another tab or window at \d\d:\d\d")
    )
    expect(notice).not_to_contain_text("someone else")
    other_tab.screenshot(path=SCREENSHOTS / "workspace-conflict-other-tab.png")

    # Ctrl+S saves and ends the session: the next autosave is a new revision.
    page.click("[data-tab=spec]")
    question.fill("Among the troubled clients, who paid the most in servicing fees?")
    question.press("Control+s")
    assert saved_revision(page) == first
    assert autosave(page, question, "Among the troubled clients, who paid most?") == first + 1

    # Another person's save: the author's next save is refused naming them, and the author's
    # own save over theirs is a revision of its own.
    lead = new_page(browser, live_server, "lead")
    lead.goto(url)
    assert autosave(lead, lead.locator("#spec-question"), "The lead's wording?") == first + 2
    question.fill("The author's wording after the lead?")
    notice = page.locator(".save-status.conflict")
    expect(notice).to_be_visible(timeout=20_000)
    expect(notice).to_contain_text(re.compile(r"lead saved this task at \d\d:\d\d"))
    notice.get_by_role("button", name="Save mine over theirs").click()
    assert saved_revision(page) == first + 3
    assert latest(task).author.username == "author"
    assert Revision.objects.filter(task=task, number__gt=before).count() == 4


def send_back_from_peer_review(task: Task) -> None:
    """The author submits and self-checks; the peer reviewer (author2) starts a thread on one
    blocker and asks for changes with a comment on another; the author edits and submits
    again, so the task is back at the peer review."""
    from django.contrib.auth import get_user_model

    from authoring.services import workspace_save
    from hilbench_annotate.services import task_snapshot
    from review.selectors import pipeline_layers
    from review.services import comment_add, review_decide, review_take_next, task_submit

    users = {
        u.username: u for u in get_user_model().objects.filter(username__in=["author", "author2"])
    }
    author, peer = users["author"], users["author2"]
    self_check, peer_review = pipeline_layers(project=task.project)[:2]

    def decide(actor, layer, outcome, **grounds):
        review_decide(
            actor=actor, task_id=task.pk, outcome=outcome,
            revision_number=latest(task).number,
            checklist=[{"item": item, "passed": True, "note": ""} for item in layer.checklist],
            **grounds,
        )  # fmt: skip

    task_submit(actor=author, task_id=task.pk, expected_version=task.version)
    decide(author, self_check, "approve")
    review_take_next(user=peer, layer=peer_review)
    comment_add(
        actor=peer, task_id=task.pk, blocker_key="review_year_dates",
        body="Could the review year name its calendar?",
    )  # fmt: skip
    decide(
        peer, peer_review, "request_changes", summary="Two blockers need sharper words.",
        blocker_comments={"troubled_loan_definition": "Say which status letters count."},
    )  # fmt: skip
    task.refresh_from_db()
    draft = task_snapshot(task)
    draft["blockers"][0]["resolution"] = "Troubled: loan status 'B' or 'D'."
    workspace_save(task=task, actor=author, expected_version=task.version, draft=draft)
    task.refresh_from_db()
    task_submit(actor=author, task_id=task.pk, expected_version=task.version)
    review_take_next(user=peer, layer=peer_review)


def test_review_page_shows_what_was_removed_and_the_layers_earlier_comments(
    browser, live_server, demo
):
    """Item 10: the review page showed only the blocked specification, and a task back at the
    layer that asked for changes did not show that layer's comments again. The original
    stands against the blocked text (a word diff), and the previous round's blocker comment
    and thread are shown next to their blockers, marked as such."""
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    send_back_from_peer_review(task)
    page = new_page(browser, live_server, "author2")
    page.goto(f"{live_server.url}/tasks/{task.pk}/review/")

    spec = page.locator("#specification")
    expect(spec).to_contain_text("original → blocked")
    # The original question's words the blocked one removed, struck through, and the words
    # the blocked one put in their place.
    removed = spec.locator(".word-diff del")
    expect(removed.first).to_be_visible()
    assert "running" in " ".join(removed.all_inner_texts())
    assert "troubled" in " ".join(spec.locator(".word-diff ins").all_inner_texts())

    earlier = page.locator(
        "article.blocker", has=page.locator(".key", has_text="troubled_loan_definition")
    )
    note = earlier.locator(".previous-round")
    expect(note).to_contain_text("Previous round")
    expect(note).to_contain_text("Say which status letters count.")
    expect(note).to_contain_text("author2")
    thread = page.locator("article.blocker", has=page.locator(".key", has_text="review_year_dates"))
    expect(thread.locator(".previous-round")).to_contain_text(
        "Could the review year name its calendar?"
    )
    # A blocker nobody commented on has no previous-round note.
    quiet = page.locator(
        "article.blocker", has=page.locator(".key", has_text="loan_servicing_payment_code")
    )
    expect(quiet.locator(".previous-round")).to_have_count(0)

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "review-task.png", full_page=True)
