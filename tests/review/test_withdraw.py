"""Withdrawing a decision made by mistake: back to where the task was, the row kept marked."""

import pytest
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from authoring.services import workspace_save
from hilbench_annotate import workflow
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_snapshot
from hilbench_annotate.vocabulary import Role
from review.models import Notification, ReviewAssignment, ReviewDecision
from review.services import (
    pipeline_ensure,
    review_decide,
    review_withdraw,
    task_submit,
    task_transition,
)
from review.timeline import event_text

from ..factories import MembershipFactory, UserFactory
from .test_api import answers, clean_task, place

pytestmark = pytest.mark.django_db


@pytest.fixture
def layers(project):
    return pipeline_ensure(project)


@pytest.fixture
def auditor2(project):
    user = UserFactory(username="auditor2")
    MembershipFactory(project=project, user=user, role=Role.AUDITOR)
    return user


def _held(task, user, layer):
    return ReviewAssignment.objects.create(
        task=task,
        layer=layer,
        reviewer=user,
        expires_at=timezone.now() + timezone.timedelta(hours=1),
    )


@pytest.fixture
def at_audit(project, author, auditor, layers):
    """A clean task at the registry audit (layer 3), held by the auditor."""
    task = place(clean_task(project, author, title="Loans settled cleanly"), 3)
    _held(task, auditor, 3)
    return task


def _decide(task, user, outcome, layers, **extra):
    if outcome == "approve":
        extra.setdefault("checklist", answers(layers[task.review_layer - 1]))
    if outcome == "request_changes":
        extra.setdefault("summary", "Say which status is clean.")
    if outcome == "reject":
        extra.setdefault("reject_reason", "Duplicate of another task")
    return review_decide(actor=user, task_id=task.pk, outcome=outcome, revision_number=1, **extra)


def test_withdrawing_a_request_for_changes_puts_the_task_back_in_the_reviewers_hands(
    at_audit,
    auditor,
    author,
    layers,
):
    decision = _decide(at_audit, auditor, "request_changes", layers)
    assert Task.objects.get(pk=at_audit.pk).status == workflow.CHANGES_REQUESTED

    review_withdraw(actor=auditor, decision_id=decision.pk)

    task = Task.objects.get(pk=at_audit.pk)
    assert (task.status, task.review_layer) == (workflow.IN_REVIEW, 3)
    # The row stays, marked; the standing decisions no longer count it.
    row = ReviewDecision.all_objects.get(pk=decision.pk)
    assert row.withdrawn_at is not None and row.outcome == "request_changes"
    assert not ReviewDecision.objects.filter(pk=decision.pk).exists()
    assert (
        ReviewAssignment.objects.get(task=task, status=ReviewAssignment.Status.ACTIVE).reviewer
        == auditor
    )
    event = task.events.filter(kind="status_changed").order_by("-pk").first()
    assert event.actor == auditor and event.data["action"] == "withdraw"
    said = event_text(event.kind, event.data, {3: "Registry audit"})
    assert said.startswith("withdrew their decision (asked for changes on revision 1")
    assert "changes requested at layer 3 (Registry audit) → in review at layer 3" in said
    assert Notification.objects.filter(user=author, kind="decision_withdrawn").exists()
    # The reviewer decides again, as before the mistake.
    _decide(task, auditor, "approve", layers)
    assert Task.objects.get(pk=task.pk).review_layer == 4


def test_withdrawing_an_approval_brings_the_task_back_from_the_next_layer(
    at_audit,
    auditor,
    layers,
):
    decision = _decide(at_audit, auditor, "approve", layers)
    assert Task.objects.get(pk=at_audit.pk).review_layer == 4
    review_withdraw(actor=auditor, decision_id=decision.pk)
    task = Task.objects.get(pk=at_audit.pk)
    assert (task.status, task.review_layer) == (workflow.IN_REVIEW, 3)


def test_withdrawing_a_rejection_reopens_review(client, at_audit, auditor, layers):
    decision = _decide(at_audit, auditor, "reject", layers)
    # The review page of a rejected task (no layer any more) offers it too.
    client.force_login(auditor)
    page = client.get(reverse("review-task", args=[at_audit.pk]))
    assert page.status_code == 200
    assert reverse("review-decision-withdraw", args=[decision.pk]) in page.content.decode()
    review_withdraw(actor=auditor, decision_id=decision.pk)
    task = Task.objects.get(pk=at_audit.pk)
    assert (task.status, task.review_layer) == (workflow.IN_REVIEW, 3)


