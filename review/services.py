"""Every state change of the review workflow goes through a function here."""

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from hilbench_annotate.access import roles_in
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.services import event_record, task_event
from review import workflow
from review.models import (
    DEFAULT_REJECT_REASONS,
    Comment,
    Notification,
    ReviewAssignment,
    ReviewDecision,
    ReviewLayer,
    ReviewPolicy,
)
from review.pipeline import DEFAULT_LAYERS, gate_results

# --- pipeline ---------------------------------------------------------------------------------


def pipeline_ensure(project: Project) -> list[ReviewLayer]:
    """The project's layers, made from the default pipeline the first time they are needed."""
    layers = list(ReviewLayer.objects.filter(project=project).order_by("position"))
    if layers:
        return layers
    with transaction.atomic():
        ReviewPolicy.objects.get_or_create(
            project=project, defaults={"reject_reasons": DEFAULT_REJECT_REASONS}
        )
        for position, layer in enumerate(DEFAULT_LAYERS, start=1):
            ReviewLayer.objects.get_or_create(project=project, position=position, defaults=layer)
    return list(ReviewLayer.objects.filter(project=project).order_by("position"))


def policy_for(project: Project) -> ReviewPolicy:
    policy, _ = ReviewPolicy.objects.get_or_create(
        project=project, defaults={"reject_reasons": DEFAULT_REJECT_REASONS}
    )
    return policy


@transaction.atomic
def pipeline_update(
    *, project: Project, actor, layers: list[dict], lock_minutes: int, reject_reasons: list[str]
) -> list[ReviewLayer]:
    """Replace the project's pipeline (leads only). Tasks in review keep their position."""
    _require_role(actor, project, "lead")
    if not 1 <= len(layers) <= 10:
        raise DomainError("A pipeline has between 1 and 10 layers.")
    problems = []
    for i, layer in enumerate(layers, start=1):
        if not str(layer.get("name", "")).strip():
            problems.append(f"layer {i} needs a name")
        if layer.get("role") not in {"author", "reviewer", "auditor", "lead"}:
            problems.append(f"layer {i}: role must be author, reviewer, auditor or lead")
    # Tasks sent back for changes keep their layer: they return to it when resubmitted.
    waiting_beyond = Task.objects.filter(
        project=project,
        status__in=[workflow.IN_REVIEW, workflow.CHANGES_REQUESTED],
        review_layer__gt=len(layers),
    ).count()
    if waiting_beyond:
        problems.append(
            f"{waiting_beyond} task(s) wait at a layer beyond the new last one "
            "(in review there, or returning to it after changes)"
        )
    from review.pipeline import GATES

    unknown = sorted(
        {g.strip() for layer in layers for g in layer.get("gates", []) if g.strip()} - set(GATES)
    )
    if unknown:
        problems.append(f"unknown automated checks {unknown}; known: {sorted(GATES)}")
    if not [r for r in reject_reasons if r.strip()]:
        problems.append("give at least one reject reason")
    if problems:
        raise DomainError("; ".join(problems))
    ReviewLayer.objects.filter(project=project).delete()
    for position, layer in enumerate(layers, start=1):
        ReviewLayer.objects.create(
            project=project,
            position=position,
            name=layer["name"].strip(),
            role=layer["role"],
            self_check=bool(layer.get("self_check")),
            checklist=[c.strip() for c in layer.get("checklist", []) if c.strip()],
            gates=[g.strip() for g in layer.get("gates", []) if g.strip()],
        )
    policy = policy_for(project)
    policy.lock_minutes = max(1, int(lock_minutes))
    policy.reject_reasons = [r.strip() for r in reject_reasons if r.strip()]
    policy.save()
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="pipeline_changed",
        layers=[layer["name"] for layer in layers],
    )
    return list(ReviewLayer.objects.filter(project=project).order_by("position"))


def _layer(task: Task, position: int) -> ReviewLayer:
    layers = pipeline_ensure(task.project)
    try:
        return layers[position - 1]
    except IndexError:
        raise DomainError(f"The pipeline has no layer {position}.") from None


