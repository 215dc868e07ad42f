"""The review pages' forms are read by the API's input schemas (``review/forms.py``): the
decision form through ``DecisionIn``, a comment through ``CommentIn``, resolving a thread
through ``ResolveIn`` — the same input refused in the same words on the page and in the API."""

import pytest
from django.contrib.messages import get_messages
from django.http import QueryDict
from django.urls import reverse

from hilbench_annotate.errors import DomainError
from review.forms import decision_input, decision_typed
from review.models import Comment

from ..factories import TaskFactory

CHECKLIST = ["Blockers are realistic", "Each blocker is critical"]


def _post(**fields) -> QueryDict:
    data = QueryDict(mutable=True)
    for key, value in fields.items():
        for one in value if isinstance(value, list) else [value]:
            data.appendlist(key.replace("_", "-") if key.startswith("check") else key, one)
    return data


def _read(post):
    return decision_input(decision_typed(post, checklist=CHECKLIST, blocker_keys=["b1", "b2"]))


def test_a_complete_decision_form_reads_as_the_apis_body():
    post = _post(outcome="approve", revision="3", summary="  Fine.  ", check_0="pass")
    post["check-1"] = "fail"
    post["check-1-note"] = "b2 leaks"
    post["blocker-comment-b1"] = "Name the calendar."
    assert _read(post) == {
        "outcome": "approve",
        "revision": 3,
        "summary": "Fine.",
        "reject_reason": "",
        "checklist": [
            {"item": CHECKLIST[0], "passed": True, "note": ""},
            {"item": CHECKLIST[1], "passed": False, "note": "b2 leaks"},
        ],
        "blocker_comments": {"b1": "Name the calendar.", "b2": ""},
    }


def test_a_row_asked_per_blocker_passes_only_when_every_blocker_is_ticked():
    post = _post(outcome="request_changes", revision="1")
    post["check-0-per-blocker"] = "b1,b2"
    post.appendlist("check-0-blocker", "b1")
    typed = decision_typed(post, checklist=CHECKLIST, blocker_keys=["b1", "b2"])
    assert typed["checklist"][0] == {
        "item": CHECKLIST[0],
        "passed": False,
        "note": "Not for b2.",
        "ticked": ["b1"],
    }
    assert _read(post)["checklist"][1] == {"item": CHECKLIST[1], "passed": None, "note": ""}


@pytest.mark.parametrize(
    "fields,said",
    [
        ({"outcome": "approve", "revision": "seven"}, "Revision: A valid integer is required."),
        ({"outcome": "approve"}, "Revision: A valid integer is required."),
        (
            {"outcome": "approve", "revision": "0"},
            "Revision: Ensure this value is greater than or equal to 1.",
        ),
        ({"outcome": "", "revision": "2"}, 'Outcome: "" is not a valid choice.'),
        ({"outcome": "maybe", "revision": "2"}, 'Outcome: "maybe" is not a valid choice.'),
    ],
)
def test_a_malformed_decision_form_is_refused_in_the_apis_words(fields, said):
    with pytest.raises(DomainError) as refused:
        _read(_post(**fields))
    assert str(refused.value) == said


def _page_says(client, user, url, data) -> str:
    client.force_login(user)
    response = client.post(url, data)
    assert response.status_code == 302
    return [str(m) for m in get_messages(response.wsgi_request)][-1]


def _api_says(api, user, url, data) -> dict:
    api.force_authenticate(user)
    response = api.post(url, data, format="json")
    assert response.status_code == 400, response.content
    return response.json()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data,field,error",
    [
        ({"body": ""}, "body", "This field may not be blank."),
        ({}, "body", "This field is required."),
        ({"body": "Which year?", "parent": "first"}, "parent", "A valid integer is required."),
    ],
)
def test_a_comment_is_refused_alike_on_the_page_and_in_the_api(
    client, api, project, lead, data, field, error
):
    task = TaskFactory(project=project)
    said = _page_says(client, lead, reverse("comment-add", args=[task.pk]), data)
    body = _api_says(api, lead, reverse("api-task-comments", args=[task.pk]), data)
    assert body == {field: [error]}
    assert said == f"{field.capitalize()}: {error}"
    assert not Comment.objects.exists()


@pytest.mark.django_db
def test_resolving_reads_the_same_yes_or_no_on_the_page_and_in_the_api(client, api, project, lead):
    task = TaskFactory(project=project)
    thread = Comment.objects.create(task=task, author=lead, body="Is the list complete?")
    page_url = reverse("comment-resolve", args=[thread.pk])
    api_url = reverse("api-comment-resolve", args=[thread.pk])
    said = _page_says(client, lead, page_url, {"resolved": "maybe"})
    assert _api_says(api, lead, api_url, {"resolved": "maybe"}) == {
        "resolved": ["Must be a valid boolean."]
    }
    assert said == "Resolved: Must be a valid boolean."
    thread.refresh_from_db()
    assert not thread.resolved
    client.post(page_url, {"resolved": "1"})
    thread.refresh_from_db()
    assert thread.resolved
    client.post(page_url, {"resolved": "0"})
    thread.refresh_from_db()
    assert not thread.resolved
