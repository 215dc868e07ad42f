"""Withdrawing a decision made by mistake, from the review page or the queue (a form POST)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from hilbench_annotate.errors import DomainError
from review.access import access_decision
from review.services import review_withdraw


@login_required
@require_POST
def withdraw(request, decision_id: int):
    """Take back the user's own decision; back to the task's review page either way, with
    what happened or why not."""
    decision = access_decision(request.user, decision_id)  # 404 before anything is said
    try:
        review_withdraw(actor=request.user, decision_id=decision_id)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Withdrew your decision ({decision.get_outcome_display().lower()}): the task is "
            f"back at layer {decision.layer} ({decision.layer_name}) for you to decide again.",
        )
    return redirect("review-task", task_id=decision.task.pk)