def _require_role(user, project: Project, *roles: str) -> None:
    if user.is_superuser:
        return
    if not roles_in(user, project.pk) & set(roles):
        raise AccessDenied(f"You need the {' or '.join(roles)} role in {project.name}.")


# --- transitions --------------------------------------------------------------------------------


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
                text=f"“{task.title[:80]}” is back at {_layer(task, layer).name} after changes",
            )
    return task


# --- independence and eligibility ------------------------------------------------------------


def independence_problem(task: Task, user, layer: ReviewLayer) -> str | None:
    """Why ``user`` may not act on ``task`` at ``layer`` (None when they may)."""
    if layer.self_check:
        if task.author_id != user.pk:
            return f"{layer.name} is done by the task's own author."
    else:
        if task.author_id == user.pk:
            return "Nobody reviews a task they authored."
        other = (
            ReviewDecision.objects.filter(task=task, reviewer=user)
            .exclude(layer=layer.position)
            .values_list("layer", flat=True)
            .first()
        )
        if other is None:
            other = (
                ReviewAssignment.objects.filter(task=task, reviewer=user)
                .exclude(layer=layer.position)
                .exclude(status=ReviewAssignment.Status.EXPIRED)
                .exclude(status=ReviewAssignment.Status.RELEASED)
                .values_list("layer", flat=True)
                .first()
            )
        if other is not None:
            return (
                f"You already acted on this task at layer {other}; each layer needs another person."
            )
    if not user.is_superuser and layer.role not in roles_in(user, task.project_id):
        return f"{layer.name} needs the {layer.role} role in {task.project.name}."
    return None


def eligible_tasks(user, layer: ReviewLayer):
    """Tasks waiting at ``layer`` that ``user`` may take, oldest first (not yet locked out)."""
    now = timezone.now()
    # One subquery, so "active" and "not expired" are tested on the same assignment row.
    locked = ReviewAssignment.objects.filter(
        status=ReviewAssignment.Status.ACTIVE, expires_at__gt=now
    ).values("task_id")
    tasks = Task.objects.filter(
        project_id=layer.project_id, status=workflow.IN_REVIEW, review_layer=layer.position
    ).exclude(pk__in=locked)
    if layer.self_check:
        tasks = tasks.filter(author=user)
    else:
        acted = ReviewDecision.objects.filter(reviewer=user).exclude(layer=layer.position)
        held = ReviewAssignment.objects.filter(
            reviewer=user, status__in=[ReviewAssignment.Status.ACTIVE, ReviewAssignment.Status.DONE]
        ).exclude(layer=layer.position)
        tasks = (
            tasks.exclude(author=user)
            .exclude(pk__in=acted.values("task_id"))
            .exclude(pk__in=held.values("task_id"))
        )
    return tasks.order_by("layer_entered_at", "pk")


