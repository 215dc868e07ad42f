"""Reads of the review workflow: who may act on a task at a layer, the tasks a queue offers,
and the decisions an author or a returning reviewer sees."""

from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db.models import Count, F

from hilbench_annotate import workflow
from hilbench_annotate.access import ProjectRoles, has_role
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.vocabulary import Role
from review.models import (
    DEFAULT_REJECT_REASONS,
    Comment,
    Notification,
    ReviewAssignment,
    ReviewDecision,
    ReviewLayer,
    ReviewPolicy,
)
from review.timeline import RESTATING_EVENTS, creation_text, event_text


def pipeline_layers(*, project) -> list[ReviewLayer]:
    """The project's layers in order (stored when the project is made: ``review.apps``)."""
    return list(ReviewLayer.objects.filter(project=project).order_by("position"))


def policy_for(*, project) -> ReviewPolicy:
    """The project's review policy; for a project without one yet, the default (unsaved: a
    read never writes; the lead's edit saves it)."""
    return ReviewPolicy.objects.filter(project=project).first() or ReviewPolicy(
        project=project, reject_reasons=list(DEFAULT_REJECT_REASONS)
    )


def independence_problem(*, user, task: Task, layer: ReviewLayer) -> str | None:
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
    if not has_role(user, task.project_id, layer.role):
        return f"{layer.name} needs the {layer.role} role in {task.project.name}."
    return None


def assignment_candidates(*, task: Task, layer: ReviewLayer) -> list:
    """The members a lead may assign ``task`` to at ``layer``: those holding the layer's role
    with no ``independence_problem`` there — the same question ``review_assign`` asks of the
    one named, so the page offers exactly the names the service (and the API) accept."""
    users = (
        get_user_model()
        .objects.filter(memberships__project=task.project_id, memberships__role=layer.role)
        .distinct()
        .order_by("username")
    )
    return [u for u in users if independence_problem(task=task, user=u, layer=layer) is None]


def eligible_tasks(*, user, layer: ReviewLayer):
    """Tasks waiting at ``layer`` that ``user`` may take, oldest first (not yet locked out)."""
    locked = ReviewAssignment.objects.live().values("task_id")
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


@dataclass
class QueueLayer:
    """One layer of one project in a user's review queue."""

    project: Project
    layer: ReviewLayer
    eligible: int  # tasks waiting here that the user may take
    total: int  # tasks waiting here, whoever may take them
    assignments: list[ReviewAssignment] = field(default_factory=list)


def review_queue(
    *, user, project_id: int | None = None, position: int | None = None
) -> list[QueueLayer]:
    """The review queue of ``user`` — what the queue page and ``GET /api/review/queue`` both
    list: per layer whose role ``user`` holds (projects they read, layers in order; narrowed
    to one project or one layer position when given), how many tasks they may take, how many
    wait there in all, and the assignments they hold there. An assignment is held when it is
    live and its task is still in review *at that layer*: one whose task has since moved on
    (or back) can no longer be decided, so it is in nobody's hands. Two queries per project
    and one per layer listed, plus three."""
    projects = Project.objects.visible_to(user)
    if project_id is not None:
        projects = projects.filter(pk=project_id)
    projects = list(projects)
    held: dict[tuple[int, int], list[ReviewAssignment]] = defaultdict(list)
    for assignment in (
        ReviewAssignment.objects.live()
        .filter(reviewer=user, task__status=workflow.IN_REVIEW, task__review_layer=F("layer"))
        .select_related("task", "task__project", "reviewer", "assigned_by")
        .order_by("expires_at", "pk")
    ):
        held[(assignment.task.project_id, assignment.layer)].append(assignment)
    totals = {
        (project, layer): n
        for project, layer, n in Task.objects.filter(
            project__in=[p.pk for p in projects], status=workflow.IN_REVIEW
        )
        .values_list("project_id", "review_layer")
        .annotate(n=Count("pk"))
        .order_by()
    }
    roles = ProjectRoles(user)
    rows = []
    for project in projects:
        for layer in pipeline_layers(project=project):
            if position is not None and layer.position != position:
                continue
            if not roles.has(project.pk, layer.role):
                continue
            key = (project.pk, layer.position)
            rows.append(
                QueueLayer(
                    project=project,
                    layer=layer,
                    eligible=eligible_tasks(user=user, layer=layer).count(),
                    total=totals.get(key, 0),
                    assignments=held.get(key, []),
                )
            )
    return rows


