"""Who may start what runs a task's code (docs/user-guide.md, "Runs that execute task code"):
its author and the project's leads; every other role sees the results but starts nothing."""

import pytest
from django.urls import reverse

from exchange.importers import import_swebench
from hilbench_annotate.models import Task
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from validators.models import EnvironmentBuild, ValidationRun

pytestmark = pytest.mark.django_db

# role -> expected status of starting a run (302: started, the page moves to it).
EXPECTED = {
    "anonymous": 302,  # to the login page, nothing started
    "outsider": 404,
    "author": 302,
    "other_author": 403,
    "reviewer": 403,
    "auditor": 403,
    "lead": 302,
    "harness": 404,
}


@pytest.fixture
def world(demo_data):
    project = ProjectFactory()
    users = {}
    for role in ("author", "reviewer", "auditor", "lead", "harness"):
        users[role] = UserFactory(username=f"run-{role}")
        MembershipFactory(project=project, user=users[role], role=role)
    users["other_author"] = UserFactory(username="run-other-author")
    MembershipFactory(project=project, user=users["other_author"], role="author")
    users["outsider"] = UserFactory(username="run-outsider")
    MembershipFactory(project=ProjectFactory(), user=users["outsider"], role="author")
    import_swebench(
        project=project,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=users["author"],
    )
    return Task.objects.get(project=project), users


@pytest.mark.parametrize("role", EXPECTED)
@pytest.mark.parametrize("url_name", ["validation-start", "environment-build-start"])
def test_only_the_author_and_leads_start_runs_of_task_code(client, world, role, url_name):
    task, users = world
    if role != "anonymous":
        client.force_login(users[role])
    response = client.post(reverse(url_name, args=[task.pk]), {"checks": ["spec"]})
    assert response.status_code == EXPECTED[role], (role, response.status_code)
    started = ValidationRun.objects.count() + EnvironmentBuild.objects.count()
    allowed = role in ("author", "lead")
    assert started == (1 if allowed else 0)
    if role == "anonymous":
        assert "/login/" in response["Location"]
