"""The review screens obey the same rules as the services: independence, roles, locks."""

import html
import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from hilbench_annotate.models import Task, TaskEvent
from review import selectors, services
from review.models import ReviewAssignment, ReviewDecision

from ..factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(project):
    """Six people for six layers, plus extra ones per role."""
    people = {}
    for name, role in (
        ("author", "author"),
        ("peer", "author"),
        ("auditor", "auditor"),
        ("auditor2", "auditor"),
        ("labeller", "reviewer"),
        ("lead", "lead"),
    ):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role=role)
        people[name] = user
    # The author and the peer also hold every other role, so only independence stops them.
    for name in ("author", "peer"):
        for role in ("reviewer", "auditor", "lead"):
            MembershipFactory(project=project, user=people[name], role=role)
    return people


@pytest.fixture
def task_at_layer_2(project, staff, demo_data):
    from exchange.importers import import_bird
    from exchange.management.commands.seed_demo import DEMO_BLOCKERS
    from hilbench_annotate import services as core

    import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=demo_data["sql"]["databases"],
        actor=staff["author"],
        limit=1,
    )
    task = Task.objects.get(project=project)
    for blocker in DEMO_BLOCKERS:
        core.blocker_create(
            task=task, actor=staff["author"], expected_version=task.version, **blocker
        )
    # As the demo does: the code's meaning leaves the description CSV (else lint flags a leak).
    descriptions = dict(task.sql_environment.descriptions)
    descriptions["transaction_log"] = descriptions["transaction_log"].replace(
        "LN: loan payment; ", ""
    )
    from hilbench_annotate.toolkit.compare import golden_output_csv
    from hilbench_annotate.toolkit.sqlconsole import run_select

    gold = run_select(task.sql_environment.database.path, task.sql_environment.gold_sql)
    core.task_touch_environment(
        task=task,
        actor=staff["author"],
        expected_version=task.version,
        changes={
            "descriptions": descriptions,
            "golden_output": golden_output_csv(gold.columns, gold.rows),
        },
    )
    task = services.task_enter_review(task=task, actor=staff["author"])
    _approve(task, staff["author"])
    task.refresh_from_db()
    assert task.review_layer == 2
    return task


def _approve(task, user):
    layer = services.pipeline_ensure(task.project)[task.review_layer - 1]
    return services.review_decide(
        actor=user,
        task_id=task.pk,
        outcome="approve",
        revision_number=task.revisions.order_by("-number").first().number,
        checklist=[{"item": i, "passed": True} for i in layer.checklist],
    )


def _post_decision(client, task, outcome="approve"):
    layer = services.pipeline_ensure(task.project)[task.review_layer - 1]
    data = {"outcome": outcome, "revision": task.revisions.order_by("-number").first().number}
    data.update({f"check-{i}": "pass" for i in range(len(layer.checklist))})
    return client.post(reverse("review-task", args=[task.pk]), data)


def _messages(response):
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def test_author_and_layer_2_reviewer_are_refused_at_every_other_layer(
    client, task_at_layer_2, staff
):
    task = task_at_layer_2
    # The peer takes and approves layer 2 through the page.
    client.force_login(staff["peer"])
    layer2 = services.pipeline_ensure(task.project)[1]
    client.post(reverse("review-take-next", args=[layer2.pk]))
    assert _post_decision(client, task).status_code == 302
    task.refresh_from_db()
    assert task.review_layer == 3

    takers = {3: staff["auditor"], 4: staff["auditor2"], 5: staff["labeller"], 6: staff["lead"]}
    for position in (3, 4, 5, 6):
        layer = services.pipeline_ensure(task.project)[position - 1]
        for name in ("author", "peer"):
            client.force_login(staff[name])
            # Not offered in the queue…
            page = client.get(reverse("review-queue")).content.decode()
            assert f"{position}. {layer.name}" in page
            response = client.post(reverse("review-take-next", args=[layer.pk]))
            assert not ReviewAssignment.objects.filter(
                task=task, reviewer=staff[name], layer=position
            ).exists()
            # …cannot decide by posting the form (a 403 naming why)…
            response = _post_decision(client, task)
            assert response.status_code == 403
            reason = html.unescape(response.content.decode())
            assert (
                "each layer needs another person" in reason
                or "Nobody reviews a task they authored" in reason
            )
            # …and a lead cannot assign them.
            client.force_login(staff["lead"] if position != 6 else staff["auditor"])
        lead = staff["lead"] if position != 6 else None
        if lead:
            client.force_login(lead)
            for name in ("author", "peer"):
                response = client.post(reverse("review-assign", args=[task.pk]), {"reviewer": name})
                assert "cannot take this task" in _messages(response)
        task.refresh_from_db()
        assert task.review_layer == position
        if position == 5:  # the judge-validation layer is gated on settled questions
            from exchange.demo.blocked_task import DEMO_VALIDATION_QUESTIONS
            from tests.judge.util import settle_held_out

            settle_held_out(task, DEMO_VALIDATION_QUESTIONS)
        if position == 6:  # final sign-off: the structural checks and the judge's recall
            from tests.review.test_api import run_structural_checks

            run_structural_checks(task)
        # The layer's own person takes it and approves.
        client.force_login(takers[position])
        client.post(reverse("review-take-next", args=[layer.pk]))
        assert _post_decision(client, task).status_code == 302
        task.refresh_from_db()
    assert task.status == "approved"
    assert ReviewDecision.objects.filter(task=task).count() == 6