def self_checks_waiting(*, user):
    """The tasks ``user`` wrote that wait for their own check (the first layer)."""
    return Task.objects.filter(
        author=user, status=workflow.IN_REVIEW, review_layer=1
    ).select_related("project")


def tasks_sent_back(*, user):
    """The tasks ``user`` wrote that a reviewer sent back for changes."""
    return Task.objects.filter(author=user, status=workflow.CHANGES_REQUESTED).select_related(
        "project"
    )


def projects_led(*, user) -> list[Project]:
    """The projects ``user`` reads and leads (the queue page links their pipeline pages)."""
    roles = ProjectRoles(user)
    return [p for p in Project.objects.visible_to(user) if roles.has(p.pk, Role.LEAD)]


def assignment_holding(*, task: Task, layer: ReviewLayer) -> ReviewAssignment | None:
    """The live assignment that holds ``task`` at ``layer``, with its reviewer (or None)."""
    return (
        ReviewAssignment.objects.live()
        .filter(task=task, layer=layer.position)
        .select_related("reviewer")
        .first()
    )


def blocker_keys(*, task: Task) -> list[str]:
    """The keys of ``task``'s blockers, in order: the fields a decision comments on."""
    return list(task.blockers.values_list("key", flat=True))


def task_decisions(*, task: Task):
    """Every decision on ``task``, withdrawn ones too (marked), newest first: the review
    page, the timeline and ``GET /api/tasks/<id>/decisions`` tell the whole story alike."""
    return ReviewDecision.all_objects.filter(task=task).select_related("reviewer", "revision")


def task_comments(*, task: Task):
    """Every comment on ``task``, replies too, oldest first, with its author."""
    return Comment.objects.filter(task=task).select_related("author")


def notifications_for(*, user, unread: bool = False):
    """``user``'s notifications, newest first (only the unread ones when asked)."""
    notifications = Notification.objects.filter(user=user).select_related("task")
    return notifications.filter(read_at=None) if unread else notifications


def waiting_per_layer(*, project) -> dict[int, int]:
    """How many of ``project``'s tasks wait at each layer position, by position."""
    return dict(
        Task.objects.filter(project=project, status=workflow.IN_REVIEW)
        .values_list("review_layer")
        .annotate(n=Count("pk"))
        .order_by()
    )


_ENTRY_ORDER = {"revision": 0, "event": 1, "decision": 2, "comment": 3}


def timeline_entries(*, task: Task) -> list[dict]:
    """Everything that happened to ``task``, oldest first: events (but those a revision or
    a decision already says), revisions, decisions (withdrawn ones too) and comments."""
    layer_names = {layer.position: layer.name for layer in pipeline_layers(project=task.project)}
    entries = [
        {
            "at": event.created_at,
            "kind": "event",
            "who": event.actor,
            "event": event,
            "text": event_text(event.kind, event.data, layer_names),
        }
        for event in task.events.exclude(kind__in=RESTATING_EVENTS).select_related("actor")
    ]
    entries += [
        {
            "at": revision.created_at,
            "kind": "revision",
            "who": revision.author,
            "revision": revision,
            "text": creation_text(task, revision),
            "errors": sum(1 for f in revision.lint_findings if f.get("severity") == "error"),
        }
        for revision in task.revisions.select_related("author").defer("snapshot")
    ]
    entries += [
        {"at": d.created_at, "kind": "decision", "who": d.reviewer, "decision": d}
        for d in task_decisions(task=task)
    ]
    entries += [
        {"at": c.created_at, "kind": "comment", "who": c.author, "comment": c}
        for c in task_comments(task=task)
    ]
    entries.sort(key=lambda e: (e["at"], _ENTRY_ORDER[e["kind"]]))
    return entries


def revision_judged_last(*, task: Task, layer: int) -> Revision | None:
    decision = task.decisions.filter(layer=layer).select_related("revision").first()
    return decision.revision if decision else None


def task_threads(*, task: Task):
    """The task's threads (top-level comments), their authors and replies: three queries
    when read, however many there are."""
    return (
        Comment.objects.filter(task=task, parent=None)
        .select_related("author")
        .prefetch_related("replies__author")
    )


