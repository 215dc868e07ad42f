"""Assigning a reviewer, from the review page's form and from ``POST /api/tasks/<id>/assign``:
one input schema (``AssignIn``, which the page's form data goes through), one service
(``review_assign``), and the names the page offers (``selectors.assignment_candidates``) are
exactly the names the service accepts."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from hilbench_annotate import workflow
from hilbench_annotate.forminput import form_input
from hilbench_annotate.vocabulary import Role
from review.models import ReviewAssignment
from review.serializers import AssignIn

from ..factories import MembershipFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def at_audit(project, author, lead, auditor, reviewer):
    """A task in review at layer 3 (the auditors'); its author also holds the auditor role,
    a second auditor does not, and ``reviewer`` holds a role layer 3 does not ask for."""
    MembershipFactory(project=project, user=author, role=Role.AUDITOR)
    MembershipFactory(project=project, user=UserFactory(username="auditor2"), role=Role.AUDITOR)
    return TaskFactory(
        project=project,
        author=author,
        status=workflow.IN_REVIEW,
        review_layer=3,
        layer_entered_at=timezone.now(),
    )


def _by_page(client, user, task, data) -> tuple[bool, str]:
    client.force_login(user)
    before = ReviewAssignment.objects.count()
    response = client.post(reverse("review-assign", args=[task.pk]), data)
    assert response.status_code == 302
    said = [str(m) for m in get_messages(response.wsgi_request)][-1]
    return ReviewAssignment.objects.count() > before, said


def _by_api(api, user, task, data) -> tuple[bool, dict]:
    api.force_authenticate(user)
    response = api.post(reverse("api-task-assign", args=[task.pk]), data, format="json")
    assert response.status_code in (201, 400), response.content
    return response.status_code == 201, response.json()


@pytest.mark.parametrize(
    "data,field_error",
    [
        ({}, "This field is required."),
        ({"reviewer": ""}, "This field may not be blank."),
    ],
)
def test_the_page_and_the_api_refuse_a_malformed_form_in_the_same_words(
    client, api, lead, at_audit, data, field_error
):
    assigned, said = _by_page(client, lead, at_audit, data)
    api_assigned, body = _by_api(api, lead, at_audit, data)
    assert not assigned and not api_assigned
    assert body == {"reviewer": [field_error]}
    assert said == f"Reviewer: {field_error}"


@pytest.mark.parametrize(
    "data,read",
    [
        ({"reviewer": "auditor"}, {"reviewer": "auditor"}),
        ({"reviewer": "auditor", "other": "ignored"}, {"reviewer": "auditor"}),
    ],
)
def test_the_form_is_read_by_the_apis_schema(data, read):
    assert form_input(AssignIn, data) == read


@pytest.mark.parametrize("name", ["auditor", "auditor2", "author", "reviewer", "lead", "nobody"])
def test_the_page_offers_exactly_the_names_the_page_and_the_api_accept(
    client, api, lead, at_audit, name
):
    client.force_login(lead)
    offered = [
        u.username
        for u in client.get(reverse("review-task", args=[at_audit.pk])).context["candidates"]
    ]
    assert offered == ["auditor", "auditor2"]
    page_assigned, said = _by_page(client, lead, at_audit, {"reviewer": name})
    if page_assigned:
        ReviewAssignment.objects.all().delete()
    api_assigned, body = _by_api(api, lead, at_audit, {"reviewer": name})
    assert page_assigned is api_assigned is (name in offered)
    if not api_assigned:
        assert said == body["detail"]  # the service's own refusal, word for word
