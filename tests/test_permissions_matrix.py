"""Every API operation, page and htmx fragment × every role: the exact status class each gets.

The operations are enumerated from the OpenAPI schema (and the URL resolver, for the
endpoints the schema leaves out), so an endpoint added without a row in ``MATRIX`` fails
``test_every_api_operation_has_a_row``. Each case starts from the same small world — a project
with one member per role and a second author, ``author2``, who wrote none of its tasks (what
"the task's author or a lead" tells apart), a draft task that passes lint, a task in review at
the registry audit held by the auditor, a thread, an ask_human run of the harness, an export
job, built once for the module, each case's writes rolled back after it — and makes one
request that would succeed for a role that is allowed.

Classes: ``2xx`` (allowed), ``401`` (no credentials), ``403`` (may see, may not do),
``404`` (may not even see: other projects' objects, and tasks for the harness).
A refused request must also leave the fixture task as it was.

The second half does the same for HTML (``HTML_MATRIX``, every route of the resolver outside
/api/ and /admin/), and both halves check that an object of another project answers exactly
as one that does not exist.
"""

import io
import json
import re
from functools import cached_property
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from exchange.models import ExportJob, ImportJob
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role
from judge.services import ask_human_run_start
from review.models import Comment, ReviewAssignment, ReviewDecision

from .factories import MembershipFactory, ProjectFactory, UserFactory
from .review.test_api import clean_task, place

pytestmark = pytest.mark.django_db

# author2: an author of the same project who is not the task's author (the tasks of the world
# are all author's), the case "the task's author or a lead" rests on.
ROLES = ("anonymous", "outsider", "author", "author2", "reviewer", "auditor", "lead", "harness")

# One row per operation; columns in ROLES order.
# fmt: off
MATRIX: dict[tuple[str, str], str] = {
    # --- core: projects, tasks, blockers, trigger questions
    ("GET", "/api/projects/"):                          "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    ("GET", "/api/tasks/"):                             "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    ("GET", "/api/tasks/{task_id}/"):                   "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("PATCH", "/api/tasks/{task_id}/"):                 "401 404 2xx 403 403 403 2xx 404",
    ("GET", "/api/tasks/{task_id}/blockers/"):          "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/tasks/{task_id}/blockers/"):         "401 404 2xx 403 403 403 2xx 404",
    ("GET", "/api/blockers/{blocker_id}/"):             "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("PATCH", "/api/blockers/{blocker_id}/"):           "401 404 2xx 403 403 403 2xx 404",
    ("DELETE", "/api/blockers/{blocker_id}/"):          "401 404 2xx 403 403 403 2xx 404",
    ("POST", "/api/blockers/{blocker_id}/trigger-questions/"):
                                                        "401 404 2xx 403 403 403 2xx 404",
    ("PATCH", "/api/trigger-questions/{question_id}/"): "401 404 2xx 403 403 403 2xx 404",
    ("DELETE", "/api/trigger-questions/{question_id}/"):"401 404 2xx 403 403 403 2xx 404",
    # --- review
    ("GET", "/api/projects/{project_id}/pipeline/"):    "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("PUT", "/api/projects/{project_id}/pipeline/"):    "401 404 403 403 403 403 2xx 404",
    ("POST", "/api/tasks/{task_id}/submit"):            "401 404 2xx 403 403 403 2xx 404",
    ("GET", "/api/review/queue"):                       "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    ("POST", "/api/review/take-next"):                  "401 404 403 403 403 2xx 403 404",
    ("POST", "/api/tasks/{task_id}/assign"):            "401 404 403 403 403 403 2xx 404",
    ("POST", "/api/assignments/{assignment_id}/release"):
                                                        "401 404 403 403 403 2xx 2xx 404",
    ("GET", "/api/tasks/{task_id}/decisions"):          "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/tasks/{task_id}/decisions"):         "401 404 403 403 403 2xx 403 404",
    # Only the reviewer who decided (the auditor here) withdraws a decision.
    ("POST", "/api/decisions/{decision_id}/withdraw"):  "401 404 403 403 403 2xx 403 404",
    ("GET", "/api/tasks/{task_id}/comments"):           "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/tasks/{task_id}/comments"):          "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/comments/{comment_id}/resolve"):     "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("GET", "/api/notifications"):                      "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    ("POST", "/api/notifications/read"):                "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    # --- judge: ask_human for harnesses (leads may start runs to try them)
    ("POST", "/api/ask_human/runs"):                    "401 404 403 403 403 403 2xx 2xx",
    ("POST", "/api/ask_human"):                         "401 404 403 403 403 403 403 2xx",
    # MCP answers every JSON-RPC call with 200; refusals are tool errors (test below).
    ("POST", "/api/mcp"):                               "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    # --- evaluation
    ("POST", "/api/reward"):                            "401 404 403 403 403 403 403 2xx",
    ("GET", "/api/projects/{project_id}/leaderboard"):  "401 404 2xx 2xx 2xx 2xx 2xx 404",
    ("POST", "/api/projects/{project_id}/results"):     "401 404 403 403 403 403 2xx 404",
    ("GET", "/api/tasks/{task_id}/selection"):          "401 404 2xx 2xx 2xx 2xx 2xx 404",
    # --- bulk import (authors and leads send records; the project's readers follow the job)
    ("POST", "/api/projects/{project_id}/tasks/import"): "401 404 2xx 2xx 403 403 2xx 404",
    ("GET", "/api/imports/{job_id}/"):                  "401 404 2xx 2xx 2xx 2xx 2xx 404",
    # --- exports (leads only; a job of a project you do not lead does not exist for you)
    ("POST", "/api/exports/"):                          "401 404 403 403 403 403 2xx 404",
    ("GET", "/api/exports/{job_id}/"):                  "401 404 404 404 404 404 2xx 404",
    ("GET", "/api/exports/{job_id}/download"):          "401 404 404 404 404 404 2xx 404",
    # --- data for analysis: every reader of the project (issue 45, item 7)
    ("GET", "/api/projects/{project_id}/data/{table}"): "401 404 2xx 2xx 2xx 2xx 2xx 404",
    # --- outside the schema: the schema and its documentation page
    ("GET", "/api/schema/"):                            "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
    ("GET", "/api/docs/"):                              "401 2xx 2xx 2xx 2xx 2xx 2xx 2xx",
}
# fmt: on
NOT_IN_SCHEMA = {("GET", "/api/schema/"), ("GET", "/api/docs/")}