def test_nobody_else_withdraws_it(at_audit, auditor, lead, author, outsider, layers):
    decision = _decide(at_audit, auditor, "request_changes", layers)
    for user in (lead, author):
        with pytest.raises(AccessDenied, match="Only auditor, who made this decision"):
            review_withdraw(actor=user, decision_id=decision.pk)
    with pytest.raises(Http404):
        review_withdraw(actor=outsider, decision_id=decision.pk)
    assert Task.objects.get(pk=at_audit.pk).status == workflow.CHANGES_REQUESTED
    assert ReviewDecision.objects.filter(pk=decision.pk).exists()


def test_refused_once_the_next_layer_took_it_or_decided(
    at_audit,
    auditor,
    auditor2,
    layers,
):
    decision = _decide(at_audit, auditor, "approve", layers)
    task = Task.objects.get(pk=at_audit.pk)
    _held(task, auditor2, 4)
    with pytest.raises(DomainError, match="auditor2 has taken it at layer 4"):
        review_withdraw(actor=auditor, decision_id=decision.pk)
    _decide(task, auditor2, "request_changes", layers)
    with pytest.raises(DomainError, match="auditor2 has since decided at layer 4"):
        review_withdraw(actor=auditor, decision_id=decision.pk)
    assert Task.objects.get(pk=task.pk).status == workflow.CHANGES_REQUESTED


def test_refused_once_the_author_acted_on_it(at_audit, auditor, author, layers):
    decision = _decide(at_audit, auditor, "request_changes", layers)
    task = Task.objects.get(pk=at_audit.pk)
    draft = task_snapshot(task)
    draft["blocked_spec"] = {**draft["blocked_spec"], "evidence": "Status A: settled."}
    workspace_save(task=task, actor=author, expected_version=task.version, draft=draft)
    with pytest.raises(DomainError, match="revision 2 was saved after the revision 1"):
        review_withdraw(actor=auditor, decision_id=decision.pk)
    task.refresh_from_db()
    task_submit(actor=author, task_id=task.pk, expected_version=task.version)
    with pytest.raises(DomainError, match="author has since submitted it for review again"):
        review_withdraw(actor=auditor, decision_id=decision.pk)


def test_refused_once_reopened_and_refused_twice(at_audit, auditor, lead, layers):
    decision = _decide(at_audit, auditor, "reject", layers)
    task = Task.objects.get(pk=at_audit.pk)
    task_transition(task=task, action="reopen", actor=lead)
    with pytest.raises(DomainError, match="lead has since reopened it"):
        review_withdraw(actor=auditor, decision_id=decision.pk)

    other = place(clean_task(task.project, task.author, title="Another"), 3)
    _held(other, auditor, 3)
    second = _decide(other, auditor, "reject", layers)
    review_withdraw(actor=auditor, decision_id=second.pk)
    with pytest.raises(DomainError, match="withdrawn already"):
        review_withdraw(actor=auditor, decision_id=second.pk)


def test_the_api_withdraws_and_lists_it_withdrawn(api, at_audit, auditor, lead, layers):
    decision = _decide(at_audit, auditor, "request_changes", layers)
    url = reverse("api-decision-withdraw", args=[decision.pk])
    api.force_authenticate(lead)
    assert api.post(url).status_code == 403
    api.force_authenticate(auditor)
    response = api.post(url)
    assert response.status_code == 200, response.content
    assert response.json()["withdrawn_at"] and response.json()["outcome"] == "request_changes"
    again = api.post(url)
    assert again.status_code == 400 and "withdrawn already" in again.json()["detail"]
    listed = api.get(reverse("api-task-decisions", args=[at_audit.pk])).json()
    assert [(d["id"], bool(d["withdrawn_at"])) for d in listed] == [(decision.pk, True)]
    assert api.post(reverse("api-decision-withdraw", args=[10**12])).status_code == 404


def test_the_review_page_and_queue_offer_it_to_its_reviewer_only(
    client,
    at_audit,
    auditor,
    lead,
    layers,
):
    decision = _decide(at_audit, auditor, "request_changes", layers)
    action = reverse("review-decision-withdraw", args=[decision.pk])
    page = reverse("review-task", args=[at_audit.pk])
    client.force_login(lead)
    assert action not in client.get(page).content.decode()
    client.force_login(auditor)
    assert action in client.get(page).content.decode()
    assert action in client.get(reverse("review-queue")).content.decode()

    response = client.post(action, follow=True)
    text = response.content.decode()
    assert "Withdrew your decision (request changes)" in text
    assert "withdrawn" in text and Task.objects.get(pk=at_audit.pk).status == "in_review"
    timeline = client.get(reverse("task-timeline", args=[at_audit.pk])).content.decode()
    assert "withdrew their decision" in timeline
    # The queue no longer offers it; a second POST says why.
    assert action not in client.get(reverse("review-queue")).content.decode()
    text = client.post(action, follow=True).content.decode()
    assert "cannot be withdrawn: it was withdrawn already" in text
