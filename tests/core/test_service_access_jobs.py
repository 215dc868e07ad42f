"""Issue 47, item 1: the services that start jobs check who acts themselves.

Each is called here directly, as a bulk action, a command or an MCP tool would call it, with
no view's ``access_task`` / ``access_project`` before it; the rules are the pages' own:

- structural checks (``validation_run_start``, ``validation_runs_start``): whoever may change
  the task, its author or a lead (the task page's button, the bulk action);
- a run recorded here and now (``validation_run_inline``, the judge page's measurement):
  whoever reads the task;
- an export (``bundle_export_create``, ``bundle_export_start``): the project's leads;
- an import (``import_start``, ``import_start_records``): its authors and leads.

A user who cannot see the task or project is told it is absent (``Http404``), one who sees it
but may not act is refused (``AccessDenied``), and so is a call with no user at all; nothing is
written then: no run or job row, no event, no file in the upload or bundle store. The same
calls by a user who may act are stored, so the refusals are the check's.
"""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import Http404

from exchange.models import ExportJob, ImportJob
from exchange.services.exports import bundle_export_create, bundle_export_start
from exchange.services.imports import import_start, import_start_records
from hilbench_annotate.access import EDIT_REFUSED
from hilbench_annotate.errors import AccessDenied
from hilbench_annotate.models import Task, TaskEvent
from hilbench_annotate.vocabulary import Role
from tests.factories import MembershipFactory, UserFactory
from tests.review.test_api import clean_task
from validators.models import ValidationRun
from validators.services import validation_run_inline, validation_run_start, validation_runs_start

pytestmark = pytest.mark.django_db

BIRD_RECORD = b'[{"question_id": 1, "db_id": "retail_bank", "question": "How many loans?"}]'


def _runs_start(task, actor):
    """The bulk form skips a task ``actor`` may not change, with why (a task they cannot see
    among them: the bulk list shows none), where the others raise; raised here alike."""
    runs, skipped = validation_runs_start(tasks=[task], actor=actor)
    if skipped:
        raise AccessDenied(skipped[0][1])
    return runs


CALLS = {
    "validation_run_start": lambda task, actor: validation_run_start(task=task, actor=actor),
    "validation_runs_start": _runs_start,
    "validation_run_inline": lambda task, actor: validation_run_inline(
        task=task, actor=actor, checks=["spec"]
    ),
    "bundle_export_create": lambda task, actor: bundle_export_create(
        project=task.project, actor=actor, selection={"tasks": [task.pk]}, draft=True
    ),
    "bundle_export_start": lambda task, actor: bundle_export_start(
        project=task.project, actor=actor, selection={"tasks": [task.pk]}, draft=True
    ),
    "import_start": lambda task, actor: import_start(
        project=task.project,
        actor=actor,
        kind=ImportJob.Kind.BIRD,
        files={"questions": SimpleUploadedFile("questions.json", BIRD_RECORD)},
        options={},
    ),
    "import_start_records": lambda task, actor: import_start_records(
        project=task.project,
        actor=actor,
        kind=ImportJob.Kind.BIRD,
        body=io.BytesIO(BIRD_RECORD),
        json_lines=False,
        options={},
    ),
}

# Per service: readers of the task who may not make the call, and users who may.
REFUSED_READERS = {
    "validation_run_start": ["reviewer", "auditor", "other_author"],
    "validation_runs_start": ["reviewer", "auditor", "other_author"],
    "validation_run_inline": [],  # every reader may measure
    "bundle_export_create": ["author", "reviewer", "auditor"],
    "bundle_export_start": ["author", "reviewer", "auditor"],
    "import_start": ["reviewer", "auditor"],
    "import_start_records": ["reviewer", "auditor"],
}
ALLOWED = {
    "validation_run_start": ["author", "lead"],
    "validation_runs_start": ["author", "lead"],
    "validation_run_inline": ["author", "lead", "reviewer", "auditor", "other_author"],
    "bundle_export_create": ["lead"],
    "bundle_export_start": ["lead"],
    "import_start": ["author", "other_author", "lead"],
    "import_start_records": ["author", "other_author", "lead"],
}
REFUSED_CASES = [(name, reader) for name in sorted(CALLS) for reader in REFUSED_READERS[name]]
ALLOWED_CASES = [(name, user) for name in sorted(CALLS) for user in ALLOWED[name]]


@pytest.fixture
def task(project, author):
    return clean_task(project, author, title="Loans settled cleanly")


@pytest.fixture
def other_author(project):
    """An author of the project, not of this task: reads it, may not change it."""
    user = UserFactory(username="other-author")
    MembershipFactory(project=project, user=user, role=Role.AUTHOR)
    return user


def _files(folder):
    return sorted(str(p) for p in folder.rglob("*")) if folder.exists() else []


def _state(settings):
    """Everything these services write."""
    return {
        "runs": ValidationRun.objects.count(),
        "exports": ExportJob.objects.count(),
        "imports": ImportJob.objects.count(),
        "events": TaskEvent.objects.count(),
        "uploads": _files(settings.UPLOAD_STORE),
        "bundles": _files(settings.BUNDLE_STORE),
    }