# --- the world -------------------------------------------------------------------------------


# The world is built once per module (``_module_world``), inside a transaction that stays open
# for the whole module and is rolled back at its end; each test's own transaction (the ``db``
# of pytest-django) is a savepoint inside it, rolled back after the test, so every case starts
# from the same world. Each test gets its own Python objects of it (``world``), read afresh
# from the database: what one test does to an instance no other test sees.


def _member(project, username, role):
    """tests/conftest.py's ``_member``: a user holding ``role`` in ``project``."""
    user = UserFactory(username=username)
    MembershipFactory(project=project, user=user, role=role)
    return user


def _build_world() -> SimpleNamespace:
    # What tests/conftest.py's fixtures project, author, reviewer, auditor, lead, harness and
    # outsider make, in the order the function-scoped world asked for them.
    project = ProjectFactory(name="HiL-Bench SQL v2", slug="hilbench-sql-v2")
    author = _member(project, "author", Role.AUTHOR)
    reviewer = _member(project, "reviewer", Role.REVIEWER)
    auditor = _member(project, "auditor", Role.AUDITOR)
    lead = _member(project, "lead", Role.LEAD)
    harness = _member(project, "harness", Role.HARNESS)
    # An author in another project only.
    outsider = _member(
        ProjectFactory(name="Other team", slug="other-team"), "outsider", Role.AUTHOR
    )

    task = clean_task(project, author, title="Loans settled cleanly")
    blocker = task.blockers.order_by("position").first()
    question = blocker.trigger_questions.order_by("position").first()
    # A second task, in review at layer 3 (registry audit, auditor role), held by the auditor.
    # (Its lock expires an hour after the world is built: the module takes minutes.)
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
    author2 = UserFactory(username="author2")
    MembershipFactory(project=project, user=author2, role=Role.AUTHOR)
    comment = Comment.objects.create(task=task, author=lead, body="Is the status list complete?")
    run = ask_human_run_start(task=task, actor=harness, label="matrix")
    job = ExportJob.objects.create(project=project, created_by=lead)
    import_job = ImportJob.objects.create(
        project=project, kind="bird", created_by=author, upload_dir="x"
    )
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
        import_job=import_job,
        users={
            "outsider": outsider,
            "author": author,
            "author2": author2,
            "reviewer": reviewer,
            "auditor": auditor,
            "lead": lead,
            "harness": harness,
        },
    )


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The world's rows, made once for the module in a transaction rolled back at its end."""
    from judge.services import forget_process_caches

    store = tmp_path_factory.mktemp("matrix-world")
    # What the function-scoped autouse fixtures (tests/conftest.py's _judge_caches and
    # _stores, and _embedded_judge below) set for a test, for the time the world is built.
    built_as = override_settings(
        JUDGE_BACKEND="embedded",
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        DATABASE_STORE=store / "databases",
        REPOSITORY_STORE=store / "repositories",
        UPLOAD_STORE=store / "uploads",
        BUNDLE_STORE=store / "bundles",
    )
    with django_db_blocker.unblock(), transaction.atomic():
        forget_process_caches()
        with built_as:
            built = _build_world()
        yield built
        transaction.set_rollback(True)


@pytest.fixture(autouse=True)
def _embedded_judge(settings):
    settings.JUDGE_BACKEND = "embedded"


def _fresh(obj):
    return type(obj)._default_manager.get(pk=obj.pk)


@pytest.fixture
def world(_module_world, db):
    """The module's world as this test's own objects, read from the database."""
    w = _module_world
    users = get_user_model()._default_manager.in_bulk([u.pk for u in w.users.values()])
    return SimpleNamespace(
        project=_fresh(w.project),
        task=_fresh(w.task),
        blocker=_fresh(w.blocker),
        question=_fresh(w.question),
        in_review=_fresh(w.in_review),
        assignment=_fresh(w.assignment),
        comment=_fresh(w.comment),
        run=_fresh(w.run),
        job=_fresh(w.job),
        import_job=_fresh(w.import_job),
        users={role: users[user.pk] for role, user in w.users.items()},
    )


def _version(task) -> int:
    return Task.objects.values_list("version", flat=True).get(pk=task.pk)


def _pipeline_body(w) -> dict:
    from review.selectors import policy_for
    from review.services import pipeline_ensure

    policy = policy_for(project=w.project)
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
    ("POST", "/api/decisions/{decision_id}/withdraw"): lambda w: (
        f"/api/decisions/{_auditor_decision(w).pk}/withdraw",
        None,
        None,
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
    ("GET", "/api/projects/{project_id}/data/{table}"): lambda w: (
        f"/api/projects/{w.project.pk}/data/blockers?fmt=csv",
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
    ("POST", "/api/projects/{project_id}/tasks/import"): lambda w: (
        f"/api/projects/{w.project.pk}/tasks/import",
        [{"question_id": 1, "db_id": "library", "question": "How many?", "SQL": "SELECT 1"}],
        "json",
    ),
    ("GET", "/api/imports/{job_id}/"): lambda w: (f"/api/imports/{w.import_job.pk}/", None, None),
    ("POST", "/api/exports/"): lambda w: ("/api/exports/", {"project": w.project.pk}, "json"),
    ("GET", "/api/exports/{job_id}/"): lambda w: (f"/api/exports/{w.job.pk}/", None, None),
    ("GET", "/api/exports/{job_id}/download"): lambda w: (
        f"/api/exports/{_bundle_made(w.job).pk}/download",
        None,
        None,
    ),
    ("GET", "/api/schema/"): lambda w: ("/api/schema/", None, None),
    ("GET", "/api/docs/"): lambda w: ("/api/docs/", None, None),
}


def _bundle_made(job: ExportJob) -> ExportJob:
    """The export job finished, its bundle's file in this test's store."""
    from django.conf import settings

    settings.BUNDLE_STORE.mkdir(parents=True, exist_ok=True)
    (settings.BUNDLE_STORE / "matrix-api.tar.gz").write_bytes(b"\x1f\x8b not really a bundle")
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportJob.Status.SUCCEEDED, file_path="matrix-api.tar.gz"
    )
    return job