def test_reviewer_without_the_layer_role_cannot_take(client, task_at_layer_2, staff):
    client.force_login(staff["auditor"])  # layer 2 needs the author role
    layer2 = services.pipeline_ensure(task_at_layer_2.project)[1]
    response = client.post(reverse("review-take-next", args=[layer2.pk]))
    assert response.status_code == 403
    assert "needs the author role" in response.content.decode()
    assert not ReviewAssignment.objects.exists()


def test_deciding_without_taking_the_task_is_refused(client, task_at_layer_2, staff):
    client.force_login(staff["peer"])
    response = _post_decision(client, task_at_layer_2)
    assert "Take the task first" in _messages(response)
    task_at_layer_2.refresh_from_db()
    assert task_at_layer_2.review_layer == 2


def test_pipeline_page_is_editable_by_leads_only(client, project, staff):
    url = reverse("review-pipeline", args=[project.pk])
    client.force_login(staff["auditor"])
    assert client.get(url).status_code == 200
    assert (
        client.post(
            url,
            {
                "layer": ["0"],
                "layer-0-name": "Only",
                "layer-0-role": "lead",
                "reject_reasons": "x",
                "lock_minutes": "5",
            },
        ).status_code
        == 403
    )
    client.force_login(staff["lead"])
    response = client.post(
        url,
        {
            "layer": ["0", "1"],
            "layer-0-name": "Self-check",
            "layer-0-role": "author",
            "layer-0-self_check": "on",
            "layer-0-checklist": "Criteria attested",
            "layer-1-name": "Sign-off",
            "layer-1-role": "lead",
            "layer-1-checklist": "Ready\nIndependent",
            "layer-1-gates": "lint_clean",
            "reject_reasons": "Not realistic\nDuplicate",
            "lock_minutes": "15",
        },
    )
    assert response.status_code == 302
    layers = services.pipeline_ensure(project)
    assert [(layer.name, layer.role, layer.self_check) for layer in layers] == [
        ("Self-check", "author", True),
        ("Sign-off", "lead", False),
    ]
    assert layers[1].checklist == ["Ready", "Independent"] and layers[1].gates == ["lint_clean"]
    assert selectors.policy_for(project=project).lock_minutes == 15

    # The form shows what was saved, one item per line, so saving it again keeps it.
    page = client.get(url).content.decode()
    assert "{{" not in page
    assert 'name="layer-1-checklist" rows="4">Ready\nIndependent\n</textarea>' in page
    assert ">Not realistic\nDuplicate\n</textarea>" in page


def test_timeline_lists_everything_and_offers_no_edit(client, task_at_layer_2, staff):
    services.comment_add(actor=staff["peer"], task_id=task_at_layer_2.pk, body="Looks realistic.")
    client.force_login(staff["lead"])
    page = client.get(reverse("task-timeline", args=[task_at_layer_2.pk])).content.decode()
    assert "Approve</strong> at layer 1" in page
    assert "Looks realistic." in page
    assert "imported the task from BIRD" in page and ": revision 1" in page
    assert "<form" not in page.split("<main ")[1]


def _timeline(client, task) -> tuple[str, list[str]]:
    """The task's timeline as text (entities unescaped) and as its lines, tags removed."""
    page = client.get(reverse("task-timeline", args=[task.pk])).content.decode()
    timeline = html.unescape(page[page.index('<ol class="timeline">') : page.index("</ol>")])
    lines = [" ".join(re.sub(r"<[^>]*>", " ", li).split()) for li in timeline.split("<li")[1:]]
    return timeline, lines


