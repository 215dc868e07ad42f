"""Issue 30, item 9 (with item 8's conflict notice): History that reads."""

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