@pytest.mark.parametrize("name,reader", REFUSED_CASES)
def test_a_reader_who_may_not_act_is_refused_and_nothing_is_written(
    name, reader, task, settings, request
):
    user = request.getfixturevalue(reader)
    before = _state(settings)
    with pytest.raises(AccessDenied):
        CALLS[name](task, user)
    assert _state(settings) == before


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_user_who_cannot_see_the_task_is_told_it_is_absent(name, task, outsider, settings):
    before = _state(settings)
    refusal = AccessDenied if name == "validation_runs_start" else Http404
    with pytest.raises(refusal):
        CALLS[name](task, outsider)
    assert _state(settings) == before


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_call_without_a_user_is_refused(name, task, settings):
    """No system path: a command or a job that starts one names the user it acts for."""
    before = _state(settings)
    with pytest.raises(AccessDenied, match="needs the"):
        CALLS[name](task, None)
    assert _state(settings) == before


@pytest.mark.parametrize("name,user", ALLOWED_CASES)
def test_the_same_call_by_a_user_who_may_act_is_stored(name, user, task, settings, request):
    """The refusals above are the check's: these users make each call."""
    before = _state(settings)
    CALLS[name](task, request.getfixturevalue(user))
    assert _state(settings) != before


@pytest.mark.parametrize("reader", ["reviewer", "auditor", "other_author", "outsider"])
def test_the_bulk_start_skips_the_tasks_the_actor_may_not_change(reader, task, settings, request):
    """``validation_runs_start`` refuses task by task, as the bulk action reports them: each
    refused task among the skipped with why, and no run or event for it."""
    before = _state(settings)
    runs, skipped = validation_runs_start(tasks=[task], actor=request.getfixturevalue(reader))
    assert runs == [] and skipped == [(task, EDIT_REFUSED)]
    assert _state(settings) == before


def test_the_bulk_start_runs_the_tasks_the_actor_may_change(project, task, author, settings):
    theirs = clean_task(project, UserFactory(username="someone"), title="Not the author's")
    runs, skipped = validation_runs_start(tasks=[task, theirs], actor=author)
    assert [run.task_id for run in runs] == [task.pk]
    assert skipped == [(theirs, EDIT_REFUSED)]


# --- manage.py validate: the run is started as a user who may change the task -------------


def _validate(task, *args):
    call_command("validate", str(task.pk), *args, stdout=io.StringIO())
    return ValidationRun.objects.filter(task=task).latest("pk")


def test_the_validate_command_starts_the_run_as_the_tasks_author(task, author):
    assert _validate(task).created_by == author


def test_the_validate_command_starts_the_run_as_the_user_named(task, lead):
    assert _validate(task, "--as-user", "lead").created_by == lead


def test_the_validate_command_refuses_a_user_who_may_not_change_the_task(task, reviewer, settings):
    before = _state(settings)
    with pytest.raises(CommandError, match=EDIT_REFUSED):
        _validate(task, "--as-user", "reviewer")
    with pytest.raises(CommandError, match="No user 'nobody'"):
        _validate(task, "--as-user", "nobody")
    assert _state(settings) == before


def test_the_validate_command_without_an_author_asks_the_projects_lead(project, task, settings):
    Task.objects.filter(pk=task.pk).update(author=None)
    task.refresh_from_db()
    with pytest.raises(CommandError, match="pass --as-user"):
        _validate(task)
    assert ValidationRun.objects.count() == 0
    lead = UserFactory(username="the-lead")
    MembershipFactory(project=project, user=lead, role=Role.LEAD)
    assert _validate(task).created_by == lead


def test_the_validate_command_tells_a_user_who_cannot_see_the_task(task, outsider, settings):
    before = _state(settings)
    with pytest.raises(CommandError, match=f"outsider cannot see task {task.pk}"):
        _validate(task, "--as-user", "outsider")
    assert _state(settings) == before


@pytest.mark.parametrize(
    "left,error",
    [
        ("the role", "You need one of the roles lead in project HiL-Bench SQL v2."),
        ("the project", "lead no longer reads HiL-Bench SQL v2."),
    ],
)
def test_a_harbor_run_whose_lead_left_fails_without_an_export(
    left, error, project, task, lead, settings, tmp_path
):
    """The worker exports a Harbor run's tasks as the lead who started it: once that lead
    has left the role (or the project), no export is made and the run fails, saying why."""
    from evaluation.models import EvaluationRun
    from evaluation.services import harbor_run_start
    from exchange.services.harbor_runs import harbor_run_execute
    from hilbench_annotate.models import Membership

    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    run = harbor_run_start(
        project=project, actor=lead, agent="oracle", task_ids=[task.pk], modes=["full_info"],
        passes=1,
    )  # fmt: skip
    membership = Membership.objects.filter(project=project, user=lead)
    if left == "the role":
        membership.update(role=Role.AUTHOR)
    else:
        membership.delete()
    harbor_run_execute(run)
    run = EvaluationRun.objects.get(pk=run.pk)
    assert (run.status, run.error) == ("failed", error)
    assert not ExportJob.objects.exists()
