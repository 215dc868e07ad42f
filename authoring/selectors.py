"""Reads for the workspace."""

from hilbench_annotate import workflow
from hilbench_annotate.models import Task


def changes_requested_context(task: Task):
    """The review decision that sent the task back to its author, if that is why it is
    editable (read through the task's ``decisions``; review stores them)."""
    if task.status != workflow.CHANGES_REQUESTED:
        return None
    return (
        task.decisions.filter(outcome="request_changes")
        .select_related("reviewer", "revision")
        .first()
    )
