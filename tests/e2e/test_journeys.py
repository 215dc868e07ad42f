"""The journeys the other browser tests leave out: the lead's, and the evaluation harness's.

test_authoring.py has the author's (find, edit, plant, console, save, submit), test_review.py a
task through all six layers (take next, comments, request changes, approve, green sign-off),
test_evaluation.py the evaluation page, runs, trajectories and failure labels.
"""

import io
import json
import re
import urllib.error
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .conftest import new_page

pytestmark = pytest.mark.django_db(transaction=True)


def decide(task: Task, username: str, outcome: str = "approve") -> None:
    """``username`` decides at the task's current layer, as the review page would."""
    from review import services

    task.refresh_from_db()
    user = get_user_model().objects.get(username=username)
    lead = get_user_model().objects.get(username="lead")
    layer = services.pipeline_ensure(task.project)[task.review_layer - 1]
    with transaction.atomic():
        if not layer.self_check:
            services.review_assign(actor=lead, task_id=task.pk, reviewer=user.username)
        services.review_decide(
            actor=user,
            task_id=task.pk,
            outcome=outcome,
            revision_number=task.revisions.order_by("-number").first().number,
            checklist=[{"item": item, "passed": True, "note": ""} for item in layer.checklist],
        )


def test_lead_edits_pipeline_assigns_and_sees_why_sign_off_waits(browser, live_server, demo):
    from review.services import task_submit

    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    task_submit(actor=task.author, task_id=task.pk, expected_version=task.version)
    decide(task, "author")  # the self-check
    extra_item = "Trigger questions read like a real user's questions"

    # The lead adds a checklist item to the peer review layer.
    lead = new_page(browser, live_server, "lead")
    lead.click("nav >> text=Review")
    lead.click("text=Pipeline · Demo benchmark")
    expect(lead.locator("h1")).to_contain_text("Review pipeline")
    checklist = lead.locator("textarea[name=layer-1-checklist]")
    checklist.fill(checklist.input_value() + "\n" + extra_item)
    lead.click("button:text-is('Save pipeline')")
    expect(lead.locator(".messages")).to_be_visible()
    expect(lead.locator("textarea[name=layer-1-checklist]")).to_have_value(re.compile(extra_item))

    # …and assigns the task, waiting at peer review, to author2 by hand.
    lead.goto(f"{live_server.url}/tasks/{task.pk}/review/")
    expect(lead.locator(".layer-steps .current")).to_contain_text("Peer review")
    lead.select_option("#assign-reviewer", "author2")
    lead.click("button:text-is('Assign')")
    expect(lead.locator(".messages")).to_contain_text("Assigned to author2")

    # author2 finds it in their hands (and in the bell), starts a thread on a blocker, and
    # approves with the new checklist item answered.
    peer = new_page(browser, live_server, "author2")
    expect(peer.locator(".badge-count")).to_have_text("1")
    peer.click("nav >> text=Review")
    peer.locator("section", has_text="In your hands").locator("td a").first.click()
    expect(peer.locator("table.checklist")).to_contain_text(extra_item)
    peer.fill("#new-thread-body", "Could the review year be named by its calendar?")
    peer.select_option("#new-thread-blocker", "review_year_dates")
    peer.click("button:text-is('Comment')")
    thread = peer.locator("#threads article.thread")
    expect(thread).to_contain_text("on blocker review_year_dates")
    for radio in peer.locator("input[type=radio][value=pass]").all():
        radio.check()
    peer.click("button[name=outcome][value=approve]")
    expect(peer.locator(".messages")).to_contain_text("Approved")
    peer.context.close()

    # Registry audit, environment audit and labelling approve (as in test_review.py).
    for username in ("auditor", "auditor2", "reviewer"):
        decide(task, username)

    # Final sign-off: the lead takes it, but the gates are red and say why; approving is
    # refused with the same reasons, and the task stays where it is.
    lead.goto(f"{live_server.url}/review/")
    lead.locator("tr", has_text="Final sign-off").locator("button", has_text="Take next").click()
    expect(lead.locator(".layer-steps .current")).to_contain_text("Final sign-off")
    gates = lead.locator("aside section", has_text="Gates")
    structural = gates.locator("p", has_text="structural")
    expect(structural.locator(".badge")).to_have_text("red")
    expect(structural).to_contain_text("no finished validation run")
    expect(gates).to_contain_text("pass_rate")
    for radio in lead.locator("input[type=radio][value=pass]").all():
        radio.check()
    lead.click("button[name=outcome][value=approve]")
    expect(lead.locator(".messages")).to_contain_text("Gates are not green: structural")
    task.refresh_from_db()
    assert task.status == "in_review" and task.review_layer == 6

    # The dashboard counts the task at its layer; the thread shows on the timeline.
    lead.goto(f"{live_server.url}/review/")
    lead.click("text=Dashboard · Demo benchmark")
    expect(lead.locator("h1")).to_have_text("Lead dashboard")
    expect(lead.locator("#h-states")).to_be_visible()
    assert lead.locator("svg").count() >= 3
    lead.goto(f"{live_server.url}/tasks/{task.pk}/timeline/")
    expect(lead.locator(".timeline")).to_contain_text("calendar")
    lead.context.close()


def api(live_server, path: str, token: str, body: dict) -> tuple[int, dict]:
    """POST JSON to the live server as a harness script would (plain HTTP, bearer token)."""
    request = urllib.request.Request(  # noqa: S310 (the live server's http:// URL)
        f"{live_server.url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_harness_makes_a_token_and_asks_human_over_http(page, live_server, demo):
    from judge.models import AskHumanCall

    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    blocker = task.blockers.get(key="troubled_loan_definition")

    # A machine user has no way in through the login form, even with a password set.
    harness = get_user_model().objects.get(username="harness")
    harness.set_password("harness-demo")
    harness.save()
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "harness")
    page.fill("#id_password", "harness-demo")
    page.click("button[type=submit]")
    expect(page.locator("form")).to_contain_text("enter a correct username and password")
    # Its token comes from the command line, as the README says.
    out = io.StringIO()
    call_command("create_api_token", "harness", "--name", "e2e harness", stdout=out)
    token = out.getvalue().strip()

    status, run = api(live_server, "/api/ask_human/runs", token, {"task": task.pk})
    assert status == 201, run
    ask = {"run": run["run"]}
    status, answer = api(
        live_server,
        "/api/ask_human",
        token,
        {**ask, "question": "Which loan status values count as a troubled loan?"},
    )
    assert (status, answer) == (200, {"response": blocker.resolution})
    status, answer = api(
        live_server, "/api/ask_human", token, {**ask, "question": "What is the weather today?"}
    )
    assert (status, answer) == (200, {"response": "irrelevant question"})
    assert api(live_server, "/api/ask_human", "not-a-token", {**ask, "question": "x?"})[0] in (
        401,
        403,
    )
    calls = AskHumanCall.objects.filter(run_id=run["run"]).order_by("pk")
    assert [c.blocker_key for c in calls] == [blocker.key, None]

    # The token records when it was last used.
    assert harness.api_tokens.get(name="e2e harness").last_used_at is not None