def previous_round(*, task: Task, layer: ReviewLayer | None) -> dict:
    """What ``layer`` said in its earlier rounds, for a task back at it after changes: its
    earlier decisions (newest first) and, per blocker id, their comments on that blocker and
    the threads on it that the layer's reviewers started before this round — shown again
    next to the blocker. Empty on a task's first round at the layer. Four queries."""
    empty = {"decisions": [], "by_blocker": {}}
    if layer is None or task.layer_entered_at is None:
        return empty
    decisions = list(
        ReviewDecision.objects.filter(
            task=task, layer=layer.position, created_at__lt=task.layer_entered_at
        ).select_related("reviewer", "revision")
    )
    if not decisions:
        return empty
    by_blocker: dict[str, list[dict]] = defaultdict(list)
    for decision in decisions:
        for key, text in decision.blocker_comments.items():
            by_blocker[key].append(
                {
                    "kind": "comment",
                    "who": decision.reviewer,
                    "at": decision.created_at,
                    "text": text,
                    "decision": decision,
                }
            )
    threads = (
        Comment.objects.filter(
            task=task,
            parent=None,
            author__in={d.reviewer_id for d in decisions},
            created_at__lt=task.layer_entered_at,
        )
        .exclude(blocker_key="")
        .select_related("author")
        .prefetch_related("replies")
    )
    for thread in threads:
        by_blocker[thread.blocker_key].append(
            {
                "kind": "thread",
                "who": thread.author,
                "at": thread.created_at,
                "text": thread.body,
                "thread": thread,
            }
        )
    return {"decisions": decisions, "by_blocker": dict(by_blocker)}


# --- withdrawing a decision made by mistake ---------------------------------------------------

# What a later status change did, as the refusal of a withdrawal says it.
_SINCE = {
    "submit": "submitted it for review again",
    "approve": "approved it",
    "request_changes": "asked for changes",
    "reject": "rejected it",
    "export": "exported it as validated",
    "reopen": "reopened it",
    "withdraw": "withdrew a decision on it",
}


def withdraw_problem(*, task: Task, decision: ReviewDecision) -> str | None:
    """Why ``decision`` can no longer be withdrawn (None when it can): it must be the task's
    latest standing decision, and nothing may have built on it since — no later status
    change (a resubmission, a reopening, an export), no revision saved after the one judged,
    and nobody holding the task at the layer it moved on to."""
    if decision.withdrawn_at is not None:
        return "it was withdrawn already"
    latest = task.decisions.select_related("reviewer").order_by("-created_at", "-id").first()
    if latest is not None and latest.pk != decision.pk:
        return (
            f"{latest.reviewer.username} has since decided at layer {latest.layer} "
            f"({latest.layer_name}): {latest.get_outcome_display().lower()}"
        )
    moved = task.events.filter(kind="status_changed", data__decision=decision.pk).first()
    if moved is None:
        return "the status change it made is not on record"
    later = (
        task.events.filter(kind="status_changed", pk__gt=moved.pk)
        .select_related("actor")
        .order_by("pk")
        .first()
    )
    if later is not None:
        who = later.actor.username if later.actor else "the system"
        action = later.data.get("action")
        return f"{who} has since {_SINCE.get(action, str(action).replace('_', ' '))}"
    current = task.revisions.order_by("-number").values_list("number", flat=True).first()
    if current != decision.revision.number:
        return (
            f"revision {current} was saved after the revision {decision.revision.number} you judged"
        )
    holder = (
        ReviewAssignment.objects.live()
        .filter(task=task)
        .exclude(reviewer=decision.reviewer_id)
        .select_related("reviewer")
        .first()
    )
    if holder is not None:
        return (
            f"{holder.reviewer.username} has taken it at layer {holder.layer}; it can be "
            "withdrawn once they give it back"
        )
    return None


def decision_withdrawable(*, user, task: Task) -> tuple[ReviewDecision | None, str | None]:
    """``user``'s latest standing decision on ``task`` and why it cannot be withdrawn (None:
    it can); (None, None) when they have made none."""
    if not user.is_authenticated:
        return None, None
    mine = (
        task.decisions.filter(reviewer=user)
        .select_related("revision", "reviewer")
        .order_by("-created_at", "-id")
        .first()
    )
    if mine is None:
        return None, None
    return mine, withdraw_problem(task=task, decision=mine)


def last_decision_withdrawable(*, user) -> ReviewDecision | None:
    """``user``'s most recent standing decision on any task, if it can still be withdrawn:
    what the queue offers to take back right after a decision made by mistake."""
    if not user.is_authenticated:
        return None
    last = (
        ReviewDecision.objects.filter(reviewer=user)
        .select_related("task", "revision", "reviewer")
        .order_by("-created_at", "-id")
        .first()
    )
    if last is None or withdraw_problem(task=last.task, decision=last) is not None:
        return None
    return last
