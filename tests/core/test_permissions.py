"""Who may read and who may change tasks, blockers and trigger questions (API and HTML).

Reads: project members with role author/reviewer/auditor/lead, and site admins. The harness
role and members of other projects see nothing, and what they may not see is 404, not 403.
Writes: the task's author (still holding the author role) and project leads (and admins);
other readers get 403. Every refused request leaves the task exactly as it was.
"""

from types import SimpleNamespace

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from hilbench_annotate.models import (
    ApiToken,
    Blocker,
    Revision,
    Task,
    TaskEvent,
    TriggerQuestion,
)
from hilbench_annotate.services.tokens import api_token_create, api_token_revoke
from hilbench_annotate.vocabulary import Role

from ..factories import (
    BlockerFactory,
    MembershipFactory,
    TaskFactory,
    TriggerQuestionFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

TASK_TITLE = "Which branch granted the most loans in the boom year?"


@pytest.fixture
def objs(project, author):
    """A task of ``project`` by ``author`` with one blocker and one trigger question."""
    task = TaskFactory(project=project, author=author, title=TASK_TITLE)
    blocker = BlockerFactory(task=task, key="boom_year", position=0)
    Task.objects.filter(pk=task.pk).update(blocker_count=1)
    question = TriggerQuestionFactory(blocker=blocker, position=0)
    return SimpleNamespace(task=task, blocker=blocker, question=question)


@pytest.fixture
def other_author(project):
    """An author in the same project who did not write the task."""
    user = UserFactory(username="other-author")
    MembershipFactory(project=project, user=user, role=Role.AUTHOR)
    return user


@pytest.fixture
def superuser(db):
    return UserFactory(username="admin", is_superuser=True, is_staff=True)


@pytest.fixture
def outsider_project(outsider):
    return outsider.memberships.get().project


def _client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _version(task) -> int:
    return Task.objects.values_list("version", flat=True).get(pk=task.pk)


def _state(o) -> dict:
    """Everything a write could change about the fixture task."""
    task = Task.objects.get(pk=o.task.pk)
    return {
        "version": task.version,
        "title": task.title,
        "blocked_spec": task.blocked_spec,
        "blocker_count": task.blocker_count,
        "revisions": Revision.objects.filter(task=task).count(),
        "events": TaskEvent.objects.filter(task=task).count(),
        "blockers": list(
            Blocker.objects.filter(task=task).values_list("pk", "key", "description", "position")
        ),
        "questions": list(
            TriggerQuestion.objects.filter(blocker__task=task).values_list("pk", "text")
        ),
    }


# --- the requests ------------------------------------------------------------------------


def read_task(client, o):
    return client.get(reverse("api-task-detail", args=[o.task.pk]))


def read_blockers(client, o):
    return client.get(reverse("api-blocker-list", args=[o.task.pk]))


def read_blocker(client, o):
    return client.get(reverse("api-blocker-detail", args=[o.blocker.pk]))


def update_task(client, o):
    return client.patch(
        reverse("api-task-detail", args=[o.task.pk]),
        {"expected_version": _version(o.task), "title": "Renamed by someone"},
        format="json",
    )


def create_blocker(client, o):
    return client.post(
        reverse("api-blocker-list", args=[o.task.pk]),
        {
            "expected_version": _version(o.task),
            "key": "loan_status",
            "type": "question",
            "subtype": "unclear_value",
            "description": "Which loan statuses count as granted is not said.",
            "resolution": "Statuses A and C count as granted.",
            "trigger_questions": ["Which loan statuses count as granted?"],
        },
        format="json",
    )


def update_blocker(client, o):
    return client.patch(
        reverse("api-blocker-detail", args=[o.blocker.pk]),
        {"expected_version": _version(o.task), "description": "Changed description."},
        format="json",
    )


def delete_blocker(client, o):
    url = reverse("api-blocker-detail", args=[o.blocker.pk])
    return client.delete(f"{url}?expected_version={_version(o.task)}")


def create_question(client, o):
    return client.post(
        reverse("api-trigger-question-create", args=[o.blocker.pk]),
        {"expected_version": _version(o.task), "text": "Is the boom year 1997?"},
        format="json",
    )


def update_question(client, o):
    return client.patch(
        reverse("api-trigger-question-detail", args=[o.question.pk]),
        {"expected_version": _version(o.task), "text": "Which year was the boom?"},
        format="json",
    )


def delete_question(client, o):
    url = reverse("api-trigger-question-detail", args=[o.question.pk])
    return client.delete(f"{url}?expected_version={_version(o.task)}")


READS = [
    pytest.param(read_task, id="read-task"),
    pytest.param(read_blockers, id="read-blockers"),
    pytest.param(read_blocker, id="read-blocker"),
]

# (request, status on success)
WRITES = [
    pytest.param(update_task, 200, id="update-task"),
    pytest.param(create_blocker, 201, id="create-blocker"),
    pytest.param(update_blocker, 200, id="update-blocker"),
    pytest.param(delete_blocker, 204, id="delete-blocker"),
    pytest.param(create_question, 201, id="create-question"),
    pytest.param(update_question, 200, id="update-question"),
    pytest.param(delete_question, 204, id="delete-question"),
]


# --- anonymous ---------------------------------------------------------------------------


def _get(name):
    def request(client, o):
        return client.get(reverse(name))

    return request


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(_get("api-project-list"), id="project-list"),
        pytest.param(_get("api-task-list"), id="task-list"),
        *READS,
        *[pytest.param(p.values[0], id=p.id) for p in WRITES],
        pytest.param(_get("api-schema"), id="schema"),
        pytest.param(_get("api-docs"), id="docs"),
    ],
)
def test_anonymous_requests_to_every_api_endpoint_are_refused(api, objs, request_):
    before = _state(objs)

    response = request_(api, objs)

    assert response.status_code in (401, 403), response.content[:300]
    assert TASK_TITLE.encode() not in response.content
    assert _state(objs) == before