# --- assignment -----------------------------------------------------------------------------------


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
    problem = (
        None
        if user.is_superuser or layer.role in roles_in(user, layer.project_id)
        else (f"{layer.name} needs the {layer.role} role.")
    )
    if problem:
        raise AccessDenied(problem)
    mine = ReviewAssignment.objects.filter(
        reviewer=user,
        layer=layer.position,
        task__project_id=layer.project_id,
        status=ReviewAssignment.Status.ACTIVE,
        expires_at__gt=timezone.now(),
        task__status=workflow.IN_REVIEW,
        task__review_layer=layer.position,
    ).first()
    if mine:
        return mine
    policy = policy_for(layer.project)
    for _attempt in range(5):
        with transaction.atomic():
            candidates = eligible_tasks(user, layer).select_for_update(skip_locked=True)
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
def review_assign(*, task: Task, reviewer, actor) -> ReviewAssignment:
    """A lead assigns (or reassigns) the task's current layer to ``reviewer``."""
    _require_role(actor, task.project, "lead")
    if task.status != workflow.IN_REVIEW:
        raise DomainError("Only a task in review can be assigned.")
    layer = _layer(task, task.review_layer)
    problem = independence_problem(task, reviewer, layer)
    if problem:
        raise DomainError(f"{reviewer.username} cannot take this task: {problem}")
    task = Task.objects.select_for_update().get(pk=task.pk)
    for previous in (
        ReviewAssignment.objects.filter(task=task, status=ReviewAssignment.Status.ACTIVE)
        .exclude(reviewer=reviewer)
        .select_related("reviewer")
    ):
        notify(
            user=previous.reviewer,
            task=task,
            kind="unassigned",
            text=f"“{task.title[:80]}” was reassigned to {reviewer.username} by {actor.username}",
        )
    ReviewAssignment.objects.filter(task=task, status=ReviewAssignment.Status.ACTIVE).update(
        status=ReviewAssignment.Status.RELEASED
    )
    assignment = ReviewAssignment.objects.create(
        task=task,
        layer=layer.position,
        reviewer=reviewer,
        assigned_by=actor,
        expires_at=timezone.now() + timedelta(minutes=policy_for(task.project).lock_minutes),
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
        text=f"You were assigned “{task.title[:80]}” at {layer.name}",
    )
    return assignment


@transaction.atomic
def review_release(*, assignment: ReviewAssignment, actor) -> None:
    if assignment.reviewer_id != actor.pk:
        _require_role(actor, assignment.task.project, "lead")
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


# --- decisions -----------------------------------------------------------------------------------


