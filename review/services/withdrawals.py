"""Withdrawing a decision made by mistake: the task goes back to where it was before it.

The decision row stays, marked withdrawn (the audit trail keeps it and the timeline shows
it); every other read of the decisions no longer counts it (``StandingDecisions``).
"""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from hilbench_annotate import workflow
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.toolkit.wording import shorten
from review.access import access_decision
from review.models import ReviewAssignment, ReviewDecision
from review.selectors import policy_for, withdraw_problem

from .assignments import _expire_stale
from .pipeline import pipeline_layer
from .threads import notify
from .transitions import task_transition


@transaction.atomic
def review_withdraw(*, actor, decision_id: int) -> ReviewDecision:
    """Withdraw ``actor``'s own decision while nothing depends on it
    (``selectors.withdraw_problem``): the task is back in review at the decision's layer,
    held by ``actor`` again (no one holds a self-check), and the author, if the decision had
    sent the task back to them or ended it, is told. Refused with 404 when the actor cannot
    read the task, 403 when the decision is someone else's, 400 naming why when it can no
    longer be withdrawn."""
    decision = access_decision(actor, decision_id, for_update=True)
    task = decision.task
    if decision.reviewer_id != actor.pk:
        raise AccessDenied(
            f"Only {decision.reviewer.username}, who made this decision, can withdraw it."
        )
    _expire_stale([task.pk])
    problem = withdraw_problem(task=task, decision=decision)
    if problem:
        raise DomainError(f"Your decision cannot be withdrawn: {problem}.")
    now = timezone.now()
    if not ReviewDecision.all_objects.filter(pk=decision.pk, withdrawn_at=None).update(
        withdrawn_at=now
    ):
        raise DomainError("Your decision cannot be withdrawn: it was withdrawn already.")
    decision.withdrawn_at = now
    task_transition(
        task=task,
        action="withdraw",
        actor=actor,
        target=workflow.IN_REVIEW,
        layer=decision.layer,
        decision=decision.pk,
        outcome=decision.outcome,
        layer_name=decision.layer_name,
        revision=decision.revision.number,
    )
    layer = pipeline_layer(task, decision.layer)
    if not layer.self_check:
        ReviewAssignment.objects.create(
            task=task,
            layer=decision.layer,
            reviewer=actor,
            assigned_by=actor,
            expires_at=now + timedelta(minutes=policy_for(project=task.project).lock_minutes),
        )
    if task.author_id and decision.outcome != ReviewDecision.Outcome.APPROVE:
        notify(
            user=task.author,
            task=task,
            kind="decision_withdrawn",
            text=f"{actor.username} withdrew their decision on “{shorten(task.title, 80)}”: "
            f"it is back in review at {layer.name}",
        )
    return decision
