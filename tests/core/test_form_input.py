"""The task list's bulk action, the task page's tags and the token page read their forms
through ``hilbench_annotate.serializers`` (no API takes these actions yet; one would validate
with the same schema): malformed input is refused with the field named, never a 500, and
nothing is saved; valid input does what it did (``test_bulk_actions``, ``test_tags``)."""

import pytest
from django.contrib.messages import get_messages
from django.http import QueryDict
from django.urls import reverse

from hilbench_annotate.forminput import form_input
from hilbench_annotate.models import ApiToken
from hilbench_annotate.serializers import TaskBulkIn
from hilbench_annotate.services.tokens import api_token_create

from ..factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def _tags(task) -> list[str]:
    return sorted(task.tags.values_list("name", flat=True))


@pytest.mark.parametrize(
    "data,said",
    [
        ({"scope": "everything"}, 'Scope: "everything" is not a valid choice.'),
        ({"action": "add_tag\x00"}, "Action: Null characters are not allowed."),
        ({"ids": ["1\x00"]}, "Id 1: Null characters are not allowed."),
    ],
)
def test_a_malformed_bulk_action_is_refused_naming_the_field(client, project, author, data, said):
    task = TaskFactory(project=project, author=author)
    client.force_login(author)
    form = {"action": "add_tag", "param-tag": "x", "ids": [task.pk], "q": "a", **data}
    response = client.post(reverse("task-bulk"), form)
    assert response.status_code == 302 and response["Location"] == reverse("task-list") + "?q=a"
    assert _said(response) == said
    assert _tags(task) == []


def test_the_bulk_form_is_read_as_posted():
    post = QueryDict("action=add_tag&ids=3&ids=x&scope=all&page=2&param-tag=t")
    assert form_input(TaskBulkIn, post) == {
        "action": "add_tag",
        "ids": ["3", "x"],  # "x" is the service's to count as not found
        "scope": "all",
        "page": "2",
    }
    assert form_input(TaskBulkIn, QueryDict("")) == {
        "action": "",
        "ids": [],
        "scope": "",
        "page": "",
    }


def test_a_malformed_tag_is_refused_naming_it_and_shown_as_typed(client, project, author):
    task = TaskFactory(project=project, author=author)
    client.force_login(author)
    response = client.post(reverse("task-tags", args=[task.pk]), {"tags": "sql, a\x00b"})
    assert response.status_code == 400
    assert _said(response) == "Tag 2: Null characters are not allowed."
    assert 'name="tags" value="sql, a' in response.content.decode()
    assert _tags(task) == []


@pytest.mark.parametrize(
    "revoke,said",
    [
        ("abc", "Token: A valid integer is required."),
        ("0", "Token: Ensure this value is greater than or equal to 1."),
    ],
)
def test_a_malformed_revoke_is_refused_naming_the_field(client, author, revoke, said):
    token, _ = api_token_create(user=author, name="kept")
    client.force_login(author)
    response = client.post(reverse("token-list"), {"revoke": revoke, "name": "new"})
    assert response.status_code == 400 and _said(response) == said
    assert list(ApiToken.objects.values_list("name", "revoked_at")) == [("kept", None)]


def test_a_token_is_revoked_by_its_owner_only_and_created_otherwise(client, author):
    token, _ = api_token_create(user=author, name="mine")
    other, _ = api_token_create(user=UserFactory(), name="theirs")
    client.force_login(author)
    url = reverse("token-list")
    assert client.post(url, {"revoke": str(other.pk)}).status_code == 404
    response = client.post(url, {"revoke": str(token.pk)})
    assert response.status_code == 302 and _said(response) == "Token mine revoked."
    assert client.post(url, {"revoke": "", "name": "next"}).status_code == 200
    assert ApiToken.objects.filter(user=author, name="next", revoked_at=None).exists()
    other.refresh_from_db()
    assert other.revoked_at is None
