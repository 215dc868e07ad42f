"""``access_*`` for review objects, on the core permission family.

An assignment, comment or layer belongs to a task or project; one the user may not read is
reported exactly as a missing one ("No such comment."), never by its parent's name ("No such
task."), which would tell a stranger which ids exist.
"""

from django.http import Http404

from hilbench_annotate.access import BAD_ID, access_project, access_task, not_found

from .models import Comment, ReviewAssignment, ReviewDecision, ReviewLayer


def access_assignment(user, assignment_id: int, *, for_update: bool = False) -> ReviewAssignment:
    """The assignment if ``user`` reads its task; ``for_update`` locks the task row."""
    try:
        task_id = ReviewAssignment.objects.values_list("task_id", flat=True).get(pk=assignment_id)
        task = access_task(user, task_id, for_update=for_update)
    except (ReviewAssignment.DoesNotExist, Http404, *BAD_ID):
        raise not_found("assignment") from None
    assignment = ReviewAssignment.objects.select_related("reviewer", "assigned_by").get(
        pk=assignment_id
    )
    assignment.task = task
    return assignment


def access_comment(user, comment_id: int, *, for_update: bool = False) -> Comment:
    """The comment if ``user`` reads its task; ``for_update`` locks the task row."""
    try:
        task_id = Comment.objects.values_list("task_id", flat=True).get(pk=comment_id)
        task = access_task(user, task_id, for_update=for_update)
    except (Comment.DoesNotExist, Http404, *BAD_ID):
        raise not_found("comment") from None
    comment = Comment.objects.select_related("parent__author", "author").get(pk=comment_id)
    comment.task = task
    return comment


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
    try:
        task_id = ReviewDecision.all_objects.values_list("task_id", flat=True).get(pk=decision_id)
        task = access_task(user, task_id, for_update=for_update)
    except (ReviewDecision.DoesNotExist, Http404, *BAD_ID):
        raise not_found("decision") from None
    decision = ReviewDecision.all_objects.select_related("reviewer", "revision").get(pk=decision_id)
    decision.task = task
    return decision
