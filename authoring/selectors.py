"""Reads for the workspace."""

from hilbench_annotate import workflow
from hilbench_annotate.models import Revision, Task


def changes_requested_context(*, task: Task):
    """The review decision that sent the task back to its author, if that is why it is
    editable (read through the task's ``decisions``; review stores them)."""
    if task.status != workflow.CHANGES_REQUESTED:
        return None
    return (
        task.decisions.filter(outcome="request_changes")
        .select_related("reviewer", "revision")
        .first()
    )


def lint_waivers(*, task: Task) -> dict:
    """``task``'s lint waivers by the fingerprint of the finding each waives, with who made
    it."""
    return {w.fingerprint: w for w in task.lint_waivers.select_related("created_by")}


def revision_number(*, task: Task) -> int:
    """The number people know a task's saved state by (the version is only the form's lock):
    its latest revision's, 0 before its first."""
    return task.revisions.order_by("-number").values_list("number", flat=True).first() or 0


def last_revision(*, task: Task) -> Revision | None:
    """``task``'s revision listed first (its latest), with its author."""
    return task.revisions.select_related("author").first()


def revision_history(*, task: Task) -> list[Revision]:
    """``task``'s revisions, newest first, with their authors, without their snapshots."""
    return list(task.revisions.select_related("author").defer("snapshot").order_by("-number"))


def revisions_numbered(*, task: Task, numbers: list[int]) -> dict[int, Revision]:
    """``task``'s revisions of ``numbers``, by number (a number it has none of is absent)."""
    return {r.number: r for r in Revision.objects.filter(task=task, number__in=numbers)}


def blocker_pks(*, task: Task) -> list[int]:
    """The primary keys of ``task``'s blockers in position order (the page's order)."""
    return list(task.blockers.order_by("position", "id").values_list("pk", flat=True))
