"""Property-based API testing with schemathesis: every operation of our OpenAPI schema, fed
generated (valid and invalid) requests through the WSGI app as a lead with an API token,
must never answer with a server error.

The schema is fetched from /api/schema/ through the app itself (so what clients see is what
is tested). The world holds a project the lead leads, tasks with blockers and a comment, so
generated small ids often hit real objects, not only 404s.

Run alone: ``.venv/bin/pytest tests/test_api_schemathesis.py -q``; examples per operation:
``SCHEMATHESIS_EXAMPLES`` (default 25).
"""

import os
from types import SimpleNamespace

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from exchange.models import ExportJob
from hilbench_annotate.services.tokens import api_token_create
from hilbench_annotate.vocabulary import Role
from judge.services import ask_human_run_start
from review.models import Comment, ReviewAssignment

from .factories import MembershipFactory, ProjectFactory, UserFactory
from .review.test_api import clean_task, place

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "25"))


@pytest.fixture
def world(transactional_db, monkeypatch):
    """A project led by the fuzzing lead: tasks, blockers, threads, a review assignment, an
    ask_human run and an export job, so generated requests also reach real objects."""
    # The export jobs stay queued: a generated ``?wait=`` on one waits 50 ms at most, not 30 s.
    monkeypatch.setattr("hilbench_annotate.jobs.JOB_WAIT_MAX_S", 0.05)
    project = ProjectFactory(name="Fuzzed benchmark", slug="fuzzed")
    lead = UserFactory(username="fuzz-lead")
    author = UserFactory(username="fuzz-author")
    for role in (Role.LEAD, Role.AUTHOR, Role.REVIEWER, Role.AUDITOR, Role.HARNESS):
        MembershipFactory(project=project, user=lead, role=role)
    MembershipFactory(project=project, user=author, role=Role.AUTHOR)
    ids = []
    for n in range(3):
        task = clean_task(project, author, title=f"Fuzzed task {n}")
        if n == 2:
            place(task, 3)
        blocker = task.blockers.order_by("position").first()
        assignment = ReviewAssignment.objects.create(
            task=task,
            layer=3,
            reviewer=lead,
            assigned_by=lead,
            expires_at=timezone.now() + timezone.timedelta(hours=1),
        )
        ids.append(
            {
                "project_id": project.pk,
                "task_id": task.pk,
                "blocker_id": blocker.pk,
                "question_id": blocker.trigger_questions.first().pk,
                "comment_id": Comment.objects.create(task=task, author=lead, body="Why?").pk,
                "assignment_id": assignment.pk,
                "job_id": ExportJob.objects.create(project=project, created_by=lead).pk,
            }
        )
    ask_human_run_start(task=task, actor=lead, label="fuzz")
    _token, key = api_token_create(user=lead, name="schemathesis")
    return SimpleNamespace(token=key, ids=ids)


@pytest.fixture
def api_schema(world):
    # Requests go through the real WSGI handler, which closes "old" connections at the start
    # and end of each request; the test client does not, and neither may we: the test's
    # connection is the only one that sees the world.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        schema = schemathesis.openapi.from_wsgi(
            "/api/schema/", WSGIHandler(), headers={"Authorization": f"Bearer {world.token}"}
        )
        schema.config.headers = {"Authorization": f"Bearer {world.token}"}
        yield schema
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _operations() -> list[str]:
    """Operation labels for the test ids, from the same generator that serves /api/schema/
    (collection has no database, so the served copy is loaded, and compared, per test)."""
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    return sorted(
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    )


@pytest.mark.parametrize("label", _operations())
def test_no_operation_answers_with_a_server_error(api_schema, world, label):
    operation = api_schema.find_operation_by_label(label)
    assert operation is not None, f"{label} is not in the schema served at /api/schema/"
    names = {p.name for p in operation.path_parameters}
    # Generated ids, and the world's real ones (with everything else generated).
    fixed = [None] + [{k: v for k, v in ids.items() if k in names} for ids in world.ids]
    strategy = st.one_of(
        *(
            operation.as_strategy(mode, path_parameters=path)
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
            for path in (fixed if names else [None])
        )
    )
    seen = {"calls": 0}

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def run(case):
        response = case.call(headers={"Authorization": f"Bearer {world.token}"})
        seen["calls"] += 1
        case.validate_response(response, checks=[not_a_server_error])

    run()
    assert seen["calls"] > 0


# --- the server errors schemathesis found, pinned -------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "method, url, body, expected",
    [
        ("get", "/api/tasks/99999999999999999999/", None, 404),
        ("get", "/api/blockers/99999999999999999999/", None, 404),
        ("post", "/api/notifications/read", {"ids": [10**20]}, 400),
        ("post", "/api/ask_human/runs", {"task": 10**20}, 404),
    ],
)
def test_ids_past_64_bits_are_client_errors(lead, method, url, body, expected):
    client = APIClient()
    client.force_authenticate(lead)

    response = getattr(client, method)(url, body, format="json")

    assert response.status_code == expected, response.content[:200]


@pytest.mark.django_db
def test_blocker_patch_without_expected_version_is_a_400(author, project):
    task = clean_task(project, author)
    client = APIClient()
    client.force_authenticate(author)

    response = client.patch(f"/api/blockers/{task.blockers.first().pk}/", {}, format="json")

    assert response.status_code == 400
    assert "expected_version" in response.json()
