"""A refused form loses nothing, and a refusal looks like one: red, not the success green."""

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .axe import axe_violations, describe
from .conftest import new_page

pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY = "Blockers read as real gaps; the loan status one needs a sharper question."
COMMENT = "Ask which status codes count as troubled, not whether any do."


def at_peer_review() -> Task:
    """The demo's blocked task, through its author's self-check, waiting at Peer review."""
    from review import services

    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    task = services.task_submit(actor=task.author, task_id=task.pk, expected_version=task.version)
    layer = services.pipeline_ensure(task.project)[0]
    services.review_decide(
        actor=task.author,
        task_id=task.pk,
        outcome="approve",
        revision_number=task.revisions.order_by("-number").first().number,
        checklist=[{"item": item, "passed": True} for item in layer.checklist],
    )
    task.refresh_from_db()
    assert task.review_layer == 2
    return task


def take_peer_review(browser, live_server, task: Task, **options):
    page = new_page(browser, live_server, "author2", **options)
    page.goto(f"{live_server.url}/review/")
    page.locator("tr", has_text="Peer review").locator("button", has_text="Take next").click()
    page.wait_for_url(f"{live_server.url}/tasks/{task.pk}/review/")
    return page


def test_a_refused_decision_keeps_summary_comments_and_ticks(browser, live_server, demo):
    task = at_peer_review()
    key = task.blockers.order_by("position").first().key
    page = take_peer_review(browser, live_server, task)

    page.fill("#summary", SUMMARY)
    page.fill(f"textarea[name=blocker-comment-{key}]", COMMENT)
    page.check("input[name=check-0][value=pass]")
    page.fill("input[name=check-0-note]", "checked against the loan table")
    page.click("button[name=outcome][value=approve]")

    error = page.locator(".messages li.error")
    expect(error).to_contain_text("Answer every checklist item before approving")
    # The missing items in words, not a Python list.
    expect(error).to_contain_text("not answered: “Without each resolution the task fails")
    expect(error).not_to_contain_text("['")
    # Everything typed is still in the form.
    expect(page.locator("#summary")).to_have_value(SUMMARY)
    expect(page.locator(f"textarea[name=blocker-comment-{key}]")).to_have_value(COMMENT)
    expect(page.locator("input[name=check-0][value=pass]")).to_be_checked()
    expect(page.locator("input[name=check-0-note]")).to_have_value("checked against the loan table")
    expect(page.locator("input[name=check-1][value=pass]")).not_to_be_checked()

    # Ticking the rest is all that is left to do; the summary and comment are recorded.
    for radio in page.locator("input[type=radio][value=pass]").all():
        radio.check()
    page.click("button[name=outcome][value=approve]")
    expect(page.locator(".messages li.success")).to_have_text("Approved.")
    decision = task.decisions.get(layer=2)
    assert decision.summary == SUMMARY and decision.blocker_comments == {key: COMMENT}
    assert decision.checklist[0]["note"] == "checked against the loan table"


def background(page, selector: str) -> str:
    return page.locator(selector).evaluate("el => getComputedStyle(el).backgroundColor")


def test_an_error_message_does_not_look_like_a_success(browser, live_server, demo):
    task = at_peer_review()
    page = take_peer_review(browser, live_server, task, bypass_csp=True)
    page.click("button[name=outcome][value=approve]")  # nothing ticked: refused
    expect(page.locator(".messages li.error")).to_be_visible()
    error_bg = background(page, ".messages li.error")
    error_ink = page.locator(".messages li.error").evaluate("el => getComputedStyle(el).color")
    violations = axe_violations(page, include=".messages")
    assert not violations, describe(violations)

    for radio in page.locator("input[type=radio][value=pass]").all():
        radio.check()
    page.click("button[name=outcome][value=approve]")
    expect(page.locator(".messages li.success")).to_be_visible()
    success_bg = background(page, ".messages li.success")
    success_ink = page.locator(".messages li.success").evaluate("el => getComputedStyle(el).color")
    assert error_bg != success_bg and error_ink != success_ink
    violations = axe_violations(page, include=".messages")
    assert not violations, describe(violations)

    # The two other levels the app uses get colours of their own, as readable.
    page.evaluate(
        """() => {
            const list = document.querySelector(".messages");
            for (const level of ["info", "warning"]) {
                const li = document.createElement("li");
                li.className = level;
                li.textContent = "A " + level + " message, for the colours.";
                list.appendChild(li);
            }
        }"""
    )
    colours = {level: background(page, f".messages li.{level}") for level in ("info", "warning")}
    assert len({error_bg, success_bg, *colours.values()}) == 4, colours
    violations = axe_violations(page, include=".messages")
    assert not violations, describe(violations)
