"""Bulk task actions on the task list (hilbench_annotate/bulk_actions.py): each registered
action over many tasks goes through the single-task services and access checks, refuses per
task what they refuse, never touches a task the user may not read, and reads a selection of
thousands in a bounded number of queries."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from hilbench_annotate import bulk_actions, services
from hilbench_annotate.access import EDIT_REFUSED
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Tag, Task, TaskEvent
from hilbench_annotate.services import bulk_actions as bulk_service
from hilbench_annotate.services.tasks import revision_create
from hilbench_annotate.vocabulary import Role
from review.models import Notification, ReviewAssignment
from review.services import pipeline_ensure
from validators.models import ValidationRun
from validators.registry import groups_for

from ..factories import MembershipFactory, ProjectFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def _tags(task) -> list[str]:
    return sorted(task.tags.values_list("name", flat=True))


def _apply(actor, action, tasks=(), *, ids=None, filters=None, **params):
    return services.task_bulk_apply(
        actor=actor,
        action=action,
        params=params,
        ids=[str(t.pk) for t in tasks] if ids is None else ids,
        filters=filters,
    )


@pytest.fixture
def elsewhere(db):
    """A task of another project, which none of the project's members may read."""
    other = ProjectFactory(name="Elsewhere", slug="elsewhere")
    stranger = UserFactory(username="stranger")
    MembershipFactory(project=other, user=stranger, role=Role.AUTHOR)
    return TaskFactory(project=other, author=stranger, title="Not yours")


# --- what is offered ----------------------------------------------------------------------------


def test_each_role_is_offered_the_actions_of_its_roles(author, reviewer, lead):
    def names(user):
        return [a.name for a in bulk_actions.bulk_actions_for(user)]

    assert names(author) == ["add_tag", "remove_tag", "structural_checks"]
    assert names(lead) == ["add_tag", "remove_tag", "assign", "structural_checks"]
    assert names(reviewer) == []
    menu = bulk_actions.bulk_menu(lead)
    tag = next(f for f in menu["fields"] if f["input"] == "param-tag")
    assert tag["actions"] == ["add_tag", "remove_tag"]  # one field, shared by both
    person = next(f for f in menu["fields"] if f["input"] == "param-reviewer")
    assert person["choices"] == ["author", "lead", "reviewer"]  # the members of the led project


def test_a_field_unlike_another_actions_field_of_that_name_is_refused(monkeypatch):
    monkeypatch.setattr(bulk_actions, "_ACTIONS", dict(bulk_actions._ACTIONS))
    with pytest.raises(ImproperlyConfigured, match="'tag'"):
        bulk_actions.register_bulk_action(
            "label",
            label="Label",
            apply=lambda **kw: bulk_actions.BulkOutcome(),
            roles=(Role.LEAD,),
            done_text="{tasks}",
            fields=(bulk_actions.BulkField("tag", "Label"),),
        )


# --- refused as a whole --------------------------------------------------------------------------


def test_bad_requests_are_refused_before_any_task(project, author, reviewer):
    task = TaskFactory(project=project, author=author)
    with pytest.raises(DomainError, match="Choose an action"):
        _apply(author, "no_such_action", [task])
    with pytest.raises(DomainError, match="No task is selected"):
        _apply(author, "add_tag", [], tag="x")
    with pytest.raises(DomainError, match="The filter matches no task"):
        _apply(author, "add_tag", filters={"q": "nothing like it"}, tag="x")
    with pytest.raises(DomainError, match="Tag 'no spaces!'"):
        _apply(author, "add_tag", [task], tag="no spaces!")
    with pytest.raises(DomainError, match="Name the tag"):
        _apply(author, "add_tag", [task], tag=" ")
    # A role held nowhere: the action is not offered, and not done.
    with pytest.raises(AccessDenied, match="“Add tag” needs the author or lead role in a project"):
        _apply(reviewer, "add_tag", [task], tag="x")
    assert not TaskEvent.objects.filter(kind="tags_set").exists()


