"""Every API operation × every role: the exact status class each one gets.

The operations are enumerated from the OpenAPI schema (and the URL resolver, for the
endpoints the schema leaves out), so an endpoint added without a row in ``MATRIX`` fails
``test_every_api_operation_has_a_row``. Each case builds the same small world — a project
with one member per role, a draft task that passes lint, a task in review at the registry
audit held by the auditor, a thread, an ask_human run of the harness, an export job — and
makes one request that would succeed for a role that is allowed.

Classes: ``2xx`` (allowed), ``401`` (no credentials), ``403`` (may see, may not do),
``404`` (may not even see: other projects' objects, and tasks for the harness).
A refused request must also leave the fixture task as it was.
"""

import io
import json
from types import SimpleNamespace

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from exchange.models import ExportJob
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role
from judge.services import ask_human_run_start
from review.models import Comment, ReviewAssignment

from .factories import MembershipFactory, UserFactory
from .review.test_api import clean_task, place

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "outsider", "author", "reviewer", "auditor", "lead", "harness")

# One row per operation; columns in ROLES order.
# fmt: off
MATRIX: dict[tuple[str, str], str] = {
    # --- core: projects, tasks, blockers, trigger questions
    ("GET", "/api/projects/"):                          "401 2xx 2xx 2xx 2xx 2xx 2xx",
    ("GET", "/api/tasks/"):                             "401 2xx 2xx 2xx 2xx 2xx 2xx",
    ("GET", "/api/tasks/{task_id}/"):                   "401 404 2xx 2xx 2xx 2xx 404",
    ("PATCH", "/api/tasks/{task_id}/"):                 "401 404 2xx 403 403 2xx 404",
    ("GET", "/api/tasks/{task_id}/blockers/"):          "401 404 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/tasks/{task_id}/blockers/"):         "401 404 2xx 403 403 2xx 404",
    ("GET", "/api/blockers/{blocker_id}/"):             "401 404 2xx 2xx 2xx 2xx 404",
    ("PATCH", "/api/blockers/{blocker_id}/"):           "401 404 2xx 403 403 2xx 404",
    ("DELETE", "/api/blockers/{blocker_id}/"):          "401 404 2xx 403 403 2xx 404",
    ("POST", "/api/blockers/{blocker_id}/trigger-questions/"):
                                                        "401 404 2xx 403 403 2xx 404",
    ("PATCH", "/api/trigger-questions/{question_id}/"): "401 404 2xx 403 403 2xx 404",
    ("DELETE", "/api/trigger-questions/{question_id}/"):"401 404 2xx 403 403 2xx 404",
    # --- review
    ("GET", "/api/projects/{project_id}/pipeline/"):    "401 404 2xx 2xx 2xx 2xx 404",
    ("PUT", "/api/projects/{project_id}/pipeline/"):    "401 404 403 403 403 2xx 404",
    ("POST", "/api/tasks/{task_id}/submit"):            "401 404 2xx 403 403 2xx 404",
    ("GET", "/api/review/queue"):                       "401 2xx 2xx 2xx 2xx 2xx 2xx",
    ("POST", "/api/review/take-next"):                  "401 404 403 403 2xx 403 404",
    ("POST", "/api/tasks/{task_id}/assign"):            "401 404 403 403 403 2xx 404",
    ("POST", "/api/assignments/{assignment_id}/release"):
                                                        "401 404 403 403 2xx 2xx 404",
    ("GET", "/api/tasks/{task_id}/decisions"):          "401 404 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/tasks/{task_id}/decisions"):         "401 404 403 403 2xx 403 404",
    ("GET", "/api/tasks/{task_id}/comments"):           "401 404 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/tasks/{task_id}/comments"):          "401 404 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/comments/{comment_id}/resolve"):     "401 404 2xx 2xx 2xx 2xx 404",
    ("GET", "/api/notifications"):                      "401 2xx 2xx 2xx 2xx 2xx 2xx",
    ("POST", "/api/notifications/read"):                "401 2xx 2xx 2xx 2xx 2xx 2xx",
    # --- judge: ask_human for harnesses (leads may start runs to try them)
    ("POST", "/api/ask_human/runs"):                    "401 404 403 403 403 2xx 2xx",
    ("POST", "/api/ask_human"):                         "401 404 403 403 403 403 2xx",
    # MCP answers every JSON-RPC call with 200; refusals are tool errors (test below).
    ("POST", "/api/mcp"):                               "401 2xx 2xx 2xx 2xx 2xx 2xx",
    # --- evaluation
    ("POST", "/api/reward"):                            "401 404 403 403 403 403 2xx",
    ("GET", "/api/projects/{project_id}/leaderboard"):  "401 404 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/projects/{project_id}/results"):     "401 404 403 403 403 2xx 404",
    ("GET", "/api/tasks/{task_id}/selection"):          "401 404 2xx 2xx 2xx 2xx 404",
    # --- exports (leads only; a job of a project you do not lead does not exist for you)
    ("POST", "/api/exports/"):                          "401 404 403 403 403 2xx 404",
    ("GET", "/api/exports/{job_id}/"):                  "401 404 404 404 404 2xx 404",
    # --- outside the schema: the schema and its documentation page
    ("GET", "/api/schema/"):                            "401 2xx 2xx 2xx 2xx 2xx 2xx",
    ("GET", "/api/docs/"):                              "401 2xx 2xx 2xx 2xx 2xx 2xx",
}
# fmt: on
NOT_IN_SCHEMA = {("GET", "/api/schema/"), ("GET", "/api/docs/")}