@pytest.mark.parametrize("url_name", ["task-list", "task-detail"])
def test_anonymous_html_pages_redirect_to_login(client, objs, url_name):
    url = reverse(url_name, args=[objs.task.pk] if url_name == "task-detail" else [])

    response = client.get(url)

    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))
    assert f"next={url}" in response.url


# --- users who may not read the task: outsider (other project) and harness ---------------


@pytest.mark.parametrize("username", ["outsider", "harness"])
@pytest.mark.parametrize("request_", READS)
def test_users_without_read_access_get_404_on_reads(request, objs, username, request_):
    client = _client_for(request.getfixturevalue(username))

    response = request_(client, objs)

    assert response.status_code == 404
    assert TASK_TITLE.encode() not in response.content


@pytest.mark.parametrize("username", ["outsider", "harness"])
@pytest.mark.parametrize("request_, _ok", WRITES)
def test_users_without_read_access_get_404_on_writes_and_nothing_changes(
    request, objs, username, request_, _ok
):
    client = _client_for(request.getfixturevalue(username))
    before = _state(objs)

    response = request_(client, objs)

    assert response.status_code == 404, response.content[:300]
    assert _state(objs) == before


def test_invisible_task_looks_exactly_like_a_missing_one(objs, outsider):
    client = _client_for(outsider)
    missing_id = Task.objects.order_by("-pk").values_list("pk", flat=True).first() + 1000

    hidden = client.get(reverse("api-task-detail", args=[objs.task.pk]))
    missing = client.get(reverse("api-task-detail", args=[missing_id]))

    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


@pytest.mark.parametrize("username", ["outsider", "harness"])
def test_html_task_page_is_404_for_users_without_read_access(client, request, objs, username):
    client.force_login(request.getfixturevalue(username))

    response = client.get(reverse("task-detail", args=[objs.task.pk]))

    assert response.status_code == 404
    assert TASK_TITLE not in response.content.decode()


def test_outsider_api_task_list_has_only_own_project_tasks(objs, outsider, outsider_project):
    own = TaskFactory(project=outsider_project, author=outsider, title="Outsider's own task")

    response = _client_for(outsider).get(reverse("api-task-list"))

    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [own.pk]