def test_timeline_says_what_happened_in_words_not_event_codes(client, task_at_layer_2, staff):
    task = task_at_layer_2
    layer2 = services.pipeline_ensure(task.project)[1]
    client.force_login(staff["peer"])
    client.post(reverse("review-take-next", args=[layer2.pk]))
    services.comment_add(actor=staff["peer"], task_id=task.pk, body="Looks realistic.")
    client.force_login(staff["lead"])
    timeline, lines = _timeline(client, task)
    for said in (
        "imported the task from BIRD",
        "submitted it for review: draft → in review at layer 1 (Author self-check)",
        "approved it: in review at layer 1 (Author self-check) → in review at layer 2 "
        "(Peer review)",
        "peer took the task at layer 2 (Peer review)",
        "saved revision 5 — Edited the description CSVs",  # the golden output: at import
    ):
        assert any(said in line for line in lines), (said, lines)
    for code in (
        "status_changed",
        "review_taken",
        "workspace_saved",
        "comment_added",
        "in_review",
        "golden_output",
    ):
        assert code not in timeline
    # The comment is one line, not also an event restating it.
    assert sum("Looks realistic." in line for line in lines) == 1
    assert not any("comment added" in line for line in lines)
    # The task's making is its revision 1, one line: a task imported when an event restated
    # it (one is added here, as those imports wrote it) does not say it twice.
    TaskEvent.objects.create(
        project=task.project,
        task=task,
        actor=task.author,
        kind="imported",
        data={"source": task.source, "source_id": task.source_id},
    )
    timeline, lines = _timeline(client, task)
    made = [line for line in lines if "imported the task from BIRD" in line]
    assert len(made) == 1 and made[0].endswith(f"({task.source_id}): revision 1"), made


def test_a_refused_decision_shows_the_page_again_with_everything_typed(
    client, task_at_layer_2, staff
):
    """Approve with one item ticked: refused, and summary, comment, tick and note survive."""
    task = task_at_layer_2
    layer = services.pipeline_ensure(task.project)[1]
    client.force_login(staff["peer"])
    client.post(reverse("review-take-next", args=[layer.pk]))
    key = task.blockers.first().key
    response = client.post(
        reverse("review-task", args=[task.pk]),
        {
            "outcome": "approve",
            "revision": task.revisions.order_by("-number").first().number,
            "summary": "Realistic & critical <b>blockers</b>.",
            f"blocker-comment-{key}": "Name the calendar in one question.",
            "check-0": "pass",
            "check-0-note": "checked the log",
            "reject_reason": "Duplicate of another task",
        },
    )
    assert response.status_code == 400
    page = response.content.decode()
    # The refusal names the missing items in words, not as a Python list.
    missing = layer.checklist[1:]
    message = _messages(response)
    assert message == (
        "Answer every checklist item before approving; not answered: "
        f"“{missing[0]}” and “{missing[1]}”."
    )
    assert "['" not in page and message in page.replace("&ldquo;", "“").replace("&rdquo;", "”")
    assert '<li class="error">' in page
    # Everything typed is back in the form, escaped.
    assert ">Realistic &amp; critical &lt;b&gt;blockers&lt;/b&gt;.</textarea>" in page
    assert f'name="blocker-comment-{key}" rows="2">Name the calendar in one question.<' in page
    assert 'name="check-0" value="pass" checked' in page
    assert 'name="check-1" value="pass" checked' not in page
    assert 'value="checked the log"' in page
    assert "<option selected>Duplicate of another task</option>" in page
    # Nothing was decided, and the same form, completed, now goes through.
    assert not ReviewDecision.objects.filter(task=task, layer=2).exists()
    assert _post_decision(client, task).status_code == 302
    task.refresh_from_db()
    assert task.review_layer == 3


def test_a_decision_naming_no_revision_is_refused_not_a_crash(client, task_at_layer_2, staff):
    client.force_login(staff["peer"])
    client.post(
        reverse("review-take-next", args=[services.pipeline_ensure(task_at_layer_2.project)[1].pk])
    )
    response = client.post(
        reverse("review-task", args=[task_at_layer_2.pk]),
        {"outcome": "approve", "revision": "seven", "summary": "kept"},
    )
    assert response.status_code == 400
    # The API's words for the same body (DecisionIn), no longer a made-up "revision 0".
    assert _messages(response) == "Revision: A valid integer is required."
    assert ">kept</textarea>" in response.content.decode()


