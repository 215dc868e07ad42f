"""Taking tasks from a queue: concurrent reviewers each get a different task; locks expire."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role
from review.models import ReviewAssignment, ReviewPolicy
from review.services import pipeline_ensure, review_decide, review_release, review_take_next

from ..factories import MembershipFactory, TaskFactory, UserFactory

LAYER = 3  # "Registry audit", role auditor


def _members(project, prefix: str, count: int, role=Role.AUDITOR) -> list:
    users = [UserFactory(username=f"{prefix}{i:02d}") for i in range(count)]
    for user in users:
        MembershipFactory(project=project, user=user, role=role)
    return users


def _waiting_tasks(project, author, count: int) -> list[Task]:
    tasks = TaskFactory.create_batch(count, project=project, author=author)
    Task.objects.filter(pk__in=[t.pk for t in tasks]).update(
        status="in_review", review_layer=LAYER, layer_entered_at=timezone.now()
    )
    return tasks


def _take_all_at_once(users, layer) -> tuple[dict[int, int | None], list[str]]:
    """Every user calls take-next at the same moment, each on its own connection."""
    barrier = threading.Barrier(len(users))
    taken: dict[int, int | None] = {}
    errors: list[str] = []

    def work(user):
        try:
            barrier.wait(timeout=30)
            assignment = review_take_next(user=user, layer=layer)
            taken[user.pk] = assignment.task_id if assignment else None
        except Exception as exc:  # every failure is reported by the test
            errors.append(f"{user.username}: {exc!r}")
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a take-next call hung"
    return taken, errors


@pytest.fixture
def on_postgresql(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL's SELECT … FOR UPDATE SKIP LOCKED; CI runs it")


@pytest.fixture
def registry_audit(project):
    layer = pipeline_ensure(project)[LAYER - 1]
    layer.project  # noqa: B018 - load it here, not concurrently in the threads
    return layer


@pytest.mark.parametrize(("reviewers", "tasks"), [(20, 20), (30, 20)])
def test_concurrent_take_next_gives_each_task_to_exactly_one_reviewer(
    on_postgresql, project, author, registry_audit, reviewers, tasks
):
    waiting = _waiting_tasks(project, author, tasks)
    auditors = _members(project, "auditor", reviewers)

    taken, errors = _take_all_at_once(auditors, registry_audit)

    assert errors == []
    assert len(taken) == reviewers
    got = [task_id for task_id in taken.values() if task_id is not None]
    assert sorted(got) == sorted(t.pk for t in waiting)  # every task, each exactly once
    assert list(taken.values()).count(None) == reviewers - tasks
    active = ReviewAssignment.objects.filter(status=ReviewAssignment.Status.ACTIVE)
    assert active.count() == tasks
    assert {(a.reviewer_id, a.task_id) for a in active} == {
        (user_id, task_id) for user_id, task_id in taken.items() if task_id is not None
    }


# --- expired locks (any database) ---------------------------------------------------------------


@pytest.fixture
def two_auditors(project):
    return _members(project, "auditor", 2)


@pytest.mark.django_db
def test_an_expired_lock_does_not_keep_the_task_from_the_next_reviewer(
    project, author, registry_audit, two_auditors
):
    [task] = _waiting_tasks(project, author, 1)
    first, second = two_auditors
    lapsed = review_take_next(user=first, layer=registry_audit)
    assert review_take_next(user=second, layer=registry_audit) is None  # locked to first

    ReviewAssignment.objects.filter(pk=lapsed.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    taken = review_take_next(user=second, layer=registry_audit)

    assert taken is not None
    assert taken.task_id == task.pk
    lapsed.refresh_from_db()
    assert lapsed.status == ReviewAssignment.Status.EXPIRED
    # The first reviewer's lock is gone: they can no longer decide.
    task.refresh_from_db()
    with pytest.raises(DomainError, match="Take the task first"):
        review_decide(
            actor=first, task_id=task.pk, outcome="request_changes", revision_number=1, summary="x"
        )


@pytest.mark.django_db
def test_an_expired_lock_is_not_kept_alive_by_an_older_unexpired_assignment(
    project, author, registry_audit, two_auditors
):
    """BUG (review/services.py, eligible_tasks): the two conditions of one ``exclude()`` over
    the ``assignments`` relation are checked against *any* assignments, not the same one, so a
    task is hidden when it has some active assignment and some other assignment that has not
    expired yet — here a released one from before the lead shortened the lock."""
    [task] = _waiting_tasks(project, author, 1)
    first, second = two_auditors
    third = _members(project, "late", 1)[0]
    released = review_take_next(user=first, layer=registry_audit)  # locked for 60 minutes
    review_release(actor=first, assignment_id=released.pk)
    ReviewPolicy.objects.filter(project=project).update(lock_minutes=5)
    lapsed = review_take_next(user=second, layer=registry_audit)  # locked for 5 minutes
    # Ten minutes later: the second lock has lapsed, the released one's expiry has not.
    ReviewAssignment.objects.filter(pk=lapsed.pk).update(
        expires_at=timezone.now() - timedelta(minutes=5)
    )

    taken = review_take_next(user=third, layer=registry_audit)

    assert taken is not None, "the task is hidden although its only active lock has expired"
    assert taken.task_id == task.pk
