"""The review queue is one selector (``review.selectors.review_queue``): the queue page and
``GET /api/review/queue`` list the same layers, counts and assignments for the same user."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from hilbench_annotate import workflow
from review import selectors
from review.models import ReviewAssignment

from ..factories import MembershipFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def _in_review(project, position: int, **fields):
    return TaskFactory(
        project=project,
        author=UserFactory(),
        status=fields.pop("status", workflow.IN_REVIEW),
        review_layer=position,
        layer_entered_at=timezone.now(),
        **fields,
    )


def _hold(task, user, layer: int, minutes: int = 30) -> ReviewAssignment:
    return ReviewAssignment.objects.create(
        task=task,
        layer=layer,
        reviewer=user,
        expires_at=timezone.now() + timedelta(minutes=minutes),
    )


@pytest.fixture
def auditor_queue(project):
    """An auditor (layers 3 and 4) holding one task rightly, and three assignments that hold
    nothing: its task moved on to layer 4, its lock expired, its task was sent back."""
    auditor = UserFactory(username="queue-auditor")
    MembershipFactory(project=project, user=auditor, role="auditor")
    held = _hold(_in_review(project, 3), auditor, 3)
    _hold(_in_review(project, 4), auditor, 3)  # task has left layer 3
    _hold(_in_review(project, 3), auditor, 3, minutes=-1)  # lock expired
    _hold(_in_review(project, 3, status=workflow.CHANGES_REQUESTED), auditor, 3)
    _in_review(project, 3)  # waiting, free to take (as is the one whose lock expired)
    return auditor, held


def _page(client, user):
    client.force_login(user)
    response = client.get(reverse("review-queue"))
    assert response.status_code == 200
    rows = [(row.project.pk, row.layer.position, row.eligible) for row in response.context["rows"]]
    return rows, [a.pk for a in response.context["mine"]]


def _api(api, user, **params):
    api.force_authenticate(user)
    response = api.get(reverse("api-review-queue"), params)
    assert response.status_code == 200
    rows = [(row["project"], row["layer"], row["eligible"]) for row in response.json()]
    return rows, [a["id"] for row in response.json() for a in row["assignments"]]


def test_the_queue_holds_only_live_assignments_whose_task_is_still_at_that_layer(
    project, auditor_queue
):
    auditor, held = auditor_queue
    rows = selectors.review_queue(user=auditor)
    assert [(r.layer.position, r.eligible, r.total) for r in rows] == [(3, 2, 3), (4, 0, 1)]
    assert [[a.pk for a in r.assignments] for r in rows] == [[held.pk], []]


def test_the_page_and_the_api_list_the_same_queue(client, api, project, auditor_queue):
    auditor, held = auditor_queue
    page_rows, page_held = _page(client, auditor)
    api_rows, api_held = _api(api, auditor)
    assert page_rows == api_rows == [(project.pk, 3, 2), (project.pk, 4, 0)]
    assert page_held == api_held == [held.pk]
    # And the page shows it in the table of what is in the reviewer's hands.
    assert (
        reverse("review-release", args=[held.pk])
        in client.get(reverse("review-queue")).content.decode()
    )


def test_the_api_narrows_the_same_queue_to_a_project_or_a_layer(api, project, auditor_queue):
    auditor, held = auditor_queue
    assert _api(api, auditor, layer=4) == ([(project.pk, 4, 0)], [])
    assert _api(api, auditor, project=project.pk) == (
        [(project.pk, 3, 2), (project.pk, 4, 0)],
        [held.pk],
    )
