"""Who holds a task at a layer: taking the next one from a queue, a lead's assignment, and
giving a task back."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from hilbench_annotate import workflow
from hilbench_annotate.access import access_task, has_role, require_role
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.services import event_record, task_event
from hilbench_annotate.toolkit.wording import shorten
from hilbench_annotate.vocabulary import Role
from review.access import access_assignment
from review.models import ReviewAssignment, ReviewLayer
from review.selectors import eligible_tasks, independence_problem, policy_for

from .pipeline import pipeline_layer
from .threads import notify

NOT_IN_REVIEW = "Only a task in review can be assigned."


def _expire_stale(task_ids=None) -> None:
    stale = ReviewAssignment.objects.filter(
        status=ReviewAssignment.Status.ACTIVE, expires_at__lte=timezone.now()
    )
    if task_ids is not None:
        stale = stale.filter(task_id__in=task_ids)
    stale.update(status=ReviewAssignment.Status.EXPIRED)


def review_take_next(*, user, layer: ReviewLayer) -> ReviewAssignment | None:
    """Lock the oldest eligible task at ``layer`` to ``user``; None when the queue is empty.

    ``SELECT … FOR UPDATE SKIP LOCKED`` lets concurrent reviewers each take a different task
    without waiting (PostgreSQL; SQLite serialises writers instead). The partial unique
    index on active assignments is the last word: a lost race retries with the next task.
    """
    if not has_role(user, layer.project_id, layer.role):
        raise AccessDenied(f"{layer.name} needs the {layer.role} role.")
    mine = (
        ReviewAssignment.objects.live()
        .filter(
            reviewer=user,
            layer=layer.position,
            task__project_id=layer.project_id,
            task__status=workflow.IN_REVIEW,
            task__review_layer=layer.position,
        )
        .first()
    )
    if mine:
        return mine
    policy = policy_for(project=layer.project)
    for _attempt in range(5):
        with transaction.atomic():
            candidates = eligible_tasks(user=user, layer=layer).select_for_update(skip_locked=True)
            task = candidates.first()
            if task is None:
                return None
            _expire_stale([task.pk])
            try:
                with transaction.atomic():
                    assignment = ReviewAssignment.objects.create(
                        task=task,
                        layer=layer.position,
                        reviewer=user,
                        expires_at=timezone.now() + timedelta(minutes=policy.lock_minutes),
                    )
            except IntegrityError:
                continue  # someone took it between our read and write; try the next one
            task_event(
                task=task,
                actor=user,
                kind="review_taken",
                layer=layer.position,
            )
            return assignment
    return None


@transaction.atomic
def review_assign(*, actor, task_id: int, reviewer: str) -> ReviewAssignment:
    """A lead assigns (or reassigns) the task's current layer to the project member named
    ``reviewer`` — the page and the API alike. The task must be visible to ``actor`` (404
    otherwise) and ``actor`` a lead (403) before the name is looked up, so that only leads
    learn which usernames exist; a name that is no member of the project is refused (400)."""
    task = access_task(actor, task_id, for_update=True)
    require_role(actor, task.project, Role.LEAD, action="assign reviewers")
    member = (
        get_user_model()
        .objects.filter(username=reviewer, memberships__project=task.project_id)
        .first()
    )
    if member is None:
        raise DomainError(f"{reviewer or 'No one'} is not a member of {task.project.name}.")
    return _assign(task=task, reviewer=member, actor=actor)


def _assign(*, task: Task, reviewer, actor) -> ReviewAssignment:
    """``review_assign`` once the task is locked, the actor a lead and the reviewer known."""
    if task.status != workflow.IN_REVIEW:
        raise DomainError(NOT_IN_REVIEW)
    layer = pipeline_layer(task, task.review_layer)
    problem = independence_problem(task=task, user=reviewer, layer=layer)
    if problem:
        raise DomainError(f"{reviewer.username} cannot take this task: {problem}")
    for previous in (
        ReviewAssignment.objects.filter(task=task, status=ReviewAssignment.Status.ACTIVE)
        .exclude(reviewer=reviewer)
        .select_related("reviewer")
    ):
        notify(
            user=previous.reviewer,
            task=task,
            kind="unassigned",
            text=f"“{shorten(task.title, 80)}” was reassigned to {reviewer.username} "
            f"by {actor.username}",
        )
    ReviewAssignment.objects.filter(task=task, status=ReviewAssignment.Status.ACTIVE).update(
        status=ReviewAssignment.Status.RELEASED
    )
    assignment = ReviewAssignment.objects.create(
        task=task,
        layer=layer.position,
        reviewer=reviewer,
        assigned_by=actor,
        expires_at=timezone.now()
        + timedelta(minutes=policy_for(project=task.project).lock_minutes),
    )
    task_event(
        task=task,
        actor=actor,
        kind="review_assigned",
        layer=layer.position,
        reviewer=reviewer.username,
    )
    notify(
        user=reviewer,
        task=task,
        kind="assigned",
        text=f"You were assigned “{shorten(task.title, 80)}” at {layer.name}",
    )
    return assignment


@transaction.atomic
def review_release(*, actor, assignment_id: int) -> ReviewAssignment:
    """Give the task back to the queue: its reviewer, or a lead; on the task's row lock."""
    assignment = access_assignment(actor, assignment_id, for_update=True)
    if assignment.reviewer_id != actor.pk:
        require_role(actor, assignment.task.project, Role.LEAD)
    released = ReviewAssignment.objects.filter(
        pk=assignment.pk, status=ReviewAssignment.Status.ACTIVE
    ).update(status=ReviewAssignment.Status.RELEASED)
    if not released:
        raise DomainError(
            f"This assignment is {assignment.get_status_display().lower()}, not active."
        )
    event_record(
        project_id=assignment.task.project_id,
        task_id=assignment.task_id,
        actor=actor,
        kind="review_released",
        layer=assignment.layer,
    )
    assignment.refresh_from_db(fields=["status"])
    return assignment