def _auditor_decision(w) -> ReviewDecision:
    """The auditor asks for changes on the task they hold at layer 3: theirs to withdraw
    (made once: a request asked again finds it)."""
    from review.services import review_decide

    made = ReviewDecision.objects.filter(task=w.in_review, reviewer=w.users["auditor"]).first()
    return made or review_decide(
        actor=w.users["auditor"],
        task_id=w.in_review.pk,
        outcome="request_changes",
        revision_number=1,
        summary="Say which status is clean.",
    )


def _second_revision(w) -> Task:
    """The draft task renamed by its author (revision 2): revision 1 is there to restore."""
    from hilbench_annotate.services import task_update

    if w.task.revisions.count() == 1:
        task_update(
            task=w.task, actor=w.users["author"], expected_version=_version(w.task), title="Renamed"
        )
    return w.task


def _waiting_at(w, layer: int) -> Task:
    """Another of author's tasks, in review at ``layer``; at peer review (2) author2 holds it."""
    task = place(clean_task(w.project, w.users["author"], title=f"Loans at layer {layer}"), layer)
    if layer == 2:
        ReviewAssignment.objects.create(
            task=task,
            layer=2,
            reviewer=w.users["author2"],
            assigned_by=w.users["lead"],
            expires_at=timezone.now() + timezone.timedelta(hours=1),
        )
    return task


DECISION = {"outcome": "request_changes", "revision": 1, "summary": "Say which status is clean."}

# Rows one request per operation cannot show: the same operation where the task's own author
# and another author are told apart the other way round — the author self-check (layer 1) is
# the task's author's alone, and nobody peer-reviews (layer 2) a task they wrote.
# (method, path, what) -> columns in ROLES order.
# fmt: off
MATRIX_VARIANTS: dict[tuple[str, str, str], str] = {
    ("POST", "/api/tasks/{task_id}/decisions", "self-check"):
                                                        "401 404 2xx 403 403 403 403 404",
    ("POST", "/api/tasks/{task_id}/decisions", "peer review"):
                                                        "401 404 403 2xx 403 403 403 404",
}
# fmt: on
REQUEST_VARIANTS = {
    ("POST", "/api/tasks/{task_id}/decisions", "self-check"): lambda w: (
        f"/api/tasks/{_waiting_at(w, 1).pk}/decisions",
        DECISION,
        "json",
    ),
    ("POST", "/api/tasks/{task_id}/decisions", "peer review"): lambda w: (
        f"/api/tasks/{_waiting_at(w, 2).pk}/decisions",
        DECISION,
        "json",
    ),
}


def _status_class(code: int) -> str:
    return "2xx" if 200 <= code < 300 else str(code)


def _task_state(task) -> tuple:
    row = Task.objects.get(pk=task.pk)
    return (row.version, row.title, row.status, row.blocker_count)


CASES = [
    pytest.param(op, role, expected, id=f"{' '.join(op)} as {role}")
    for op, row in (MATRIX | MATRIX_VARIANTS).items()
    for role, expected in zip(ROLES, row.split(), strict=True)
]


@pytest.mark.parametrize("operation, role, expected", CASES)
def test_permission_matrix(world, operation, role, expected):
    client = APIClient()
    if role != "anonymous":
        client.force_authenticate(world.users[role])
    url, body, fmt = (REQUESTS | REQUEST_VARIANTS)[operation](world)
    before = _task_state(world.task), _task_state(world.in_review), ReviewDecision.objects.count()

    method = getattr(client, operation[0].lower())
    with CaptureQueriesContext(connection) as queries:
        response = method(url, body, format=fmt) if body is not None else method(url)

    if operation[0] == "GET":  # reads never write
        assert not _writes(queries), _writes(queries)
    got = _status_class(response.status_code)
    assert got == expected, f"{role}: {response.status_code} {response.content[:300]!r}"
    if expected != "2xx":
        after = _task_state(world.task), _task_state(world.in_review)
        assert (*after, ReviewDecision.objects.count()) == before


# --- a hidden object answers exactly as a missing one -------------------------------------------


def _missing_twin(url: str) -> str:
    """``url`` with every id in its path (``*_id``) replaced by one that exists nowhere."""
    path, _, query = url.partition("?")
    match = resolve(path)
    kwargs = {k: 987654 if k.endswith("_id") else v for k, v in match.kwargs.items()}
    twin = reverse(match.url_name, kwargs=kwargs)
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
        ("author2", True),
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


# === HTML: every page and htmx fragment × every role ==========================================
#
# Every route outside /api/ and /admin/ (Django's own, staff only) is enumerated from the URL
# resolver; ``test_every_html_route_has_a_row`` fails when one has no row here, and
# ``test_methods_without_a_row_are_refused`` when a view answers a method the table does not
# list. Classes: ``200`` (2xx), ``302`` (a redirect within the app: done, or sent back to the
# page with a message), ``login`` (anonymous: to the login page), ``400`` (the view's own
# check of the input, past every access check), ``403``, ``404``. A refused request is also
# sent as htmx (HX-Request): same status, and a one-line fragment instead of a page. The
# harness row is a harness that somehow had a web session (it cannot log in with a password).

PUBLIC_HTML = {"login", "logout"}