@transaction.atomic
def review_decide(
    *,
    task: Task,
    reviewer,
    outcome: str,
    revision_number: int,
    summary: str = "",
    checklist: list[dict] | None = None,
    blocker_comments: dict[str, str] | None = None,
    reject_reason: str = "",
) -> ReviewDecision:
    """Approve, request changes or reject at the task's current layer.

    Caller holds the task row lock. Refused unless the reviewer holds the task's active
    assignment (or, at the self-check, is its author), may act at this layer under the
    independence rules, judged the current revision, and — to approve — the layer's gates
    are green and every checklist item is answered.
    """
    if task.status != workflow.IN_REVIEW:
        raise DomainError(f"The task is {task.get_status_display().lower()}, not in review.")
    if outcome not in workflow.DECISIONS:
        raise DomainError(f"Unknown decision {outcome!r}.")
    layer = _layer(task, task.review_layer)
    problem = independence_problem(task, reviewer, layer)
    if problem:
        raise AccessDenied(problem)
    assignment = ReviewAssignment.objects.filter(
        task=task,
        layer=layer.position,
        reviewer=reviewer,
        status=ReviewAssignment.Status.ACTIVE,
        expires_at__gt=timezone.now(),
    ).first()
    if assignment is None and not layer.self_check:
        raise DomainError(
            "Take the task first (or ask a lead to assign it to you); your lock may have expired."
        )
    revision = task.revisions.order_by("-number").first()
    if revision is None or revision.number != revision_number:
        raise DomainError(
            f"You judged revision {revision_number}, but the task is at revision "
            f"{revision.number if revision else 0}; reload and judge the current one."
        )
    answers = _checklist_answers(layer, checklist or [], strict=outcome == "approve")
    comments = {k: v.strip() for k, v in (blocker_comments or {}).items() if v and v.strip()}
    unknown = set(comments) - set(task.blockers.values_list("key", flat=True))
    if unknown:
        raise DomainError(f"Comments name blockers the task does not have: {sorted(unknown)}")
    if outcome == "approve":
        red = [(n, m) for n, green, m in gate_results(task, layer.gates) if not green]
        if red:
            raise DomainError("Gates are not green: " + "; ".join(f"{n}: {m}" for n, m in red))
    if outcome == "request_changes" and not (
        summary.strip() or comments or any(not a["passed"] for a in answers)
    ):
        raise DomainError("Say what to change: a summary, a blocker comment or a failed item.")
    if outcome == "reject":
        reasons = policy_for(task.project).reject_reasons
        if reject_reason not in reasons:
            raise DomainError(f"Rejecting needs a reason from the list: {reasons}")
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
    if outcome == "approve":
        state, next_layer = workflow.approve_target(
            layer.position, len(pipeline_ensure(task.project))
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
    elif outcome == "request_changes":
        task_transition(
            task=task,
            action="request_changes",
            actor=reviewer,
            decision=decision.pk,
            layer_name=layer.name,
        )
        if task.author_id:
            notify(
                user=task.author,
                task=task,
                kind="changes_requested",
                text=f"{layer.name} asked for changes on “{task.title[:80]}”",
            )
    else:
        task_transition(
            task=task,
            action="reject",
            actor=reviewer,
            decision=decision.pk,
            reason=reject_reason,
            layer_name=layer.name,
        )
        if task.author_id:
            notify(
                user=task.author,
                task=task,
                kind="rejected",
                text=f"“{task.title[:80]}” was rejected at {layer.name}: {reject_reason}",
            )
    return decision


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
        raise DomainError(f"Answer every checklist item before approving; missing: {missing}")
    if strict and any(not a["passed"] for a in result):
        raise DomainError("A failed checklist item cannot be approved; request changes instead.")
    return result


def changes_requested_context(task: Task) -> ReviewDecision | None:
    """The decision that sent the task back to its author, if that is why it is editable."""
    if task.status != workflow.CHANGES_REQUESTED:
        return None
    return (
        task.decisions.filter(outcome="request_changes")
        .select_related("reviewer", "revision")
        .first()
    )


def revision_judged_last(task: Task, layer: int) -> Revision | None:
    decision = task.decisions.filter(layer=layer).select_related("revision").first()
    return decision.revision if decision else None


# --- threads and notifications -------------------------------------------------------------------


@transaction.atomic
def comment_add(
    *, task: Task, author, body: str, blocker_key: str = "", parent: Comment | None = None
) -> Comment:
    body = body.strip()
    if not body:
        raise DomainError("A comment needs text.")
    if parent is not None:
        if parent.task_id != task.pk:
            raise DomainError("The reply belongs to another task.")
        parent = parent.parent or parent  # threads are one level deep
        blocker_key = parent.blocker_key
    elif blocker_key and not task.blockers.filter(key=blocker_key).exists():
        raise DomainError(f"The task has no blocker {blocker_key!r}.")
    comment = Comment.objects.create(
        task=task, author=author, body=body, blocker_key=blocker_key, parent=parent
    )
    task_event(
        task=task,
        actor=author,
        kind="comment_added",
        comment=comment.pk,
        blocker=blocker_key,
        reply=parent is not None,
    )
    if parent is not None:
        people = {parent.author_id} | set(parent.replies.values_list("author_id", flat=True))
        for user_id in people - {author.pk}:
            Notification.objects.create(
                user_id=user_id,
                task=task,
                kind="reply",
                text=f"{author.username} replied on “{task.title[:80]}”",
            )
    return comment


@transaction.atomic
def comment_set_resolved(*, comment: Comment, actor, resolved: bool) -> Comment:
    root = comment.parent or comment
    Comment.objects.filter(pk=root.pk).update(resolved=resolved)
    root.resolved = resolved
    event_record(
        project_id=root.task.project_id,
        task_id=root.task_id,
        actor=actor,
        kind="thread_resolved" if resolved else "thread_reopened",
        comment=root.pk,
    )
    return root


def notify(*, user, task: Task | None, kind: str, text: str) -> Notification:
    return Notification.objects.create(user=user, task=task, kind=kind, text=text[:300])


def notifications_mark_read(*, user, ids: list[int] | None = None) -> int:
    unread = Notification.objects.filter(user=user, read_at=None)
    if ids is not None:
        unread = unread.filter(pk__in=ids)
    return unread.update(read_at=timezone.now())