def test_a_refused_pipeline_edit_keeps_what_the_lead_typed(client, project, staff):
    url = reverse("review-pipeline", args=[project.pk])
    client.force_login(staff["lead"])
    before = [(layer.name, layer.checklist) for layer in services.pipeline_ensure(project)]
    response = client.post(
        url,
        {
            "layer": ["0", "1", "2"],
            "layer-0-name": "Self-check",
            "layer-0-role": "author",
            "layer-0-self_check": "on",
            "layer-0-checklist": "Criteria attested",
            "layer-1-name": "Old audit",
            "layer-1-role": "auditor",
            "layer-1-delete": "on",
            "layer-1-checklist": "Gone soon",
            "layer-2-name": "Sign-off",
            "layer-2-role": "lead",
            "layer-2-checklist": "Ready\nIndependent",
            "layer-2-gates": "lint_clean, no_such_check",
            "reject_reasons": "Not realistic\nDuplicate",
            "lock_minutes": "15",
        },
    )
    assert response.status_code == 400
    message = _messages(response)
    assert "unknown automated checks “no_such_check”; known: “" in message
    assert "['" not in message
    page = response.content.decode()
    assert 'name="layer-0-name" value="Self-check"' in page
    assert 'name="layer-0-self_check" checked' in page
    assert 'name="layer-1-delete" checked' in page
    assert 'name="layer-2-checklist" rows="4">Ready\nIndependent\n</textarea>' in page
    assert ">lint_clean\nno_such_check\n</textarea>" in page
    assert ">Not realistic\nDuplicate\n</textarea>" in page
    assert 'name="lock_minutes" value="15"' in page
    # Nothing was saved.
    assert [(layer.name, layer.checklist) for layer in services.pipeline_ensure(project)] == before


def test_a_lock_time_that_is_not_a_number_is_said_plainly(client, project, staff):
    client.force_login(staff["lead"])
    response = client.post(
        reverse("review-pipeline", args=[project.pk]),
        {"layer": ["0"], "layer-0-name": "Only", "layer-0-role": "lead", "lock_minutes": "soon"},
    )
    assert response.status_code == 400
    assert _messages(response) == "The lock time is a whole number of minutes."
    assert 'name="lock_minutes" value="soon"' in response.content.decode()


def test_a_notification_cuts_a_long_title_at_a_word_with_an_ellipsis(
    client, task_at_layer_2, staff
):
    from review.models import Notification

    task = task_at_layer_2
    title = "Among the clients whose loan contract is running but who are in debt, who paid most"
    Task.objects.filter(pk=task.pk).update(title=title)
    task.refresh_from_db()
    layer2 = services.pipeline_ensure(task.project)[1]
    services.review_take_next(user=staff["peer"], layer=layer2)
    services.review_decide(
        actor=staff["peer"],
        task_id=task.pk,
        outcome="request_changes",
        revision_number=task.revisions.order_by("-number").first().number,
        summary="Sharpen one question.",
    )
    text = Notification.objects.get(user=staff["author"], kind="changes_requested").text
    assert text == (
        "Peer review asked for changes on “Among the clients whose loan contract is running "
        "but who are in debt, who paid…”"
    )


def test_a_task_back_at_a_layer_shows_that_layers_earlier_comments_and_the_original(
    client, task_at_layer_2, staff
):
    """The review page shows the original specification against the blocked one, and — once
    the task is back at the layer that asked for changes — that layer's decision and its
    comments on each blocker, marked as the previous round; a first round shows none."""
    task = task_at_layer_2
    peer, author = staff["peer"], staff["author"]
    layer2 = services.pipeline_ensure(task.project)[1]
    services.review_take_next(user=peer, layer=layer2)
    url = reverse("review-task", args=[task.pk])
    client.force_login(peer)
    first = html.unescape(client.get(url).content.decode())
    assert "original → blocked" in first and "<del>" in first.split('id="specification"')[1]
    assert "previous-round" not in first and "Previous round" not in first
    services.comment_add(
        actor=peer, task_id=task.pk, body="Which calendar?", blocker_key="review_year_dates"
    )
    services.comment_add(
        actor=author, task_id=task.pk, body="Mine.", blocker_key="review_year_dates"
    )
    services.review_decide(
        actor=peer,
        task_id=task.pk,
        outcome="request_changes",
        revision_number=task.revisions.order_by("-number").first().number,
        summary="Sharpen two blockers.",
        blocker_comments={"troubled_loan_definition": "Name the status letters."},
    )
    task.refresh_from_db()
    services.task_enter_review(task=task, actor=author)
    services.review_take_next(user=peer, layer=layer2)
    page = html.unescape(client.get(url).content.decode())
    blockers = {
        key: page.split(f'<span class="mono key">{key}</span>')[1].split("</article>")[0]
        for key in ("troubled_loan_definition", "review_year_dates", "loan_servicing_payment_code")
    }
    assert "Previous round · peer" in blockers["troubled_loan_definition"]
    assert "Name the status letters." in blockers["troubled_loan_definition"]
    assert "Which calendar?" in blockers["review_year_dates"]
    assert "Mine." not in blockers["review_year_dates"]  # the author's, not the layer's
    assert "previous-round" not in blockers["loan_servicing_payment_code"]
    assert "Back at Peer review after changes" in page and "Sharpen two blockers." in page
