"""One task through all six default review layers, six different people, one round of changes."""

import json
import re

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .conftest import login, workspace_ready

pytestmark = pytest.mark.django_db(transaction=True)


def as_user(browser, live_server, username):
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    page = context.new_page()
    page.set_default_timeout(15_000)
    login(page, live_server, username, f"{username}-demo")
    return page


def pass_checklist_and(page, outcome: str, summary: str = "") -> None:
    for radio in page.locator("input[type=radio][value=pass]").all():
        radio.check()
    if summary:
        page.fill("#summary", summary)
    page.click(f"button[name=outcome][value={outcome}]")
    expect(page.locator(".messages")).to_be_visible()


def take_next(page, live_server, layer_name: str) -> None:
    page.goto(f"{live_server.url}/review/")
    row = page.locator("tr", has_text=layer_name)
    row.locator("button", has_text="Take next").click()
    expect(page.locator(".layer-steps .current")).to_contain_text(layer_name)


@pytest.fixture
def eager_jobs():
    """Validation jobs run in the web process, right after the commit that queues them."""
    from hilbench_annotate.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_task_goes_through_six_layers_with_a_round_of_changes(
    browser, live_server, demo, eager_jobs, tmp_path
):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")

    # The author submits the demo's blocked task, then does the self-check (layer 1).
    author = as_user(browser, live_server, "author")
    author.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    author.once("dialog", lambda d: d.accept())
    author.click("#submit-btn")
    author.wait_for_url(re.compile(rf".*/tasks/{task.pk}/$"))
    author.goto(f"{live_server.url}/review/")
    author.click("text=Your self-checks >> xpath=.. >> a")
    expect(author.locator(".layer-steps .current")).to_contain_text("Author self-check")
    pass_checklist_and(author, "approve")

    # Layer 2: another domain expert.
    author2 = as_user(browser, live_server, "author2")
    take_next(author2, live_server, "Peer review")
    pass_checklist_and(author2, "approve")

    # Layer 3: the registry audit asks for a change, with a comment on one blocker.
    auditor = as_user(browser, live_server, "auditor")
    take_next(auditor, live_server, "Registry audit")
    for radio in auditor.locator("input[type=radio][value=pass]").all():
        radio.check()
    auditor.locator("input[type=radio][value=fail]").nth(1).check()
    auditor.fill(
        "textarea[name=blocker-comment-review_year_dates]",
        "Add a question that names the calendar.",
    )
    auditor.fill("#summary", "One more trigger question for the review year.")
    auditor.click("button[name=outcome][value=request_changes]")
    task.refresh_from_db()
    assert task.status == "changes_requested" and task.review_layer == 3

    # The author is notified, sees the comment pinned next to the blocker, edits, resubmits.
    author.goto(f"{live_server.url}/")
    expect(author.locator(".badge-count")).to_have_text("1")
    author.goto(f"{live_server.url}/notifications/")
    author.click("text=asked for changes")
    expect(author.locator(".notice.returned")).to_contain_text("Registry audit asked for changes")
    workspace_ready(author)
    author.click("[data-tab=blockers]")
    blocker = author.locator("fieldset.blocker-edit", has_text="review_year_dates")
    expect(blocker.locator(".pinned")).to_contain_text("names the calendar")
    blocker.locator(".q-add").click()
    blocker.locator("input[name$='-q']").last.fill("In which calendar is the review year counted?")
    author.keyboard.press("Control+s")
    expect(author.locator("#save-status")).to_contain_text("Saved · revision")
    author.once("dialog", lambda d: d.accept())
    author.click("#submit-btn")
    author.wait_for_url(re.compile(rf".*/tasks/{task.pk}/$"))
    task.refresh_from_db()
    assert task.status == "in_review" and task.review_layer == 3

    # Back at layer 3, the auditor sees what changed since the revision they judged.
    take_next(auditor, live_server, "Registry audit")
    expect(auditor.locator(".notice-card")).to_contain_text("Changed since revision")
    expect(auditor.locator(".notice-card ins").first).to_contain_text("calendar")
    pass_checklist_and(auditor, "approve")

    for username, layer in (
        ("auditor2", "Environment audit"),
        ("reviewer", "Judge-validation labelling"),
    ):
        page = as_user(browser, live_server, username)
        take_next(page, live_server, layer)
        pass_checklist_and(page, "approve")

    # Final sign-off is gated on the structural checks of the current revision: the lead
    # runs them from the task page (the job runs in-process here: no worker in this test).
    page = as_user(browser, live_server, "lead")
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    page.click("text=Run structural checks")
    expect(page.locator("#validation-run .status").first).to_have_text("Passed", timeout=30_000)
    # …and on the judge's recall on the task's labelled held-out questions, recorded when
    # anyone measures it on the Judge validation page.
    page.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    page.click("button:has-text('Measure the judge')")
    expect(page.locator("#measured")).to_contain_text("passes")
    expect(page.locator("text=Recorded as validation run")).to_be_visible()
    # …and on the pass-rate selection: the lead imports two models' results for the task
    # (solved with full information, never without) on the Evaluation page — the gate asks
    # for two distinct models.
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"task": task.pk, "mode": mode, "pass": i, "resolved": mode == "full_info"})
            + "\n"
            for mode in ("baseline", "full_info")
            for i in (1, 2, 3)
        )
    )
    for model in ("model-under-test", "second-model-under-test"):
        page.goto(f"{live_server.url}/projects/{task.project_id}/evaluation/")
        page.set_input_files("#h-import ~ form input[type=file]", str(results))
        page.fill("#h-import ~ form input[name=model]", model)
        page.click("button:has-text('Import results')")
        expect(page.locator("#run-status .status")).to_have_text("Succeeded", timeout=30_000)
    take_next(page, live_server, "Final sign-off")
    expect(page.locator("aside")).to_contain_text("structural")
    expect(page.locator("aside")).to_contain_text("pass_rate")
    expect(page.locator("aside")).to_contain_text("judge_recall")
    pass_checklist_and(page, "approve")

    task.refresh_from_db()
    assert task.status == "approved"
    people = set(task.decisions.values_list("reviewer__username", flat=True))
    assert people == {"author", "author2", "auditor", "auditor2", "reviewer", "lead"}

    # The lead reads the whole story on the timeline.
    page.goto(f"{live_server.url}/tasks/{task.pk}/timeline/")
    timeline = page.locator(".timeline")
    for text in (
        "Request changes at layer 3 (Registry audit)",
        "Approve at layer 6 (Final sign-off)",
        "names the calendar",
        "submitted it for review: changes requested at layer 3 (Registry audit) → in review "
        "at layer 3 (Registry audit)",
    ):
        expect(timeline).to_contain_text(text)
    assert timeline.locator(".tl-decision").count() == 7