# --- the world -------------------------------------------------------------------------------


@pytest.fixture
def world(project, author, reviewer, auditor, lead, harness, outsider, settings):
    settings.JUDGE_BACKEND = "embedded"
    task = clean_task(project, author, title="Loans settled cleanly")
    blocker = task.blockers.order_by("position").first()
    question = blocker.trigger_questions.order_by("position").first()
    # A second task, in review at layer 3 (registry audit, auditor role), held by the auditor.
    in_review = place(clean_task(project, author, title="Loans in review"), 3)
    assignment = ReviewAssignment.objects.create(
        task=in_review,
        layer=3,
        reviewer=auditor,
        assigned_by=lead,
        expires_at=timezone.now() + timezone.timedelta(hours=1),
    )
    auditor2 = UserFactory(username="auditor2")
    MembershipFactory(project=project, user=auditor2, role=Role.AUDITOR)
    comment = Comment.objects.create(task=task, author=lead, body="Is the status list complete?")
    run = ask_human_run_start(task=task, actor=harness, label="matrix")
    job = ExportJob.objects.create(project=project, created_by=lead)
    return SimpleNamespace(
        project=project,
        task=task,
        blocker=blocker,
        question=question,
        in_review=in_review,
        assignment=assignment,
        comment=comment,
        run=run,
        job=job,
        users={
            "outsider": outsider,
            "author": author,
            "reviewer": reviewer,
            "auditor": auditor,
            "lead": lead,
            "harness": harness,
        },
    )


def _version(task) -> int:
    return Task.objects.values_list("version", flat=True).get(pk=task.pk)


def _pipeline_body(w) -> dict:
    from review.services import pipeline_ensure, policy_for

    policy = policy_for(w.project)
    layers = [
        {
            "name": layer.name,
            "role": layer.role,
            "self_check": layer.self_check,
            "checklist": layer.checklist,
            "gates": layer.gates,
        }
        for layer in pipeline_ensure(w.project)
    ]
    return {
        "layers": layers,
        "lock_minutes": policy.lock_minutes,
        "reject_reasons": policy.reject_reasons,
    }


def _results_file(w):
    records = [
        {"task": w.task.pk, "mode": "baseline", "pass": 1, "resolved": False},
        {"task": w.task.pk, "mode": "full_info", "pass": 1, "resolved": True},
    ]
    upload = io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())
    upload.name = "results.jsonl"
    return upload