def test_ids_that_are_no_tasks_are_counted_not_found(project, author, elsewhere):
    task = TaskFactory(project=project, author=author)
    report = _apply(
        author,
        "add_tag",
        ids=[str(task.pk), "x", "-3", "99999999999999999999", str(elsewhere.pk), str(task.pk)],
        tag="batch-3",
    )
    assert (report.done, report.missing) == (1, 4)
    assert report.text == (
        "Tagged 1 task with “batch-3”. 4 were not found (deleted, or not yours to see)."
    )
    assert _tags(elsewhere) == []  # a task of another project is never touched


# --- core: tags -----------------------------------------------------------------------------------


def test_add_tag_tags_what_the_user_may_change_and_says_why_not_the_rest(
    project, author, lead, elsewhere
):
    author2 = UserFactory(username="author2")
    MembershipFactory(project=project, user=author2, role=Role.AUTHOR)
    mine = [TaskFactory(project=project, author=author, title=f"Loans {i}") for i in range(3)]
    theirs = TaskFactory(project=project, author=author2, title="Someone else's")
    services.task_tags_set(task=mine[0], actor=author, names=["batch-3"])
    services.task_tags_set(task=mine[1], actor=author, names=["finance"])
    TaskEvent.objects.filter(kind="tags_set").delete()

    report = _apply(author, "add_tag", [*mine, theirs, elsewhere], tag="Batch-3")

    assert [_tags(t) for t in mine] == [["batch-3"], ["batch-3", "finance"], ["batch-3"]]
    assert _tags(theirs) == [] and _tags(elsewhere) == []
    assert (report.done, report.missing) == (2, 1)
    assert {t.pk: why for t, why in report.skipped} == {
        mine[0].pk: "already tagged “batch-3”",
        theirs.pk: EDIT_REFUSED,
    }
    assert report.text == (
        f"Tagged 2 tasks with “batch-3”. 2 skipped — {EDIT_REFUSED[:-1]}: #{theirs.pk} "
        f"“Someone else's”; already tagged “batch-3”: #{mine[0].pk} “Loans 0”. "
        "1 was not found (deleted, or not yours to see)."
    )
    # The event task_tags_set records, for each task changed.
    events = TaskEvent.objects.filter(kind="tags_set").order_by("task_id")
    assert [(e.task_id, e.actor_id, e.data) for e in events] == [
        (mine[1].pk, author.pk, {"before": ["finance"], "after": ["batch-3", "finance"]}),
        (mine[2].pk, author.pk, {"before": [], "after": ["batch-3"]}),
    ]
    assert Tag.objects.filter(name="batch-3").count() == 1  # one per project, reused

    # A lead changes every task of the project.
    report = _apply(lead, "remove_tag", [*mine, theirs], tag="batch-3")
    assert [_tags(t) for t in mine] == [[], ["finance"], []]
    assert report.done == 3 and [why for _t, why in report.skipped] == ["not tagged “batch-3”"]
    assert report.text.startswith("Removed “batch-3” from 3 tasks. 1 skipped — not tagged")


def test_every_task_the_filter_matches_is_tagged_in_bounded_queries(project, author, monkeypatch):
    monkeypatch.setattr(bulk_service, "CHUNK", 50)
    records = [
        {
            "domain": "sql",
            "source": "bird",
            "source_id": f"bulk/{i}",
            "title": f"Loans {i}" if i % 4 else f"Branches {i}",
            "original_spec": {"question": "How many?", "evidence": ""},
            "blocked_spec": {"question": "How many?", "evidence": ""},
            "environment": {"db_id": "retail_bank"},
        }
        for i in range(1000)
    ]
    services.task_create_many(project=project, records=records, author=author)
    loans = Task.objects.filter(title__startswith="Loans")

    with CaptureQueriesContext(connection) as queries:
        report = _apply(author, "add_tag", filters={"q": "Loans"}, tag="loans")

    assert report.done == loans.count() == 750 and not report.skipped
    assert Task.objects.filter(tags__name="loans").count() == 750
    assert not Task.objects.filter(tags__name="loans", title__startswith="Branches").exists()
    assert TaskEvent.objects.filter(kind="tags_set").count() == 750
    # A fixed number a chunk of 50 (the chunk, the roles, its tags, the tag, the links, the
    # events, savepoints) and the selection once: not a few a task, as one by one would be.
    chunks = 750 // 50
    assert len(queries.captured_queries) <= 5 + 12 * chunks, len(queries.captured_queries)


