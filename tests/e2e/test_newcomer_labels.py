"""Issue 30, item 3: a judge label can be corrected and withdrawn by its labeller.

One wrong key in the fast j/k + 1–9 flow used to be final: the buttons went away, and a
wrong blocker became a dispute a third person had to settle. Now, while a question is not
settled, the labeller's own row keeps its keys: 1–9 / 0 change the label, Backspace (or the
Withdraw button) takes it back. Also (item 8) the page's breadcrumb names the page the user is
on, "Judge validation", not "Judge report".
"""

import os
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task, TaskEvent
from judge.labels import gold_label, label_add
from judge.models import QuestionLabel
from judge.validation import question_add

from .axe import axe_violations, describe
from .conftest import login, new_page

pytestmark = pytest.mark.django_db(transaction=True)

# The docs' screenshot is refreshed only when asked (HILBENCH_SCREENSHOTS=1), as in
# test_evaluation.py: a test run does not rewrite files of the repository.
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("HILBENCH_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "hilbench-screenshots"
)


def _mine(question):
    return QuestionLabel.objects.filter(question=question, labeller__username="reviewer")


def test_a_wrong_key_is_corrected_and_a_label_withdrawn_with_the_keyboard(
    browser, page, live_server, demo
):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    keys = list(task.blockers.order_by("position").values_list("key", flat=True))
    author2 = task.project.memberships.get(user__username="author2").user
    auditor = task.project.memberships.get(user__username="auditor").user
    wrong = question_add(task=task, actor=author2, text="Which contracts are the problem ones?")
    other = question_add(task=task, actor=author2, text="Is the weather relevant to this data?")
    # The auditor already gave the question its right blocker.
    label_add(question=wrong, labeller=auditor, blocker_key=keys[0])

    login(page, live_server, "reviewer", "reviewer-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    # Item 8: the breadcrumb ends in the page the user is on.
    crumbs = page.locator("nav.crumbs")
    expect(crumbs.locator("[aria-current=page]")).to_have_text("Judge validation")
    expect(crumbs).not_to_contain_text("Judge report")
    expect(page.locator("#h-held ~ p", has_text="Keyboard")).to_contain_text("Backspace")

    # One wrong key: 2 instead of 1. The two labels now disagree.
    row = page.locator(f"#q-{wrong.pk}")
    row.focus()
    page.keyboard.press("2")
    expect(page.locator("#label-notice")).to_contain_text("Labelled")
    expect(row.locator(".status")).to_have_text("disputed")
    assert _mine(wrong).get().blocker_key == keys[1]

    # The focus went on to the next question; k comes back, 1 corrects the label.
    expect(page.locator(f"#q-{other.pk}")).to_be_focused()
    page.keyboard.press("k")
    expect(row).to_be_focused()
    expect(row.locator("button[aria-pressed=true]")).to_contain_text(keys[1])
    page.keyboard.press("1")
    expect(page.locator("#label-notice")).to_contain_text("is now")
    expect(row.locator(".status")).to_have_text("agreed")
    assert _mine(wrong).get().blocker_key == keys[0]
    wrong.refresh_from_db()
    assert gold_label(wrong) == ("agreed", keys[0])  # the dispute it caused is gone
    change = TaskEvent.objects.get(task=task, kind="judge_label_changed")
    assert change.data == {"question": wrong.pk, "before": keys[1], "after": keys[0]}
    # Settled: the label is final, the row no longer offers to change it.
    expect(row.locator("form")).to_have_count(0)

    # Withdraw with the button: the question awaits the reviewer's label again.
    other_row = page.locator(f"#q-{other.pk}")
    other_row.focus()
    page.keyboard.press("0")
    expect(other_row.locator(".status")).to_have_text("single")
    assert _mine(other).get().blocker_key is None
    other_row.get_by_role("button", name="Withdraw").click()
    expect(page.locator("#label-notice")).to_contain_text("Withdrew your label")
    expect(other_row).to_have_attribute("data-to-label", "")
    expect(other_row.locator(".status")).to_have_text("unlabelled")
    assert not _mine(other).exists()

    # And with the key: label it again, then Backspace on its row.
    other_row.focus()
    page.keyboard.press("3")
    expect(other_row.locator("button[aria-pressed=true]")).to_contain_text(keys[2])
    other_row.focus()
    page.keyboard.press("Backspace")
    expect(page.locator("#label-notice")).to_contain_text("Withdrew your label")
    expect(other_row.locator(".status")).to_have_text("unlabelled")
    assert not _mine(other).exists()
    assert TaskEvent.objects.filter(task=task, kind="judge_label_withdrawn").count() == 2
    assert page.evaluate("window.__sameDocument") is True

    # For the docs: a labelled question with its change and withdraw controls.
    other_row.focus()
    page.keyboard.press("0")
    expect(other_row.get_by_role("button", name="Withdraw")).to_be_visible()
    page.locator(f"#q-{wrong.pk}").scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "judge-validation.png"), full_page=True)

    # The change and withdraw controls pass axe (a page of its own: axe is injected past the
    # Content-Security-Policy).
    audited = new_page(browser, live_server, "reviewer", bypass_csp=True)
    audited.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    expect(audited.locator(f"#q-{other.pk} form")).to_have_count(2)
    violations = axe_violations(audited)
    audited.context.close()
    assert not violations, describe(violations)

    # The project's judge report, one click away, names itself in its breadcrumb too.
    page.get_by_role("link", name="Project judge report").click()
    expect(page.locator("h1")).to_have_text("Judge report")
    expect(page.locator("nav.crumbs [aria-current=page]")).to_have_text("Judge report")