# (method, path) -> w -> (url, body, format)
REQUESTS = {
    ("GET", "/api/projects/"): lambda w: ("/api/projects/", None, None),
    ("GET", "/api/tasks/"): lambda w: ("/api/tasks/", None, None),
    ("GET", "/api/tasks/{task_id}/"): lambda w: (f"/api/tasks/{w.task.pk}/", None, None),
    ("PATCH", "/api/tasks/{task_id}/"): lambda w: (
        f"/api/tasks/{w.task.pk}/",
        {"expected_version": _version(w.task), "title": "Renamed"},
        "json",
    ),
    ("GET", "/api/tasks/{task_id}/blockers/"): lambda w: (
        f"/api/tasks/{w.task.pk}/blockers/",
        None,
        None,
    ),
    ("POST", "/api/tasks/{task_id}/blockers/"): lambda w: (
        f"/api/tasks/{w.task.pk}/blockers/",
        {
            "expected_version": _version(w.task),
            "key": "loan_currency",
            "type": "question",
            "subtype": "unclear_value",
            "description": "The currency of the amounts is not said.",
            "resolution": "Amounts are in CZK.",
            "trigger_questions": ["Which currency are the amounts in?"],
        },
        "json",
    ),
    ("GET", "/api/blockers/{blocker_id}/"): lambda w: (
        f"/api/blockers/{w.blocker.pk}/",
        None,
        None,
    ),
    ("PATCH", "/api/blockers/{blocker_id}/"): lambda w: (
        f"/api/blockers/{w.blocker.pk}/",
        {"expected_version": _version(w.task), "description": "Changed description."},
        "json",
    ),
    ("DELETE", "/api/blockers/{blocker_id}/"): lambda w: (
        f"/api/blockers/{w.blocker.pk}/?expected_version={_version(w.task)}",
        None,
        None,
    ),
    ("POST", "/api/blockers/{blocker_id}/trigger-questions/"): lambda w: (
        f"/api/blockers/{w.blocker.pk}/trigger-questions/",
        {"expected_version": _version(w.task), "text": "Is status A the clean one?"},
        "json",
    ),
    ("PATCH", "/api/trigger-questions/{question_id}/"): lambda w: (
        f"/api/trigger-questions/{w.question.pk}/",
        {"expected_version": _version(w.task), "text": "Which status is clean?"},
        "json",
    ),
    ("DELETE", "/api/trigger-questions/{question_id}/"): lambda w: (
        f"/api/trigger-questions/{w.question.pk}/?expected_version={_version(w.task)}",
        None,
        None,
    ),
    ("GET", "/api/projects/{project_id}/pipeline/"): lambda w: (
        f"/api/projects/{w.project.pk}/pipeline/",
        None,
        None,
    ),
    ("PUT", "/api/projects/{project_id}/pipeline/"): lambda w: (
        f"/api/projects/{w.project.pk}/pipeline/",
        _pipeline_body(w),
        "json",
    ),
    ("POST", "/api/tasks/{task_id}/submit"): lambda w: (
        f"/api/tasks/{w.task.pk}/submit",
        {"expected_version": _version(w.task)},
        "json",
    ),
    ("GET", "/api/review/queue"): lambda w: ("/api/review/queue", None, None),
    ("POST", "/api/review/take-next"): lambda w: (
        "/api/review/take-next",
        {"project": w.project.pk, "layer": 3},
        "json",
    ),
    ("POST", "/api/tasks/{task_id}/assign"): lambda w: (
        f"/api/tasks/{w.in_review.pk}/assign",
        {"reviewer": "auditor2"},
        "json",
    ),
    ("POST", "/api/assignments/{assignment_id}/release"): lambda w: (
        f"/api/assignments/{w.assignment.pk}/release",
        None,
        None,
    ),
    ("GET", "/api/tasks/{task_id}/decisions"): lambda w: (
        f"/api/tasks/{w.in_review.pk}/decisions",
        None,
        None,
    ),
    ("POST", "/api/tasks/{task_id}/decisions"): lambda w: (
        f"/api/tasks/{w.in_review.pk}/decisions",
        {
            "outcome": "request_changes",
            "revision": 1,
            "summary": "Say which status is clean.",
        },
        "json",
    ),
    ("GET", "/api/tasks/{task_id}/comments"): lambda w: (
        f"/api/tasks/{w.task.pk}/comments",
        None,
        None,
    ),
    ("POST", "/api/tasks/{task_id}/comments"): lambda w: (
        f"/api/tasks/{w.task.pk}/comments",
        {"body": "Looks right to me."},
        "json",
    ),
    ("POST", "/api/comments/{comment_id}/resolve"): lambda w: (
        f"/api/comments/{w.comment.pk}/resolve",
        {"resolved": True},
        "json",
    ),
    ("GET", "/api/notifications"): lambda w: ("/api/notifications", None, None),
    ("POST", "/api/notifications/read"): lambda w: ("/api/notifications/read", {}, "json"),
    ("POST", "/api/ask_human/runs"): lambda w: (
        "/api/ask_human/runs",
        {"task": w.task.pk, "label": "try"},
        "json",
    ),
    ("POST", "/api/ask_human"): lambda w: (
        "/api/ask_human",
        {"run": w.run.pk, "question": "Which loan status marks a clean settlement?"},
        "json",
    ),
    ("POST", "/api/mcp"): lambda w: (
        "/api/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        "json",
    ),
    ("POST", "/api/reward"): lambda w: ("/api/reward", {"run": w.run.pk}, "json"),
    ("GET", "/api/projects/{project_id}/leaderboard"): lambda w: (
        f"/api/projects/{w.project.pk}/leaderboard",
        None,
        None,
    ),
    ("POST", "/api/projects/{project_id}/results"): lambda w: (
        f"/api/projects/{w.project.pk}/results",
        {"file": _results_file(w), "model": "model-a"},
        "multipart",
    ),
    ("GET", "/api/tasks/{task_id}/selection"): lambda w: (
        f"/api/tasks/{w.task.pk}/selection",
        None,
        None,
    ),
    ("POST", "/api/exports/"): lambda w: ("/api/exports/", {"project": w.project.pk}, "json"),
    ("GET", "/api/exports/{job_id}/"): lambda w: (f"/api/exports/{w.job.pk}/", None, None),
    ("GET", "/api/schema/"): lambda w: ("/api/schema/", None, None),
    ("GET", "/api/docs/"): lambda w: ("/api/docs/", None, None),
}