# fmt: off
HTML_MATRIX: dict[tuple[str, str], str] = {
    # --- core: tasks, tags, tokens
    ("GET", "task-list"):                         "login 200 200 200 200 200 200 200",
    ("GET", "task-detail"):                       "login 404 200 200 200 200 200 404",
    ("POST", "task-tags"):                        "login 404 302 403 403 403 302 404",
    # Bulk actions are offered by role held anywhere: a 403 without it; with it, a task one may
    # not read (the outsider's case) is "not found" and one not theirs skipped, in the message.
    ("POST", "task-bulk"):                        "login 302 302 302 403 403 302 403",
    ("GET", "token-list"):                        "login 200 200 200 200 200 200 200",
    ("POST", "token-list"):                       "login 200 200 200 200 200 200 200",
    # --- authoring workspace (reviewers opening it are sent to the read-only task page)
    ("GET", "workspace"):                         "login 404 200 302 302 302 200 404",
    ("POST", "workspace-save"):                   "login 404 302 403 403 403 302 404",
    ("POST", "workspace-lint"):                   "login 404 200 403 403 403 200 404",
    ("POST", "workspace-spec-diff"):              "login 404 200 403 403 403 200 404",
    ("GET", "workspace-blocker-form"):            "login 404 200 403 403 403 200 404",
    ("POST", "workspace-waive"):                  "login 404 302 403 403 403 302 404",
    ("GET", "workspace-preview"):                 "login 404 200 200 200 200 200 404",
    ("GET", "workspace-revisions"):               "login 404 200 200 200 200 200 404",
    ("POST", "workspace-revision-restore"):       "login 404 302 403 403 403 302 404",
    ("POST", "workspace-sql-query"):              "login 404 200 200 200 200 200 404",
    ("POST", "workspace-sql-format"):             "login 404 200 403 403 403 200 404",
    ("POST", "workspace-sql-golden"):             "login 404 200 403 403 403 200 404",
    ("GET", "workspace-sql-table"):               "login 404 200 200 200 200 200 404",
    ("GET", "workspace-repo"):                    "login 404 200 200 200 200 200 404",
    ("POST", "workspace-repo-edit"):              "login 404 200 403 403 403 200 404",
    ("POST", "workspace-setup-patch-upload"):     "login 404 200 403 403 403 200 404",
    ("POST", "workspace-submit"):                 "login 404 302 403 403 403 302 404",
    # --- review
    ("GET", "review-queue"):                      "login 200 200 200 200 200 200 200",
    ("POST", "review-take-next"):                 "login 404 403 403 403 302 403 404",
    ("POST", "review-release"):                   "login 404 403 403 403 302 302 404",
    ("GET", "review-task"):                       "login 404 200 200 200 200 200 404",
    ("POST", "review-task"):                      "login 404 403 403 403 302 403 404",
    ("POST", "review-assign"):                    "login 404 403 403 403 403 302 404",
    ("POST", "review-decision-withdraw"):         "login 404 403 403 403 302 403 404",
    ("GET", "task-timeline"):                     "login 404 200 200 200 200 200 404",
    ("POST", "comment-add"):                      "login 404 302 302 302 302 302 404",
    ("POST", "comment-resolve"):                  "login 404 302 302 302 302 302 404",
    ("GET", "notifications"):                     "login 200 200 200 200 200 200 200",
    ("POST", "notifications"):                    "login 302 302 302 302 302 302 302",
    ("GET", "review-pipeline"):                   "login 404 200 200 200 200 200 404",
    ("POST", "review-pipeline"):                  "login 404 403 403 403 403 400 404",
    ("GET", "review-dashboard"):                  "login 404 403 403 403 403 200 404",
    # --- validators: runs of task code are started by the task's editors
    ("POST", "validation-start"):                 "login 404 302 403 403 403 302 404",
    ("GET", "validation-run"):                    "login 404 200 200 200 200 200 404",
    ("POST", "environment-build-start"):          "login 404 302 403 403 403 302 404",
    ("GET", "environment-build"):                 "login 404 200 200 200 200 200 404",
    ("GET", "environment-card"):                  "login 404 200 200 200 200 200 404",
    # --- judge validation
    ("GET", "judge-questions"):                   "login 404 200 200 200 200 200 404",
    ("POST", "judge-question-add"):               "login 404 302 302 302 302 302 404",
    ("POST", "judge-generate"):                   "login 404 302 302 302 302 302 404",
    ("POST", "judge-label"):                      "login 404 302 302 302 302 302 404",
    # Only one's own label is changed or withdrawn (the reviewer's here); the others, who may
    # label, are told they have none (302 with the message); the author never labels (403).
    ("POST", "judge-label-change"):               "login 404 403 302 302 302 302 404",
    ("POST", "judge-label-withdraw"):             "login 404 403 302 302 302 302 404",
    ("POST", "judge-measure"):                    "login 404 200 200 200 200 200 404",
    ("POST", "judge-accept"):                     "login 404 302 403 403 403 302 404",
    ("GET", "judge-report"):                      "login 404 200 200 200 200 200 404",
    ("POST", "judge-calibrate"):                  "login 404 403 403 403 403 302 404",
    # --- evaluation (a user reading one project is sent to it)
    ("GET", "evaluation-home"):                   "login 302 302 302 302 302 302 200",
    ("GET", "evaluation-project"):                "login 404 200 200 200 200 200 404",
    ("POST", "evaluation-endpoint-add"):          "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-run-start"):             "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-harbor-run-start"):      "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-run-cancel"):            "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-study-start"):           "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-results-upload"):        "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-scores-upload"):         "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-policy"):                "login 404 403 403 403 403 302 404",
    ("GET", "evaluation-leaderboard-csv"):        "login 404 200 200 200 200 200 404",
    ("GET", "evaluation-run"):                    "login 404 200 200 200 200 200 404",
    ("GET", "evaluation-task-selection"):         "login 404 200 200 200 200 200 404",
    ("GET", "evaluation-pass"):                   "login 404 200 200 200 200 200 404",
    ("POST", "evaluation-pass-label"):            "login 404 302 302 302 302 302 404",
    ("GET", "evaluation-compare"):                "login 404 200 200 200 200 200 404",
    ("GET", "evaluation-failures"):               "login 404 200 200 200 200 200 404",
    ("GET", "evaluation-failures-csv"):           "login 404 200 200 200 200 200 404",
    ("GET", "evaluation-taxonomy"):               "login 404 200 200 200 200 200 404",
    ("POST", "evaluation-taxonomy"):              "login 404 403 403 403 403 302 404",
    ("POST", "evaluation-llm-labelling"):         "login 404 403 403 403 403 302 404",
    # --- imports (authors and leads) and exports (leads)
    ("GET", "import-list"):                       "login 200 200 200 200 200 200 200",
    ("POST", "import-list"):                      "login 200 200 200 403 403 200 403",
    ("GET", "import-detail"):                     "login 404 200 200 200 200 200 404",
    ("GET", "export-list"):                       "login 200 200 200 200 200 200 200",
    ("POST", "export-list"):                      "login 403 403 403 403 403 302 403",
    ("GET", "export-detail"):                     "login 404 404 404 404 404 200 404",
    ("GET", "export-download"):                   "login 404 404 404 404 404 200 404",
    ("GET", "project-data"):                      "login 404 200 200 200 200 200 404",
    ("GET", "project-data-download"):             "login 404 200 200 200 200 200 404",
    # A task folder's own verifier: an auditor or a lead, never the task's author, accepts it
    # (the world's task carries none: a message says so).
    ("POST", "verifier-accept"):                  "login 404 403 403 403 302 302 404",
    ("POST", "verifier-withdraw"):                "login 404 403 403 403 302 302 404",
}
# fmt: on


