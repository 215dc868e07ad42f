"""Judge validation in the browser: a reviewer adds a question and labels a batch with the
keyboard, without the page reloading; progress per blocker follows."""

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task
from judge.models import QuestionLabel
from judge.validation import question_add

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True)

UNLABELLED = [
    "Which contracts count as the problem ones?",
    "Which transaction code is used for paying the servicing fee?",
    "What is the weather like today?",
]


def test_a_reviewer_labels_with_the_keyboard_without_a_reload(browser, live_server, demo):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    questions = [question_add(task=task, actor=task.author, text=t) for t in UNLABELLED]
    keys = list(task.blockers.order_by("position").values_list("key", flat=True))

    context = browser.new_context(viewport={"width": 1400, "height": 950})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server, "reviewer", "reviewer-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    expect(page.locator("#label-progress")).to_contain_text("3 await your label")

    # A question added with htmx appears at the end of the table.
    page.fill("#new-question", "Which year does the review cover in this data?")
    page.click("#add-question button[type=submit]")
    expect(page.locator("#add-question")).to_contain_text("Added: “Which year does the review")
    expect(page.locator("#held-out-rows tr", has_text="review cover")).to_have_count(1)

    # The reviewer's own question is not theirs to label: two people other than its writer
    # settle it (the floor's rule), so three rows still await the reviewer.
    awaiting = page.locator("tr[data-to-label]")
    expect(awaiting).to_have_count(3)
    expect(page.locator("tr[data-to-label]", has_text="review cover")).to_have_count(0)
    # Keyboard: 1 (first blocker) for the first awaiting row, then 2, then 0 (none).
    awaiting.first.focus()
    for done, key in enumerate(("1", "2", "0"), start=1):
        page.keyboard.press(key)
        expect(awaiting).to_have_count(3 - done)  # the next one then takes the focus
        if done < 3:
            expect(page.locator("tr[data-to-label]:focus")).to_have_count(1)
    expect(page.locator("#label-notice")).to_contain_text("Labelled")
    expect(page.locator("#label-progress")).not_to_contain_text("await")
    assert page.evaluate("window.__sameDocument") is True

    mine = dict(
        QuestionLabel.objects.filter(
            labeller__username="reviewer", question__in=questions
        ).values_list("question_id", "blocker_key")
    )
    assert mine == {questions[0].pk: keys[0], questions[1].pk: keys[1], questions[2].pk: None}
    # The progress card was swapped in place: the new labels are single, not settled yet.
    expect(page.locator("#label-progress")).to_contain_text("still need")
    page.screenshot(path=str(screenshot_path()), full_page=True)
    context.close()
    assert not errors, errors


def screenshot_path():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "var" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "judge-labelling.png"


def test_measure_the_judge_shows_it_is_working_from_the_click(browser, live_server, demo):
    """The measurement can take seconds on a busy machine: from the click, the button is
    disabled and a progress indicator says what is happening, until the results replace it."""
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    page = context.new_page()
    page.set_default_timeout(15_000)
    login(page, live_server, "lead", "lead-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    page.evaluate("window.__sameDocument = true")
    indicator = page.locator("#measuring")
    button = page.locator("#measure button", has_text="Measure the judge")
    expect(indicator).to_be_hidden()

    # Hold the request in the browser, as a slow server would, to see the page meanwhile.
    held = []
    page.route("**/judge/measure/", lambda route: held.append(route))
    button.click()
    expect(indicator).to_be_visible()
    expect(indicator).to_contain_text("Measuring")
    expect(button).to_be_disabled()
    assert len(held) == 1
    held[0].continue_()

    expect(page.locator("#measured")).to_contain_text("passes")
    expect(page.locator("text=Recorded as validation run")).to_be_visible()
    expect(indicator).to_be_hidden()
    expect(button).to_be_enabled()
    assert page.evaluate("window.__sameDocument") is True
    context.close()


def test_fifty_questions_added_as_fast_as_the_page_takes_them_are_all_kept(page, live_server, demo):
    """Issue 30, item 1: questions added 0.3 s apart used to vanish (five of eleven) while
    "Question added" showed, and the header said 0. Now each is queued as it is submitted and
    sent in turn: fifty typed back to back are all kept — or, here, the one that is too short
    is refused saying which and why — and the header counts them."""
    from judge.models import ValidationQuestion

    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    before = ValidationQuestion.objects.filter(task=task).count()
    login(page, live_server, "reviewer", "reviewer-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    texts = [f"Question number {n} about which accounts and loans count here?" for n in range(49)]
    texts.insert(20, "short?")  # under the minimum: refused, with a message
    box = page.locator("#new-question")
    for text in texts:
        box.fill(text)
        # The browser's own minlength check would stop the short one before the app sees it.
        page.evaluate("document.querySelector('#new-question').removeAttribute('minlength')")
        page.click("#add-question button[type=submit]")
    expect(page.locator("#add-question")).to_have_attribute("data-pending", "0", timeout=60_000)
    expect(page.locator("#held-out-rows tr")).to_have_count(before + 49, timeout=60_000)
    expect(page.locator("#held-out-count")).to_have_text(str(before + 49))
    expect(page.locator("#held-out-empty")).to_be_hidden()
    stored = set(ValidationQuestion.objects.filter(task=task).values_list("text", flat=True))
    assert {t for t in texts if t != "short?"} <= stored and "short?" not in stored
    page.reload()
    expect(page.locator("#held-out-rows tr")).to_have_count(before + 49)