def test_outsider_html_task_list_has_only_own_project_tasks(
    client, objs, outsider, outsider_project
):
    TaskFactory(project=outsider_project, author=outsider, title="Outsider's own task")
    client.force_login(outsider)

    response = client.get(reverse("task-list"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Outsider&#x27;s own task" in page
    assert TASK_TITLE not in page
    assert objs.task.source_id not in page


def test_outsider_project_list_has_only_own_project(project, outsider, outsider_project):
    response = _client_for(outsider).get(reverse("api-project-list"))

    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [outsider_project.pk]


def test_harness_sees_no_tasks_and_no_projects(objs, harness):
    client = _client_for(harness)

    tasks = client.get(reverse("api-task-list"))
    projects = client.get(reverse("api-project-list"))

    assert tasks.status_code == 200
    assert tasks.json()["count"] == 0
    assert tasks.json()["results"] == []
    assert projects.json()["results"] == []


def test_harness_html_task_list_is_empty(client, objs, harness):
    client.force_login(harness)

    response = client.get(reverse("task-list"))

    assert response.status_code == 200
    assert TASK_TITLE not in response.content.decode()


# --- readers of the project ---------------------------------------------------------------


@pytest.mark.parametrize("username", ["author", "reviewer", "auditor", "lead", "superuser"])
@pytest.mark.parametrize("request_", READS)
def test_project_readers_can_read(request, objs, username, request_):
    client = _client_for(request.getfixturevalue(username))

    response = request_(client, objs)

    assert response.status_code == 200
    assert "boom_year" in response.content.decode()


@pytest.mark.parametrize("username", ["reviewer", "auditor", "lead", "superuser"])
def test_project_readers_see_the_task_in_lists_and_html(client, request, objs, username):
    user = request.getfixturevalue(username)
    client.force_login(user)

    listed = _client_for(user).get(reverse("api-task-list"))
    page = client.get(reverse("task-detail", args=[objs.task.pk]))

    assert [row["id"] for row in listed.json()["results"]] == [objs.task.pk]
    assert page.status_code == 200
    assert TASK_TITLE in page.content.decode()


@pytest.mark.parametrize("username", ["reviewer", "auditor", "other_author"])
@pytest.mark.parametrize("request_, _ok", WRITES)
def test_readers_who_are_not_editors_get_403_on_writes_and_nothing_changes(
    request, objs, username, request_, _ok
):
    client = _client_for(request.getfixturevalue(username))
    before = _state(objs)

    response = request_(client, objs)

    assert response.status_code == 403, response.content[:300]
    assert "author" in response.json()["detail"]
    assert _state(objs) == before


def test_task_author_without_the_author_role_any_more_cannot_write(project):
    former = UserFactory(username="former-author")
    MembershipFactory(project=project, user=former, role=Role.REVIEWER)
    task = TaskFactory(project=project, author=former, title="Written before the role change")
    client = _client_for(former)

    response = client.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": 1, "title": "Still mine?"},
        format="json",
    )

    assert response.status_code == 403
    task.refresh_from_db()
    assert task.title == "Written before the role change"
    assert task.version == 1


@pytest.mark.parametrize("username", ["author", "lead", "superuser"])
@pytest.mark.parametrize("request_, ok", WRITES)
def test_task_author_lead_and_superuser_can_write(request, objs, username, request_, ok):
    client = _client_for(request.getfixturevalue(username))
    before = _state(objs)

    response = request_(client, objs)

    assert response.status_code == ok, response.content[:300]
    after = _state(objs)
    assert after["version"] == before["version"] + 1
    assert after["revisions"] == before["revisions"] + 1
    assert after["events"] == before["events"] + 1


def test_superuser_reads_tasks_of_every_project(objs, superuser, outsider, outsider_project):
    theirs = TaskFactory(project=outsider_project, author=outsider, title="Outsider's own task")
    client = _client_for(superuser)

    listed = client.get(reverse("api-task-list"))
    detail = client.get(reverse("api-task-detail", args=[theirs.pk]))

    assert {row["id"] for row in listed.json()["results"]} == {objs.task.pk, theirs.pk}
    assert detail.status_code == 200
    assert detail.json()["title"] == "Outsider's own task"


# --- token authentication ----------------------------------------------------------------


def test_bearer_token_authenticates_reads_and_writes_as_its_user(api, objs, author):
    token, key = api_token_create(user=author, name="harness script")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    listed = api.get(reverse("api-task-list"))
    edited = update_task(api, objs)

    assert listed.status_code == 200
    assert [row["id"] for row in listed.json()["results"]] == [objs.task.pk]
    assert edited.status_code == 200
    revision = Revision.objects.filter(task=objs.task).order_by("-number").first()
    assert revision.author == author
    assert ApiToken.objects.get(pk=token.pk).last_used_at is not None


def test_bearer_token_of_a_reviewer_may_read_but_not_write(api, objs, reviewer):
    _token, key = api_token_create(user=reviewer, name="reviewer script")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    assert read_task(api, objs).status_code == 200
    assert update_task(api, objs).status_code == 403


def test_revoked_token_is_refused_with_401(api, objs, author):
    token, key = api_token_create(user=author, name="old laptop")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get(reverse("api-task-list")).status_code == 200

    api_token_revoke(user=author, token_id=token.pk)
    response = api.get(reverse("api-task-list"))

    assert response.status_code == 401
    assert TASK_TITLE.encode() not in response.content


@pytest.mark.parametrize(
    "header",
    ["Bearer not-a-real-token", "Bearer hba_" + "x" * 43, "Bearer", "Bearer two parts"],
)
def test_garbage_token_is_refused_with_401(api, objs, header):
    api.credentials(HTTP_AUTHORIZATION=header)

    response = api.get(reverse("api-task-list"))

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_token_of_another_user_does_not_grant_their_access(api, objs, author, outsider):
    _token, key = api_token_create(user=outsider, name="outsider script")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    assert read_task(api, objs).status_code == 404


def test_an_access_refusal_in_an_html_view_is_a_403_page_naming_the_reason(client, project):
    """AccessDeniedMiddleware: a service's AccessDenied is a 403 page for every HTML view."""
    from hilbench_annotate.models import Membership
    from tests.factories import TaskFactory, UserFactory

    author = UserFactory(username="the-author")
    reviewer = UserFactory(username="a-reviewer")
    Membership.objects.create(project=project, user=author, role="author")
    Membership.objects.create(project=project, user=reviewer, role="reviewer")
    task = TaskFactory(project=project, author=author)
    client.force_login(reviewer)
    response = client.post(
        reverse("workspace-submit", args=[task.pk]), {"expected_version": task.version}
    )
    assert response.status_code == 403
    assert b"Only the task&#x27;s author or a project lead may change this task." in (
        response.content
    )
    assert b"<h1>Not allowed</h1>" in response.content


# --- machine users log in with a token only -------------------------------------------------


def test_a_machine_user_cannot_log_in_with_a_password_even_if_one_was_set(
    client, rf, objs, harness
):
    """The red-team's finding: the harness logged in to the web UI with its password. A
    machine user is refused at login (and by ``authenticate`` anywhere, the admin's login too);
    its API token still works."""
    from django.contrib.auth import authenticate

    harness.set_password("a-password-someone-set")
    harness.save()

    response = client.post(
        reverse("login"), {"username": "harness", "password": "a-password-someone-set"}
    )

    assert response.status_code == 200  # the form again, with the usual error
    assert "enter a correct username and password" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("task-list")).status_code == 302  # still anonymous
    login_request = rf.post("/admin/login/")
    assert (
        authenticate(login_request, username="harness", password="a-password-someone-set") is None
    )
    _token, key = api_token_create(user=harness, name="harness")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get(reverse("api-project-list")).status_code == 200