class HtmlWorld:
    """The API matrix's world, and what only pages read: made on first use, so each case
    builds only what its request needs (a SWE task with its repository, a SQL task with its
    database, imported results…)."""

    def __init__(self, w, demo_data):
        self.__dict__.update(vars(w))
        self._demo_data = demo_data

    @cached_property
    def layer3(self):
        from review.services import pipeline_ensure

        return pipeline_ensure(self.project)[2]

    @cached_property
    def validation_run(self):
        from validators.models import ValidationRun

        return ValidationRun.objects.create(
            task=self.task,
            revision=self.task.revisions.order_by("-number").first(),
            checks=["spec"],
            created_by=self.users["author"],
        )

    @cached_property
    def validation_question(self):
        from judge.validation import question_add

        text = "Does the count include loans that are still running?"
        return question_add(task=self.task, actor=self.users["lead"], text=text, source="reviewer")

    @cached_property
    def labelled_question(self):
        """A held-out question the reviewer alone labelled: theirs to change or withdraw."""
        from judge.labels import label_add

        question = self.validation_question
        blocker = self.task.blockers.values_list("key", flat=True).first()
        label_add(question=question, labeller=self.users["reviewer"], blocker_key=blocker)
        return question

    @cached_property
    def swe_task(self):
        from exchange.importers import import_swebench

        import_swebench(
            project=self.project,
            instances=self._demo_data["swe"]["instances"],
            repo=str(self._demo_data["swe"]["repo"]),
            actor=self.users["author"],
        )
        return Task.objects.get(project=self.project, domain="swe")

    @cached_property
    def sql_task(self):
        from exchange.importers import import_bird

        import_bird(
            project=self.project,
            questions=self._demo_data["sql"]["questions"],
            databases=self._demo_data["sql"]["databases"],
            actor=self.users["author"],
            limit=1,
        )
        return Task.objects.filter(project=self.project, source="bird").latest("pk")

    @cached_property
    def build(self):
        from validators.models import EnvironmentBuild

        env = self.swe_task.swe_environment
        return EnvironmentBuild.objects.create(
            key="0" * 64, task=self.swe_task, repository=env.repository, commit=env.base_commit
        )

    @cached_property
    def task_pass(self):
        from tests.evaluation.util import keep_by_pass_rate

        (run,) = keep_by_pass_rate(self.task)
        return run.task_passes.filter(resolved=False).first() or run.task_passes.first()

    @cached_property
    def endpoint(self):
        from evaluation.models import ModelEndpoint

        return ModelEndpoint.objects.create(
            project=self.project,
            name="local",
            base_url="http://127.0.0.1:9/v1",
            model="m",
            created_by=self.users["lead"],
        )

    @cached_property
    def import_job(self):
        from exchange.models import ImportJob

        return ImportJob.objects.create(
            project=self.project, kind="bird", upload_dir="matrix", created_by=self.users["author"]
        )

    @cached_property
    def finished_export(self):
        from django.conf import settings

        settings.BUNDLE_STORE.mkdir(parents=True, exist_ok=True)
        (settings.BUNDLE_STORE / "matrix.tar.gz").write_bytes(b"\x1f\x8b not really a bundle")
        ExportJob.objects.filter(pk=self.job.pk).update(
            status=ExportJob.Status.SUCCEEDED, file_path="matrix.tar.gz"
        )
        return self.job


