"""``access_*`` for review objects, on the core permission family.

An assignment, comment or layer belongs to a task or project; one the user may not read is
reported exactly as a missing one ("No such comment."), never by its parent's name ("No such
task."), which would tell a stranger which ids exist.
"""

from django.http import Http404

from hilbench_annotate.access import BAD_ID, access_project, access_task, not_found

from .models import Comment, ReviewAssignment, ReviewDecision, ReviewLayer


def _on_readable_task(user, manager, pk, what: str, *, for_update: bool, related: tuple):
    """Row ``pk`` of ``manager`` with its task set, if ``user`` reads the task (``for_update``
    locks the task row); otherwise "No such <what>.", whether the row or the task is missing."""
    try:
        task_id = manager.values_list("task_id", flat=True).get(pk=pk)
        task = access_task(user, task_id, for_update=for_update)
    except (manager.model.DoesNotExist, Http404, *BAD_ID):
        raise not_found(what) from None
    row = manager.select_related(*related).get(pk=pk)
    row.task = task
    return row


def access_assignment(user, assignment_id: int, *, for_update: bool = False) -> ReviewAssignment:
    """The assignment if ``user`` reads its task; ``for_update`` locks the task row."""
    return _on_readable_task(
        user,
        ReviewAssignment.objects,
        assignment_id,
        "assignment",
        for_update=for_update,
        related=("reviewer", "assigned_by"),
    )


def access_comment(user, comment_id: int, *, for_update: bool = False) -> Comment:
    """The comment if ``user`` reads its task; ``for_update`` locks the task row."""
    return _on_readable_task(
        user,
        Comment.objects,
        comment_id,
        "comment",
        for_update=for_update,
        related=("parent__author", "author"),
    )


def access_review_layer(user, layer_id: int) -> ReviewLayer:
    """The layer if ``user`` reads its project."""
    try:
        project_id = ReviewLayer.objects.values_list("project_id", flat=True).get(pk=layer_id)
        project = access_project(user, project_id)
    except (ReviewLayer.DoesNotExist, Http404, *BAD_ID):
        raise not_found("review layer") from None
    layer = ReviewLayer.objects.get(pk=layer_id)
    layer.project = project
    return layer


def access_decision(user, decision_id: int, *, for_update: bool = False) -> ReviewDecision:
    """The decision (withdrawn or not) if ``user`` reads its task; ``for_update`` locks the
    task row."""
    return _on_readable_task(
        user,
        ReviewDecision.all_objects,
        decision_id,
        "decision",
        for_update=for_update,
        related=("reviewer", "revision"),
    )