# --- review: assign to a reviewer -----------------------------------------------------------------


def _in_review(task, layer: int = 5):
    """In review at ``layer`` (5: judge-validation labelling, done by a reviewer)."""
    Task.objects.filter(pk=task.pk).update(
        status="in_review", review_layer=layer, layer_entered_at=timezone.now()
    )
    task.refresh_from_db()
    return task


def test_assign_goes_through_review_assign_and_lists_each_refusal(
    project, author, reviewer, lead, elsewhere
):
    pipeline_ensure(project)
    waiting = [_in_review(TaskFactory(project=project, author=author)) for _ in range(2)]
    draft = TaskFactory(project=project, author=author, title="Still a draft")
    own = _in_review(TaskFactory(project=project, author=reviewer, title="Reviewer's own"))
    # A project where the lead only reads: review_assign's lead check refuses its task.
    other = ProjectFactory(name="Read only", slug="read-only")
    MembershipFactory(project=other, user=lead, role=Role.REVIEWER)
    MembershipFactory(project=other, user=reviewer, role=Role.REVIEWER)
    not_led = _in_review(TaskFactory(project=other, author=author, title="Not led"))
    _in_review(elsewhere)

    report = _apply(lead, "assign", [*waiting, draft, own, not_led, elsewhere], reviewer="reviewer")

    reasons = {t.pk: why for t, why in report.skipped}
    assert (report.done, report.missing) == (2, 1), reasons
    assert reasons == {
        draft.pk: "Only a task in review can be assigned.",
        own.pk: "reviewer cannot take this task: Nobody reviews a task they authored.",
        not_led.pk: "Only a lead of Read only may assign reviewers.",
    }
    assigned = ReviewAssignment.objects.filter(status=ReviewAssignment.Status.ACTIVE)
    assert sorted(assigned.values_list("task_id", "layer", "reviewer__username")) == sorted(
        (t.pk, 5, "reviewer") for t in waiting
    )
    events = TaskEvent.objects.filter(kind="review_assigned")
    assert sorted(events.values_list("task_id", flat=True)) == sorted(t.pk for t in waiting)
    assert Notification.objects.filter(user=reviewer, kind="assigned").count() == 2
    assert report.text.startswith("Assigned 2 tasks to reviewer at their current layer. 3 skipped")

    with pytest.raises(DomainError, match="Choose the person"):
        _apply(lead, "assign", waiting, reviewer="")
    nobody = _apply(lead, "assign", waiting, reviewer="stranger")
    assert nobody.done == 0
    assert {why for _t, why in nobody.skipped} == {"stranger is not a member of HiL-Bench SQL v2."}
    with pytest.raises(AccessDenied):
        _apply(author, "assign", waiting, reviewer="reviewer")


# --- validators: structural checks ----------------------------------------------------------------