def test_people_still_log_in_with_their_password(client, objs, author):
    author.set_password("authors-password")
    author.save()

    response = client.post(reverse("login"), {"username": "author", "password": "authors-password"})

    assert response.status_code == 302
    assert client.get(reverse("task-list")).status_code == 200


# --- redirects after a form stay on this site ---------------------------------------------


OFF_SITE = [
    "https://evil.example/phish",
    "//evil.example/phish",
    "/\\evil.example/phish",
    "\\\\evil.example/phish",
    "http:/evil.example",
    "javascript:alert(1)",
]


def _thread(objs, author):
    from review.models import Comment

    return Comment.objects.create(task=objs.task, author=author, body="Which year is the boom?")


@pytest.mark.parametrize("next_url", OFF_SITE)
def test_comment_forms_never_redirect_off_site(client, objs, author, next_url):
    """The red-team's finding: ``?next=https://evil.example`` on a comment form sent the
    browser there after posting. Only a path on this site is followed."""
    thread = _thread(objs, author)
    client.force_login(author)
    task_page = f"/tasks/{objs.task.pk}/#threads"

    added = client.post(
        reverse("comment-add", args=[objs.task.pk]), {"body": "1997.", "next": next_url}
    )
    resolved = client.post(
        reverse("comment-resolve", args=[thread.pk]), {"resolved": "1", "next": next_url}
    )

    assert (added.status_code, added["Location"]) == (302, task_page)
    assert (resolved.status_code, resolved["Location"]) == (302, task_page)


def test_comment_forms_return_to_the_page_they_were_posted_from(client, objs, author):
    thread = _thread(objs, author)
    client.force_login(author)
    review_page = f"/tasks/{objs.task.pk}/review/?tab=threads#threads"

    added = client.post(
        reverse("comment-add", args=[objs.task.pk]), {"body": "1997.", "next": review_page}
    )
    resolved = client.post(
        reverse("comment-resolve", args=[thread.pk]), {"resolved": "1", "next": review_page}
    )

    assert added["Location"] == review_page
    assert resolved["Location"] == review_page


@pytest.mark.parametrize("next_url", OFF_SITE)
def test_login_never_redirects_off_site(client, objs, author, next_url):
    author.set_password("authors-password")
    author.save()

    response = client.post(
        reverse("login"),
        {"username": "author", "password": "authors-password", "next": next_url},
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("task-list")


@pytest.mark.parametrize("next_url", OFF_SITE)
def test_redirect_next_follows_only_paths_on_this_host(rf, next_url):
    from hilbench_annotate.redirects import redirect_next

    hostile = rf.post("/x/", {"next": next_url})
    same_site = rf.post("/x/", {"next": "/evaluation/passes/3/?left=1"})

    assert redirect_next(hostile, "/fallback/")["Location"] == "/fallback/"
    assert redirect_next(same_site, "/fallback/")["Location"] == "/evaluation/passes/3/?left=1"
