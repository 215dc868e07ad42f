"""Every list page and list endpoint that reads filter parameters, sent hostile values as a
signed-in user of each role (issue 24, item 7): a 2xx, 3xx or 4xx, never a 5xx.

The routes come from the URL resolver: ``FILTERS`` names each list route and the query
parameters it reads, and a route missing from the resolver fails the test, so a renamed
route cannot drop out unseen. The values are what broke the task list — a 25-digit id
(integer overflow) and a 100,000-character search ("LIKE or GLOB pattern too complex") —
and their kin: negative, non-numeric, NUL bytes (PostgreSQL refuses them in a literal),
digits that are not ASCII, odd unicode.
"""

from urllib.parse import quote

import pytest
from django.urls import get_resolver, reverse
from rest_framework.test import APIClient

from hilbench_annotate.models import Task
from tests.factories import MembershipFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

# url name -> (takes the project id, the query parameters the view reads)
FILTERS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "task-list": (False, ("project", "domain", "status", "author", "resource", "tag", "q", "page")),
    "api-task-list": (
        False,
        ("project", "domain", "status", "author", "resource", "tag", "q", "page"),
    ),
    "api-review-queue": (False, ("project", "layer")),
    "api-notification-list": (False, ("unread", "page")),
    "review-dashboard": (True, ("format", "table")),
    "evaluation-project": (True, ("domain",)),
    "evaluation-leaderboard-csv": (True, ("domain",)),
    "evaluation-failures": (True, ("model", "domain", "dimension", "mode", "state")),
    "evaluation-failures-csv": (True, ("domain",)),
    "evaluation-compare": (False, ("left", "right")),
    "api-leaderboard": (True, ("domain",)),
}
# url name -> the query parameters a task's own pages read (the task is the route's argument)
TASK_FILTERS: dict[str, tuple[str, ...]] = {
    "workspace-revisions": ("a", "b"),
    "workspace-blocker-form": ("index",),
    "workspace-repo": ("path", "file", "setup_patch"),
}

HOSTILE = {
    "overflow": "9" * 25,
    "negative": "-1",
    "zero": "0",
    "not a number": "abc",
    "huge": "x" * 100_000,
    "huge percent": "%_" * 50_000,
    "nul": "a\x00b",
    "nul digits": "1\x00",
    "superscript digit": "²",
    "arabic digits": "٣٤",
    "odd unicode": "\ud800\u202e\ufeff💥",
    "float": "1e309",
}
ROLES = ("author", "reviewer", "auditor", "lead", "outsider")


def _names() -> set[str]:
    return {name for name in get_resolver().reverse_dict if isinstance(name, str)}


@pytest.fixture
def world(project):
    users = {"outsider": UserFactory(username="outsider")}
    for role in ROLES[:-1]:
        users[role] = UserFactory(username=f"fuzz-{role}")
        MembershipFactory(project=project, user=users[role], role=role)
    task = TaskFactory(project=project, author=users["author"])
    swe = TaskFactory(project=project, author=users["author"], swe=True)
    return project, users, {"sql": task, "swe": swe}


def test_every_filtered_list_route_is_in_the_resolver():
    assert set(FILTERS) | set(TASK_FILTERS) <= _names()


def _query(params: tuple[str, ...], value: str) -> str:
    # Raw: the test client would encode a lone surrogate (odd unicode) as an error itself.
    encoded = quote(value.encode("utf-8", "surrogatepass"), safe="")
    # Each one repeated, too; the hostile value last, the one QueryDict.get returns.
    return "&".join(f"{p}=1&{p}={encoded}" for p in params)


def _routes(project, tasks):
    for name, (per_project, params) in FILTERS.items():
        yield name, reverse(name, args=[project.pk] if per_project else []), params
    for name, params in TASK_FILTERS.items():
        for task in tasks.values():
            yield name, reverse(name, args=[task.pk]), params


def _server_errors(client, project, tasks, value: str, *, one_at_a_time: bool) -> list[tuple]:
    errors = []
    for name, url, params in _routes(project, tasks):
        for sent in [(p,) for p in params] if one_at_a_time else [params]:
            response = client.get(f"{url}?{_query(sent, value)}")
            if response.status_code >= 500:
                errors.append((name, sent, response.status_code))
    return errors


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_no_list_route_answers_a_hostile_filter_with_a_5xx(world, kind):
    """Every filter alone for the author (whose task each filter then meets: a bad value
    behind another filter that matches nothing is never read), all at once for each role."""
    project, users, tasks = world
    failures = []
    for role in ROLES:
        client = APIClient()
        client.force_login(users[role])
        errors = _server_errors(
            client, project, tasks, HOSTILE[kind], one_at_a_time=role == "author"
        )
        failures += [(role, *error) for error in errors]
    assert failures == []


def test_the_task_list_ignores_what_it_cannot_use_and_says_so(client, world):
    project, users, _tasks = world
    client.force_login(users["author"])
    response = client.get(reverse("task-list"), {"project": "9" * 25, "q": "x" * 100_000})
    assert response.status_code == 200
    assert "Ignored the filter(s) project" in response.content.decode()
    # A search cut to its limit still searches: nothing has that title.
    assert list(response.context["page"].object_list) == []
    assert Task.objects.filter(project=project).count() == 2
    listed = client.get(reverse("task-list"), {"project": str(project.pk)})
    assert len(listed.context["page"].object_list) == 2