def test_structural_checks_start_one_job_per_task_the_user_may_change(
    project, author, lead, elsewhere, django_capture_on_commit_callbacks
):
    author2 = UserFactory(username="author2")
    MembershipFactory(project=project, user=author2, role=Role.AUTHOR)
    sql = TaskFactory(project=project, author=author)
    swe = TaskFactory(project=project, author=author, swe=True)
    for task in (sql, swe, elsewhere):
        revision_create(task=task, actor=task.author, reason="created")
    bare = TaskFactory(project=project, author=author, title="No revision")
    theirs = TaskFactory(project=project, author=author2, title="Not mine")
    revision_create(task=theirs, actor=author2, reason="created")

    with django_capture_on_commit_callbacks() as sent:
        report = _apply(author, "structural_checks", [sql, swe, bare, theirs, elsewhere])

    assert (report.done, report.missing) == (2, 1)
    assert {t.pk: why for t, why in report.skipped} == {
        bare.pk: "The task has no revision to validate.",
        theirs.pk: EDIT_REFUSED,
    }
    runs = {run.task_id: run for run in ValidationRun.objects.all()}
    assert set(runs) == {sql.pk, swe.pk}
    assert runs[sql.pk].checks == groups_for("sql") and runs[swe.pk].checks == groups_for("swe")
    assert all(r.status == ValidationRun.Status.QUEUED for r in runs.values())
    assert runs[sql.pk].revision == sql.revisions.get() and runs[sql.pk].created_by == author
    assert len(sent) == 2  # one job each, sent once the transaction commits
    events = TaskEvent.objects.filter(kind="validation_queued")
    assert sorted(e.data["run"] for e in events) == sorted(r.pk for r in runs.values())
    assert report.text.startswith("Structural checks started for 2 tasks (one job each). 2 skip")

    # A lead starts them for anyone's task.
    assert _apply(lead, "structural_checks", [theirs]).done == 1


# --- the page -------------------------------------------------------------------------------------


def test_the_list_posts_a_selection_and_shows_what_was_done(client, project, author, elsewhere):
    tasks = [TaskFactory(project=project, author=author, title=f"Loans {i}") for i in range(3)]
    client.force_login(author)
    page = client.get(reverse("task-list"), {"q": "Loans"}).content.decode()
    assert 'aria-label="Bulk actions"' in page and 'name="ids"' in page
    assert "All 3 matching the filter" in page
    assert 'value="assign"' not in page  # an author does not assign

    response = client.post(
        reverse("task-bulk"),
        {
            "action": "add_tag",
            "param-tag": "batch-3",
            "ids": [tasks[0].pk, tasks[2].pk, elsewhere.pk],
            "q": "Loans",
            "page": "1",
        },
        follow=True,
    )
    assert response.redirect_chain == [(reverse("task-list") + "?q=Loans", 302)]
    body = response.content.decode()
    assert "Tagged 2 tasks with “batch-3”. 1 was not found" in body
    assert [_tags(t) for t in tasks] == [["batch-3"], [], ["batch-3"]]
    assert _tags(elsewhere) == []

    # Every task the filter matches: the ticks are not needed.
    client.post(
        reverse("task-bulk"),
        {"action": "add_tag", "param-tag": "all", "scope": "all", "q": "Loans"},
    )
    assert all("all" in _tags(t) for t in tasks) and _tags(elsewhere) == []


@pytest.mark.parametrize(
    "data, message",
    [
        ({"action": "nope", "ids": ["1"]}, "Choose an action"),
        ({"action": "add_tag", "param-tag": "x"}, "No task is selected"),
        ({"action": "add_tag", "param-tag": "x", "ids": ["a", "0", "7" * 30]}, "3 were not found"),
        ({"action": "add_tag", "param-tag": "x y"}, "Tag &#x27;x y&#x27;"),
    ],
)
def test_bad_input_is_a_message_never_a_500(client, project, author, data, message):
    TaskFactory(project=project, author=author)
    client.force_login(author)
    response = client.post(reverse("task-bulk"), data, follow=True)
    assert response.status_code == 200
    assert message in response.content.decode()


def test_a_forged_post_of_an_action_not_offered_is_refused(client, project, author, reviewer):
    pipeline_ensure(project)
    task = _in_review(TaskFactory(project=project, author=get_user_model().objects.create()))
    client.force_login(author)
    assign = {"action": "assign", "param-reviewer": "reviewer", "ids": [task.pk]}
    assert client.post(reverse("task-bulk"), assign).status_code == 403
    client.force_login(reviewer)
    tag = {"action": "add_tag", "param-tag": "x", "ids": [task.pk]}
    assert client.post(reverse("task-bulk"), tag).status_code == 403
    assert not ReviewAssignment.objects.exists() and _tags(task) == []
    # Without the CSRF token the form's POST is refused too.
    csrf = client.__class__(enforce_csrf_checks=True)
    csrf.force_login(author)
    assert csrf.post(reverse("task-bulk"), tag).status_code == 403