def _status_class(code: int) -> str:
    return "2xx" if 200 <= code < 300 else str(code)


def _task_state(task) -> tuple:
    row = Task.objects.get(pk=task.pk)
    return (row.version, row.title, row.status, row.blocker_count)


CASES = [
    pytest.param(op, role, expected, id=f"{op[0]} {op[1]} as {role}")
    for op, row in MATRIX.items()
    for role, expected in zip(ROLES, row.split(), strict=True)
]


@pytest.mark.parametrize("operation, role, expected", CASES)
def test_permission_matrix(world, operation, role, expected):
    client = APIClient()
    if role != "anonymous":
        client.force_authenticate(world.users[role])
    url, body, fmt = REQUESTS[operation](world)
    before = _task_state(world.task), _task_state(world.in_review)

    method = getattr(client, operation[0].lower())
    response = method(url, body, format=fmt) if body is not None else method(url)

    got = _status_class(response.status_code)
    assert got == expected, f"{role}: {response.status_code} {response.content[:300]!r}"
    if expected != "2xx":
        assert (_task_state(world.task), _task_state(world.in_review)) == before


# --- a hidden object answers exactly as a missing one -------------------------------------------


def _missing_twin(url: str) -> str:
    """``url`` with every id in its path replaced by one that exists nowhere."""
    path, _, query = url.partition("?")
    match = resolve(path)
    twin = reverse(match.url_name, kwargs={name: 987654 for name in match.kwargs})
    return twin + ("?" + query if query else "")


HIDDEN_FROM_OUTSIDER = [
    pytest.param(op, id=f"{op[0]} {op[1]}")
    for op, row in MATRIX.items()
    if "{" in op[1] and dict(zip(ROLES, row.split(), strict=True))["outsider"] == "404"
]


@pytest.mark.parametrize("operation", HIDDEN_FROM_OUTSIDER)
def test_a_hidden_object_answers_exactly_as_a_missing_one(world, operation):
    """The red-team's finding: a comment or assignment of another project answered "No such
    task." where a missing one answered "No such comment.", so ids could be probed. Whatever
    the id names, an object the caller may not see gets the same status and body as none."""
    url, body, fmt = REQUESTS[operation](world)
    answers = []
    for target in (url, _missing_twin(url)):
        client = APIClient()
        client.force_authenticate(world.users["outsider"])
        method = getattr(client, operation[0].lower())
        response = method(target, body, format=fmt) if body is not None else method(target)
        answers.append((response.status_code, response.content))

    assert answers[0] == answers[1]
    assert answers[0][0] == 404


# --- the table covers every operation ------------------------------------------------------


def _schema_operations() -> set[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }


def _api_url_patterns(resolver=None, prefix="") -> set[str]:
    """Every route under /api/ in the URL configuration, with <converters> as {names}."""
    import re

    resolver = resolver or get_resolver()
    found = set()
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found |= _api_url_patterns(entry, route)
        elif isinstance(entry, URLPattern) and route.startswith("api/"):
            found.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
    return found


def test_every_api_operation_has_a_row():
    operations = _schema_operations() | NOT_IN_SCHEMA

    assert sorted(operations - set(MATRIX)) == [], "add these operations to MATRIX"
    assert sorted(set(MATRIX) - operations) == [], "MATRIX names operations that are gone"
    assert set(REQUESTS) == set(MATRIX)


def test_every_api_route_is_in_the_schema_or_listed():
    """A view excluded from the schema (or not a DRF view at all) cannot hide from the
    matrix: every /api/ route must appear in MATRIX."""
    routes = _api_url_patterns()
    covered = {path for _method, path in MATRIX}

    assert sorted(routes - covered) == []


# --- what the 200s of the MCP endpoint hide ----------------------------------------------------


@pytest.mark.parametrize(
    "role, refused",
    [
        ("outsider", True),
        ("author", True),
        ("reviewer", True),
        ("auditor", True),
        ("lead", False),
        ("harness", False),
    ],
)
def test_mcp_start_run_is_a_tool_error_for_roles_without_ask_human(world, role, refused):
    client = APIClient()
    client.force_authenticate(world.users[role])
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "start_ask_human_run", "arguments": {"task": world.task.pk}},
    }

    response = client.post("/api/mcp", message, format="json")

    assert response.status_code == 200
    assert response.json()["result"]["isError"] is refused


def test_mcp_ask_on_another_callers_run_is_a_tool_error(world):
    client = APIClient()
    client.force_authenticate(world.users["lead"])
    message = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "tools/call",
        "params": {"name": "ask_human", "arguments": {"run": world.run.pk, "question": "Why?"}},
    }

    response = client.post("/api/mcp", message, format="json")

    assert response.json()["result"]["isError"] is True
    assert "another caller" in response.json()["result"]["content"][0]["text"]