def _upload(name: str, content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


def _task_url(name, task, **kwargs):
    return reverse(name, kwargs={"task_id": task.pk, **kwargs})


def _project_url(name, w):
    return reverse(name, args=[w.project.pk])


# (method, url name) -> w -> (url, POST data or None)
HTML_REQUESTS = {
    ("GET", "task-list"): lambda w: (reverse("task-list"), None),
    ("GET", "task-detail"): lambda w: (_task_url("task-detail", w.task), None),
    ("POST", "task-tags"): lambda w: (_task_url("task-tags", w.task), {"tags": "loans"}),
    ("POST", "task-bulk"): lambda w: (
        reverse("task-bulk"),
        {"action": "add_tag", "param-tag": "loans", "ids": [w.task.pk]},
    ),
    ("GET", "token-list"): lambda w: (reverse("token-list"), None),
    ("POST", "token-list"): lambda w: (reverse("token-list"), {"name": "script"}),
    ("GET", "workspace"): lambda w: (_task_url("workspace", w.task), None),
    ("POST", "workspace-save"): lambda w: (
        _task_url("workspace-save", w.task),
        {"expected_version": _version(w.task), "spec.question": "How many loans?"},
    ),
    ("POST", "workspace-lint"): lambda w: (
        _task_url("workspace-lint", w.task),
        {"spec.question": "How many loans?"},
    ),
    ("POST", "workspace-spec-diff"): lambda w: (
        _task_url("workspace-spec-diff", w.task, section="question"),
        {"spec.question": "How many loans were settled?"},
    ),
    ("GET", "workspace-blocker-form"): lambda w: (
        _task_url("workspace-blocker-form", w.task) + "?index=3",
        None,
    ),
    ("POST", "workspace-waive"): lambda w: (
        _task_url("workspace-waive", w.task),
        {"fingerprint": "none-such", "reason": "Checked by hand."},
    ),
    ("GET", "workspace-preview"): lambda w: (_task_url("workspace-preview", w.task), None),
    ("GET", "workspace-revisions"): lambda w: (_task_url("workspace-revisions", w.task), None),
    ("POST", "workspace-revision-restore"): lambda w: (
        _task_url("workspace-revision-restore", _second_revision(w)),
        {"number": "1", "expected_version": _version(w.task)},
    ),
    ("POST", "workspace-sql-query"): lambda w: (
        _task_url("workspace-sql-query", w.task),
        {"console_sql": "SELECT 1"},
    ),
    ("POST", "workspace-sql-format"): lambda w: (
        _task_url("workspace-sql-format", w.task),
        {"env.gold_sql": "select count(*) from loan"},
    ),
    ("POST", "workspace-sql-golden"): lambda w: (
        _task_url("workspace-sql-golden", w.task),
        {"env.gold_sql": "SELECT 1"},
    ),
    ("GET", "workspace-sql-table"): lambda w: (
        _task_url("workspace-sql-table", w.sql_task, table="loan"),
        None,
    ),
    ("GET", "workspace-repo"): lambda w: (_task_url("workspace-repo", w.swe_task), None),
    ("POST", "workspace-repo-edit"): lambda w: (
        _task_url("workspace-repo-edit", w.swe_task),
        {"path": "NOTES.md", "content": "A note.\n"},
    ),
    ("POST", "workspace-setup-patch-upload"): lambda w: (
        _task_url("workspace-setup-patch-upload", w.swe_task),
        {"patch_file": _upload("setup.patch", b"")},
    ),
    ("POST", "workspace-submit"): lambda w: (
        _task_url("workspace-submit", w.task),
        {"expected_version": _version(w.task)},
    ),
    ("GET", "review-queue"): lambda w: (reverse("review-queue"), None),
    ("POST", "review-take-next"): lambda w: (reverse("review-take-next", args=[w.layer3.pk]), {}),
    ("POST", "review-release"): lambda w: (reverse("review-release", args=[w.assignment.pk]), {}),
    ("GET", "review-task"): lambda w: (_task_url("review-task", w.in_review), None),
    ("POST", "review-task"): lambda w: (
        _task_url("review-task", w.in_review),
        {"outcome": "request_changes", "revision": 1, "summary": "Say which status is clean."},
    ),
    ("POST", "review-assign"): lambda w: (
        _task_url("review-assign", w.in_review),
        {"reviewer": "auditor2"},
    ),
    ("POST", "review-decision-withdraw"): lambda w: (
        reverse("review-decision-withdraw", args=[_auditor_decision(w).pk]),
        {},
    ),
    ("GET", "task-timeline"): lambda w: (_task_url("task-timeline", w.task), None),
    ("POST", "comment-add"): lambda w: (_task_url("comment-add", w.task), {"body": "Agreed."}),
    ("POST", "comment-resolve"): lambda w: (
        reverse("comment-resolve", args=[w.comment.pk]),
        {"resolved": "1"},
    ),
    ("GET", "notifications"): lambda w: (reverse("notifications"), None),
    ("POST", "notifications"): lambda w: (reverse("notifications"), {}),
    ("GET", "review-pipeline"): lambda w: (_project_url("review-pipeline", w), None),
    ("POST", "review-pipeline"): lambda w: (
        _project_url("review-pipeline", w),
        {"lock_minutes": "30"},
    ),
    ("GET", "review-dashboard"): lambda w: (_project_url("review-dashboard", w), None),
    ("POST", "validation-start"): lambda w: (
        _task_url("validation-start", w.task),
        {"checks": ["spec"]},
    ),
    ("GET", "validation-run"): lambda w: (
        _task_url("validation-run", w.task, run_id=w.validation_run.pk),
        None,
    ),
    ("POST", "environment-build-start"): lambda w: (
        _task_url("environment-build-start", w.swe_task),
        {},
    ),
    ("GET", "environment-build"): lambda w: (reverse("environment-build", args=[w.build.pk]), None),
    ("GET", "environment-card"): lambda w: (_task_url("environment-card", w.swe_task), None),
    ("GET", "judge-questions"): lambda w: (_task_url("judge-questions", w.task), None),
    ("POST", "judge-question-add"): lambda w: (
        _task_url("judge-question-add", w.task),
        {"text": "Are loans that are still running counted as settled?"},
    ),
    ("POST", "judge-generate"): lambda w: (_task_url("judge-generate", w.task), {}),
    ("POST", "judge-label"): lambda w: (
        _task_url("judge-label", w.task, question_id=w.validation_question.pk),
        {"blocker_key": "__none__"},
    ),
    ("POST", "judge-label-change"): lambda w: (
        _task_url("judge-label-change", w.task, question_id=w.labelled_question.pk),
        {"blocker_key": "__none__"},
    ),
    ("POST", "judge-label-withdraw"): lambda w: (
        _task_url("judge-label-withdraw", w.task, question_id=w.labelled_question.pk),
        {},
    ),
    ("POST", "judge-measure"): lambda w: (_task_url("judge-measure", w.task), {}),
    ("POST", "judge-accept"): lambda w: (_task_url("judge-accept", w.task), {}),
    ("GET", "judge-report"): lambda w: (_project_url("judge-report", w), None),
    ("POST", "judge-calibrate"): lambda w: (_project_url("judge-calibrate", w), {}),
    ("GET", "evaluation-home"): lambda w: (reverse("evaluation-home"), None),
    ("GET", "evaluation-project"): lambda w: (_project_url("evaluation-project", w), None),
    ("POST", "evaluation-endpoint-add"): lambda w: (
        _project_url("evaluation-endpoint-add", w),
        {"name": "other", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    ),
    ("POST", "evaluation-run-start"): lambda w: (
        _project_url("evaluation-run-start", w),
        {"endpoint": w.endpoint.pk, "modes": ["baseline"], "passes": 1},
    ),
    ("POST", "evaluation-harbor-run-start"): lambda w: (
        _project_url("evaluation-harbor-run-start", w),
        {"agent": "oracle", "tasks": str(w.task.pk), "modes": ["baseline"], "passes": 1},
    ),
    ("POST", "evaluation-run-cancel"): lambda w: (
        reverse("evaluation-run-cancel", args=[w.task_pass.run_id]),
        {},
    ),
    ("POST", "evaluation-study-start"): lambda w: (
        _project_url("evaluation-study-start", w),
        {"endpoint": w.endpoint.pk, "method": "direct_ask"},
    ),
    ("POST", "evaluation-results-upload"): lambda w: (
        _project_url("evaluation-results-upload", w),
        {"model": "model-b", "file": _results_file(w)},
    ),
    ("POST", "evaluation-scores-upload"): lambda w: (
        _project_url("evaluation-scores-upload", w),
        {"model": "model-b", "file": _upload("scores.jsonl", b"")},
    ),
    ("POST", "evaluation-policy"): lambda w: (
        _project_url("evaluation-policy", w),
        {
            "k": 3,
            "full_info_min": 1,
            "baseline_max": 0,
            "min_models": 1,
            "min_models_reason": "One licensed model for this pilot.",
        },
    ),
    ("GET", "evaluation-leaderboard-csv"): lambda w: (
        _project_url("evaluation-leaderboard-csv", w),
        None,
    ),
    ("GET", "evaluation-run"): lambda w: (
        reverse("evaluation-run", args=[w.task_pass.run_id]),
        None,
    ),
    ("GET", "evaluation-task-selection"): lambda w: (
        _task_url("evaluation-task-selection", w.task),
        None,
    ),
    ("GET", "evaluation-pass"): lambda w: (reverse("evaluation-pass", args=[w.task_pass.pk]), None),
    ("POST", "evaluation-pass-label"): lambda w: (
        reverse("evaluation-pass-label", args=[w.task_pass.pk]),
        {"dimension": "", "mode": "", "note": ""},
    ),
    ("GET", "evaluation-compare"): lambda w: (
        reverse("evaluation-compare") + f"?left={w.task_pass.pk}&right={w.task_pass.pk}",
        None,
    ),
    ("GET", "evaluation-failures"): lambda w: (_project_url("evaluation-failures", w), None),
    ("GET", "evaluation-failures-csv"): lambda w: (
        _project_url("evaluation-failures-csv", w),
        None,
    ),
    ("GET", "evaluation-taxonomy"): lambda w: (_project_url("evaluation-taxonomy", w), None),
    ("POST", "evaluation-taxonomy"): lambda w: (_project_url("evaluation-taxonomy", w), {}),
    ("POST", "evaluation-llm-labelling"): lambda w: (
        _project_url("evaluation-llm-labelling", w),
        {"endpoint": w.endpoint.pk},
    ),
    ("GET", "import-list"): lambda w: (reverse("import-list"), None),
    ("POST", "import-list"): lambda w: (reverse("import-list"), {"kind": "bird"}),
    ("GET", "import-detail"): lambda w: (reverse("import-detail", args=[w.import_job.pk]), None),
    ("GET", "export-list"): lambda w: (reverse("export-list"), None),
    ("POST", "export-list"): lambda w: (
        reverse("export-list"),
        {"project": w.project.pk, "draft": "on"},
    ),
    ("GET", "export-detail"): lambda w: (reverse("export-detail", args=[w.job.pk]), None),
    ("GET", "project-data"): lambda w: (_project_url("project-data", w), None),
    ("GET", "project-data-download"): lambda w: (
        reverse("project-data-download", args=[w.project.pk, "blockers", "jsonl"]),
        None,
    ),
    ("POST", "verifier-accept"): lambda w: (_task_url("verifier-accept", w.task), {}),
    ("POST", "verifier-withdraw"): lambda w: (_task_url("verifier-withdraw", w.task), {}),
    ("GET", "export-download"): lambda w: (
        reverse("export-download", args=[w.finished_export.pk]),
        None,
    ),
}

# Rows a route's one request cannot show: the same route sent what only the task's editors
# may send. (method, url name, what) -> columns in ROLES order.
# fmt: off
HTML_VARIANTS: dict[tuple[str, str, str], str] = {
    # Every reader queries the saved database; an edit script of one's own builds a copy.
    ("POST", "workspace-sql-query", "edit script"): "login 404 200 403 403 403 200 404",
    # As in the API: the self-check is the task's author's, peer review anyone's but theirs.
    ("POST", "review-task", "self-check"):           "login 404 302 403 403 403 403 404",
    ("POST", "review-task", "peer review"):          "login 404 403 302 403 403 403 404",
    # The task list's other bulk actions: assigning is a lead's, checks an editor's.
    ("POST", "task-bulk", "assign"):                 "login 403 403 403 403 403 302 403",
    ("POST", "task-bulk", "structural checks"):      "login 302 302 302 403 403 302 403",
}
# fmt: on
HTML_VARIANT_REQUESTS = {
    ("POST", "workspace-sql-query", "edit script"): lambda w: (
        _task_url("workspace-sql-query", w.sql_task),
        {"console_sql": "SELECT 1", "env.edit_script": "CREATE TABLE loan_code (code TEXT);"},
    ),
    ("POST", "review-task", "self-check"): lambda w: (
        _task_url("review-task", _waiting_at(w, 1)),
        DECISION,
    ),
    ("POST", "review-task", "peer review"): lambda w: (
        _task_url("review-task", _waiting_at(w, 2)),
        DECISION,
    ),
    ("POST", "task-bulk", "assign"): lambda w: (
        reverse("task-bulk"),
        {"action": "assign", "param-reviewer": "auditor2", "ids": [w.in_review.pk]},
    ),
    ("POST", "task-bulk", "structural checks"): lambda w: (
        reverse("task-bulk"),
        {"action": "structural_checks", "ids": [w.task.pk]},
    ),
}


def _html_class(response) -> str:
    if response.status_code in (301, 302):
        return "login" if response["Location"].startswith(reverse("login")) else "302"
    return "200" if 200 <= response.status_code < 300 else str(response.status_code)


def _row_counts() -> dict[str, int]:
    """How many rows every table of the apps holds (sessions and login attempts aside)."""
    from django.apps import apps

    skip = {"sessions", "axes", "admin", "contenttypes"}
    return {
        model._meta.label: model._default_manager.count()
        for model in apps.get_models()
        if model._meta.app_label not in skip
    }


# A request may write its own bookkeeping — the session, the login throttle's records — and
# fill a cache keyed by content (lint results of a task state, judge verdicts): no domain
# state, nothing a later request reads differently.
BOOKKEEPING_TABLES = ("django_session", "axes_", "authoring_lintresult", "judge_judgecacheentry")
WRITE = re.compile(r'^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)', re.I)


def _writes(queries) -> list[str]:
    """The statements of ``queries`` that insert, update or delete rows of the app's tables."""
    found = []
    for query in queries.captured_queries:
        match = WRITE.match(query["sql"])
        if match and not match.group(2).startswith(BOOKKEEPING_TABLES):
            found.append(query["sql"][:200])
    return found


def _html_client(w, role):
    from django.test import Client

    client = Client()
    if role != "anonymous":
        client.force_login(w.users[role])
    return client


def _send(client, method, url, data, *, htmx=False):
    headers = {"HX-Request": "true"} if htmx else {}
    if method == "GET":
        return client.get(url, headers=headers)
    return client.post(url, data or {}, headers=headers)


HTML_CASES = [
    pytest.param(op, role, expected, id=f"{' '.join(op)} as {role}")
    for op, row in (HTML_MATRIX | HTML_VARIANTS).items()
    for role, expected in zip(ROLES, row.split(), strict=True)
]


@pytest.fixture
def html_world(world, demo_data):
    return HtmlWorld(world, demo_data)


@pytest.mark.parametrize("operation, role, expected", HTML_CASES)
def test_html_permission_matrix(html_world, operation, role, expected):
    w = html_world
    method = operation[0]
    requests = HTML_REQUESTS | HTML_VARIANT_REQUESTS
    url, data = requests[operation](w)
    before = _row_counts(), _task_state(w.task), _task_state(w.in_review)

    client = _html_client(w, role)
    with CaptureQueriesContext(connection) as queries:
        response = _send(client, method, url, data)

    got = _html_class(response)
    assert got == expected, f"{role}: {response.status_code} {response.content[:300]!r}"
    if method == "GET":
        # Reads never write: not the page, and not its fragment (htmx).
        with CaptureQueriesContext(connection) as fragment_queries:
            _send(client, method, url, data, htmx=True)
        writes = _writes(queries) + _writes(fragment_queries)
        assert not writes, writes
    if expected in ("200", "302"):
        return
    assert (_row_counts(), _task_state(w.task), _task_state(w.in_review)) == before
    # The same refusal asked by htmx: the same status, and a fragment, not a page in a page.
    url, data = requests[operation](w)
    fragment = _send(_html_client(w, role), method, url, data, htmx=True)
    assert _html_class(fragment) == expected
    if expected in ("403", "404"):
        assert b"<html" not in fragment.content.lower()
        assert b'role="alert"' in fragment.content


# --- the HTML table covers every route and method ------------------------------------------------


def _html_routes(resolver=None, prefix="") -> dict[str, str]:
    """url name -> route, for every route outside /api/ and /admin/."""
    resolver = resolver or get_resolver()
    found = {}
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(("api/", "admin/")):
            continue
        if isinstance(entry, URLResolver):
            found |= _html_routes(entry, route)
        elif isinstance(entry, URLPattern):
            assert entry.name, f"{route} has no name: the matrix names routes"
            found[entry.name] = route
    return found


def test_every_html_route_has_a_row():
    names = set(_html_routes()) - PUBLIC_HTML
    covered = {name for _method, name in HTML_MATRIX}

    assert sorted(names - covered) == [], "add these pages and fragments to HTML_MATRIX"
    assert sorted(covered - names) == [], "HTML_MATRIX names routes that are gone"
    assert set(HTML_REQUESTS) == set(HTML_MATRIX)


@pytest.mark.parametrize("name", sorted(set(_html_routes()) - PUBLIC_HTML), ids=lambda name: name)
def test_methods_without_a_row_are_refused(html_world, name):
    """A view that answers a method the table does not list would be a door nobody checked:
    for a lead (who may do most), GET or POST without a row is 405."""
    w = html_world
    listed = {method for method, n in HTML_MATRIX if n == name}
    some = next(op for op in HTML_MATRIX if op[1] == name)
    url, data = HTML_REQUESTS[some](w)
    for method in {"GET", "POST"} - listed:
        response = _send(_html_client(w, "lead"), method, url, data)
        assert response.status_code == 405, f"{method} {name}: {response.status_code}"


HTML_HIDDEN_FROM_OUTSIDER = [
    pytest.param(op, id=f"{op[0]} {op[1]}")
    for op, row in HTML_MATRIX.items()
    if "_id>" in _html_routes()[op[1]]
    and dict(zip(ROLES, row.split(), strict=True))["outsider"] == "404"
]


@pytest.mark.parametrize("operation", HTML_HIDDEN_FROM_OUTSIDER)
def test_a_hidden_page_answers_exactly_as_a_missing_one(html_world, operation):
    """Pages and htmx fragments too: another project's object and no object at all get the
    same status and the same body, so a page cannot be used to probe which ids exist."""
    w = html_world
    method = operation[0]
    for htmx in (False, True):
        answers = []
        for twin in (False, True):
            url, data = HTML_REQUESTS[operation](w)
            target = _missing_twin(url) if twin else url
            response = _send(_html_client(w, "outsider"), method, target, data, htmx=htmx)
            answers.append((response.status_code, response.content))
        assert answers[0] == answers[1]
        assert answers[0][0] == 404
