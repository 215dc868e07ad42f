"""A reviewer's decision at a layer: approve, request changes or reject."""

from django.db import transaction

from hilbench_annotate import workflow
from hilbench_annotate.access import access_task
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.gates import gate_results
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.selectors import revision_current
from hilbench_annotate.services import task_search_refresh
from hilbench_annotate.toolkit.wording import plain_list, shorten
from review.models import ReviewAssignment, ReviewDecision, ReviewLayer
from review.selectors import independence_problem, pipeline_layers, policy_for

from .pipeline import pipeline_layer
from .threads import notify
from .transitions import task_transition


@transaction.atomic
def review_decide(
    *,
    actor,
    task_id: int,
    outcome: str,
    revision_number: int,
    summary: str = "",
    checklist: list[dict] | None = None,
    blocker_comments: dict[str, str] | None = None,
    reject_reason: str = "",
) -> ReviewDecision:
    """Approve, request changes or reject at the task's current layer.

    ``actor`` decides, on the task's row lock, in one transaction. Refused unless they may
    read the task (404), hold its active assignment (or, at the self-check, are its author),
    may act at this layer under the independence rules, judged the current revision, and — to
    approve — the layer's gates are green and every checklist item is answered.
    """
    task = access_task(actor, task_id, for_update=True)
    reviewer = actor
    layer, assignment = _layer_and_assignment(task, reviewer, outcome)
    revision = _judged_revision(task, revision_number)
    answers = _checklist_answers(layer, checklist or [], strict=outcome == "approve")
    comments = _blocker_comments(task, blocker_comments or {})
    _require_grounds(task, layer, outcome, summary, comments, answers, reject_reason)
    decision = ReviewDecision.objects.create(
        task=task,
        layer=layer.position,
        layer_name=layer.name,
        reviewer=reviewer,
        revision=revision,
        outcome=outcome,
        summary=summary.strip(),
        reject_reason=reject_reason,
        checklist=answers,
        blocker_comments=comments,
    )
    if assignment:
        ReviewAssignment.objects.filter(pk=assignment.pk).update(
            status=ReviewAssignment.Status.DONE
        )
    _apply_decision(task, layer, decision)
    task_search_refresh(task_ids=[task.pk])  # its summary and notes are searched
    return decision


def _layer_and_assignment(
    task: Task, reviewer, outcome: str
) -> tuple[ReviewLayer, ReviewAssignment | None]:
    """The layer the task waits at and the reviewer's live assignment there, or why not."""
    if task.status != workflow.IN_REVIEW:
        raise DomainError(f"The task is {task.get_status_display().lower()}, not in review.")
    if outcome not in workflow.DECISIONS:
        raise DomainError(f"Unknown decision {outcome!r}.")
    layer = pipeline_layer(task, task.review_layer)
    problem = independence_problem(task=task, user=reviewer, layer=layer)
    if problem:
        raise AccessDenied(problem)
    assignment = (
        ReviewAssignment.objects.live()
        .filter(task=task, layer=layer.position, reviewer=reviewer)
        .first()
    )
    if assignment is None and not layer.self_check:
        raise DomainError(
            "Take the task first (or ask a lead to assign it to you); your lock may have expired."
        )
    return layer, assignment


def _judged_revision(task: Task, revision_number: int) -> Revision:
    revision = revision_current(task=task)
    if revision is None or revision.number != revision_number:
        raise DomainError(
            f"You judged revision {revision_number}, but the task is at revision "
            f"{revision.number if revision else 0}; reload and judge the current one."
        )
    return revision


def _blocker_comments(task: Task, blocker_comments: dict[str, str]) -> dict[str, str]:
    comments = {k: v.strip() for k, v in blocker_comments.items() if v and v.strip()}
    unknown = set(comments) - set(task.blockers.values_list("key", flat=True))
    if unknown:
        raise DomainError(
            f"Comments name blockers the task does not have: {plain_list(sorted(unknown))}."
        )
    return comments


def _require_grounds(
    task: Task,
    layer: ReviewLayer,
    outcome: str,
    summary: str,
    comments: dict[str, str],
    answers: list[dict],
    reject_reason: str,
) -> None:
    """Approve needs green gates; request changes says what to change; reject names a reason."""
    if outcome == "approve":
        red = [(n, m) for n, green, m in gate_results(task, layer.gates) if not green]
        if red:
            raise DomainError("Gates are not green: " + "; ".join(f"{n}: {m}" for n, m in red))
    if outcome == "request_changes" and not (
        summary.strip() or comments or any(not a["passed"] for a in answers)
    ):
        raise DomainError("Say what to change: a summary, a blocker comment or a failed item.")
    if outcome == "reject":
        reasons = policy_for(project=task.project).reject_reasons
        if reject_reason not in reasons:
            raise DomainError(
                f"Rejecting needs a reason from the list: {plain_list(reasons, last='or')}."
            )


def _apply_decision(task: Task, layer: ReviewLayer, decision: ReviewDecision) -> None:
    """Move the task as the decision says and tell its author when it comes back or ends."""
    reviewer, outcome = decision.reviewer, decision.outcome
    if outcome == "approve":
        state, next_layer = workflow.approve_target(
            layer.position, len(pipeline_layers(project=task.project))
        )
        task_transition(
            task=task,
            action="approve",
            actor=reviewer,
            target=state,
            layer=next_layer,
            decision=decision.pk,
            layer_name=layer.name,
        )
        return
    extra = {"reason": decision.reject_reason} if outcome == "reject" else {}
    task_transition(
        task=task,
        action=outcome,
        actor=reviewer,
        decision=decision.pk,
        layer_name=layer.name,
        **extra,
    )
    if not task.author_id:
        return
    if outcome == "request_changes":
        text = f"{layer.name} asked for changes on “{shorten(task.title, 80)}”"
        kind = "changes_requested"
    else:
        text = f"“{shorten(task.title, 80)}” was rejected at {layer.name}: {decision.reject_reason}"
        kind = "rejected"
    notify(user=task.author, task=task, kind=kind, text=text)


def _checklist_answers(layer: ReviewLayer, answers: list[dict], *, strict: bool) -> list[dict]:
    by_item = {a.get("item"): a for a in answers if isinstance(a, dict)}
    result, missing = [], []
    for item in layer.checklist:
        answer = by_item.get(item)
        if answer is None or answer.get("passed") is None:
            missing.append(item)
            continue
        result.append(
            {
                "item": item,
                "passed": bool(answer["passed"]),
                "note": str(answer.get("note", "")).strip(),
            }
        )
    if strict and missing:
        raise DomainError(
            f"Answer every checklist item before approving; not answered: {plain_list(missing)}."
        )
    if strict and any(not a["passed"] for a in result):
        raise DomainError("A failed checklist item cannot be approved; request changes instead.")
    return result
