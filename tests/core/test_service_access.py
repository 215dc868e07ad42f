"""Issue 47, item 1: the edit services check who may edit the task themselves.

Each is called here directly, as a bulk action, a command or an MCP tool would call it, with
no view's ``access_task`` / ``require_task_editor`` before it. A user who reads the task but
may not change it (a reviewer, an auditor, an author of the project who is not the task's) is
refused with ``AccessDenied`` (403), a user who cannot see it with ``Http404``, an edit with no
user at all with ``AccessDenied``; and nothing is written: the version, the revisions, the
events, the registry and the waivers are as they were. Before the services checked, each of
these calls wrote as the caller.
"""

import pytest
from django.http import Http404

from authoring.models import LintWaiver
from authoring.services import lint_waive, lint_waiver_withdraw, workspace_save
from hilbench_annotate import services
from hilbench_annotate.errors import AccessDenied
from hilbench_annotate.models import Blocker, Task, TaskEvent, TriggerQuestion
from hilbench_annotate.services import TaskChanges, task_snapshot
from hilbench_annotate.vocabulary import Role
from tests.factories import MembershipFactory, UserFactory
from tests.review.test_api import clean_task

pytestmark = pytest.mark.django_db

FINGERPRINT = "missing_evidence@blocker_x"


def _first_blocker(task):
    blocker = Blocker.objects.filter(task=task).order_by("position").first()
    blocker.task = task
    return blocker


def _first_question(task):
    question = TriggerQuestion.objects.filter(blocker__task=task).order_by("pk").first()
    question.blocker = _first_blocker(task)
    return question


def _draft(task):
    draft = task_snapshot(task)
    draft["blocked_spec"] = {"question": "Which loans ended badly?", "evidence": ""}
    pks = dict(Blocker.objects.filter(task=task).values_list("key", "pk"))
    draft["blockers"] = [{**b, "pk": pks[b["id"]]} for b in draft["blockers"]]
    return draft


# Each service as a caller that forgot the view's check would call it, with input that
# an editor's call stores (the lead's case below shows it is stored).
CALLS = {
    "task_edit": lambda task, actor: services.task_edit(
        task=task,
        actor=actor,
        expected_version=task.version,
        changes=TaskChanges(title="Loans that ended badly"),
    ),
    "task_update": lambda task, actor: services.task_update(
        task=task, actor=actor, expected_version=task.version, title="Loans that ended badly"
    ),
    "task_touch_environment": lambda task, actor: services.task_touch_environment(
        task=task,
        actor=actor,
        expected_version=task.version,
        changes={"gold_sql": "SELECT 2"},
    ),
    "blocker_create": lambda task, actor: services.blocker_create(
        task=task,
        actor=actor,
        expected_version=task.version,
        key="new_blocker",
        type="question",
        subtype="timeframe_ambiguity",
        description="The question names no year.",
        resolution="The year is 1997.",
        trigger_questions=["Which year?"],
    ),
    "blocker_update": lambda task, actor: services.blocker_update(
        blocker=_first_blocker(task),
        actor=actor,
        expected_version=task.version,
        resolution="Another resolution entirely.",
    ),
    "blocker_delete": lambda task, actor: services.blocker_delete(
        blocker=_first_blocker(task), actor=actor, expected_version=task.version
    ),
    "trigger_question_create": lambda task, actor: services.trigger_question_create(
        blocker=_first_blocker(task),
        actor=actor,
        expected_version=task.version,
        text="Which year is meant?",
    ),
    "trigger_question_update": lambda task, actor: services.trigger_question_update(
        question=_first_question(task),
        actor=actor,
        expected_version=task.version,
        text="Which year is meant here?",
    ),
    "trigger_question_delete": lambda task, actor: services.trigger_question_delete(
        question=_first_question(task), actor=actor, expected_version=task.version
    ),
    "workspace_save": lambda task, actor: workspace_save(
        task=task, actor=actor, expected_version=task.version, draft=_draft(task)
    ),
    "lint_waive": lambda task, actor: lint_waive(
        task=task,
        actor=actor,
        fingerprint=FINGERPRINT,
        reason="The evidence is in the column description.",
    ),
    "lint_waiver_withdraw": lambda task, actor: lint_waiver_withdraw(
        task=task, actor=actor, fingerprint=FINGERPRINT
    ),
}


@pytest.fixture
def task(project, author):
    task = clean_task(project, author, title="Loans settled cleanly")
    LintWaiver.objects.create(
        task=task, fingerprint=FINGERPRINT, reason="Stands until withdrawn.", created_by=author
    )
    task.refresh_from_db()
    return task


@pytest.fixture
def other_author(project):
    """An author of the project, not of this task: reads it, may not change it."""
    user = UserFactory(username="other-author")
    MembershipFactory(project=project, user=user, role=Role.AUTHOR)
    return user


def _state(task):
    """Everything these services write, as it is in the database."""
    row = Task.objects.get(pk=task.pk)
    return {
        "version": row.version,
        "title": row.title,
        "blocked_spec": row.blocked_spec,
        "gold_sql": row.sql_environment.gold_sql,
        "revisions": row.revisions.count(),
        "events": TaskEvent.objects.filter(task=row).count(),
        "registry": task_snapshot(row)["blockers"],
        "waivers": list(LintWaiver.objects.filter(task=row).values_list("fingerprint", "reason")),
    }


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("reader", ["reviewer", "auditor", "other_author"])
def test_a_reader_who_may_not_edit_is_refused_and_nothing_is_written(name, reader, task, request):
    user = request.getfixturevalue(reader)
    before = _state(task)
    with pytest.raises(AccessDenied):
        CALLS[name](task, user)
    assert _state(task) == before


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_user_who_cannot_see_the_task_is_told_it_is_absent(name, task, outsider):
    before = _state(task)
    with pytest.raises(Http404):
        CALLS[name](task, outsider)
    assert _state(task) == before


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_edit_without_a_user_is_refused(name, task):
    """No system path: a job or command that edits names the user it edits for."""
    before = _state(task)
    with pytest.raises(AccessDenied):
        CALLS[name](task, None)
    assert _state(task) == before


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("editor", ["lead", "author"])
def test_the_same_call_by_an_editor_is_stored(name, editor, task, request):
    """The refusals above are the check's: the task's author and a lead make each call."""
    before = _state(task)
    CALLS[name](task, request.getfixturevalue(editor))
    assert _state(task) != before
