"""Moving a task through the workflow: the one function that applies a transition, and the
submission that hands a task to review."""

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from authoring.checks import as_dicts, draft_findings
from authoring.services import open_findings
from hilbench_annotate import workflow
from hilbench_annotate.access import access_task
from hilbench_annotate.errors import DomainError, StaleVersion
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_event, task_snapshot
from hilbench_annotate.toolkit.wording import shorten
from review.models import ReviewDecision

from .pipeline import pipeline_ensure, pipeline_layer
from .threads import notify


@transaction.atomic
def task_transition(
    *, task: Task, action: str, actor, target: str | None = None, layer: int | None = None, **data
) -> Task:
    """Apply a workflow action with ``UPDATE … WHERE status = <state read>``.

    If someone moved the task in between, the update matches nothing and the action is
    refused; an append-only event row records every transition that happened.
    """
    try:
        state = workflow.next_state(task.status, action)
    except workflow.TransitionRefused as exc:
        raise DomainError(str(exc)) from exc
    state = target or state
    now = timezone.now()
    expected = Q(pk=task.pk, status=task.status)
    if task.status == workflow.IN_REVIEW:
        expected &= Q(review_layer=task.review_layer)
    changes = {"status": state, "updated_at": now, "version": F("version") + 1}
    if state == workflow.IN_REVIEW:
        changes.update(review_layer=layer, layer_entered_at=now)
    elif state != workflow.CHANGES_REQUESTED:
        changes.update(review_layer=None, layer_entered_at=None)
    if not Task.objects.filter(expected).update(**changes):
        raise DomainError("The task changed state meanwhile; reload and try again.")
    source, source_layer = task.status, task.review_layer
    task.refresh_from_db()
    task_event(
        task=task,
        actor=actor,
        kind="status_changed",
        action=action,
        source=source,
        target=state,
        source_layer=source_layer,
        target_layer=task.review_layer,
        **data,
    )
    return task


def task_enter_review(*, task: Task, actor, **data) -> Task:
    """Submit or resubmit: to layer 1, or back to the layer that asked for changes."""
    pipeline_ensure(task.project)
    returns_to = task.review_layer if task.status == workflow.CHANGES_REQUESTED else None
    layer = workflow.submit_layer(returns_to)
    task = task_transition(task=task, action="submit", actor=actor, layer=layer, **data)
    if returns_to:
        last = (
            ReviewDecision.objects.filter(task=task, layer=layer).select_related("reviewer").first()
        )
        if last:
            notify(
                user=last.reviewer,
                task=task,
                kind="resubmitted",
                text=f"“{shorten(task.title, 80)}” is back at "
                f"{pipeline_layer(task, layer).name} after changes",
            )
    return task


@transaction.atomic
def task_submit(*, actor, task_id: int, expected_version: int) -> Task:
    """Lint and quick structural checks on the saved task, then hand it to review: the
    task's author or a lead, on the task's row lock, in one transaction.

    Refused, naming every open finding, while any error is neither fixed nor waived.
    """
    task = access_task(actor, task_id, for_update=True, edit=True)
    if task.version != expected_version:
        raise StaleVersion(expected=expected_version, current=task.version)
    findings = as_dicts(draft_findings(task, task_snapshot(task)))
    blocking = open_findings(task, findings)
    if blocking:
        listing = "; ".join(f["message"].rstrip(".") for f in blocking[:10])
        more = f" (and {len(blocking) - 10} more)" if len(blocking) > 10 else ""
        raise DomainError(
            f"Submission is blocked by {len(blocking)} lint finding(s): {listing}{more}. "
            "Fix them or waive them with a reason."
        )
    return task_enter_review(task=task, actor=actor, findings=len(findings))
