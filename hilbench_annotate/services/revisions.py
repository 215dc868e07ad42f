"""Revisions: a task's saved states, each a row written once.

Every save makes a revision, except that the autosaves of one workspace editing session fold
into one: an autosave replaces the task's latest revision (same number, a new row) while
``revision_foldable`` says that revision is still the session's own. Replacing a row instead
of changing it keeps what is known by a revision's id true (the judge keeps what it read of
a revision by id), and a revision anything references is never replaced: the next save
starts a new one. The version the form carries moves on every save, folded or not
(``task_bump_version``), so a stale form is refused exactly as before.
"""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from hilbench_annotate.models import Revision, Task
from hilbench_annotate.revision_hooks import revision_saved
from hilbench_annotate.revision_summary import change_summary

from .search import task_search_write


def revision_referenced(revision: Revision) -> bool:
    """Whether any row points at ``revision`` (a review decision, a validation run, an
    ask_human run, a model's pass, whatever an app adds): read from the foreign keys
    declared on it, so core names none of the apps that hold them."""
    for relation in Revision._meta.related_objects:
        rows = relation.related_model._base_manager.filter(**{relation.field.name: revision.pk})
        if rows.exists():
            return True
    return False


def revision_foldable(revision: Revision | None, *, author, session: str) -> bool:
    """Whether an autosave of ``author`` in workspace ``session`` may replace ``revision``
    (the task's latest): still open in that session, the same author's, saved less than
    ``AUTOSAVE_SESSION_MINUTES`` ago, and referenced by nothing."""
    if revision is None or not session or revision.session != session:
        return False
    if author is None or revision.author_id != author.pk:
        return False
    window = timedelta(minutes=settings.AUTOSAVE_SESSION_MINUTES)
    if revision.created_at < timezone.now() - window:
        return False
    return not revision_referenced(revision)


def revision_write(
    *,
    task: Task,
    actor,
    snapshot: dict[str, Any],
    reason: str,
    lint_findings: list[dict] | None = None,
    session: str = "",
    autosave: bool = False,
) -> Revision:
    """Store ``snapshot`` as the task's next revision, or — for a save of a ``session``
    whose revision is still foldable — in place of the latest one, counting the saves it
    holds. Its summary says what changed against the revision before it. An explicit save
    (``autosave`` False: Ctrl+S, Save) folds in too and closes the session: the next
    autosave starts a new revision. Caller holds the task row lock (or just created the
    task)."""
    author = actor if getattr(actor, "is_authenticated", False) else None
    latest = task.revisions.order_by("-number").first()
    saves = 1
    if revision_foldable(latest, author=author, session=session):
        saves += latest.saves
        before = (
            Revision.objects.filter(task=task, number=latest.number - 1)
            .values_list("snapshot", flat=True)
            .first()
        )
        number = latest.number
        # A plain DELETE, never Django's cascade: should a row referencing the revision be
        # committed after the check above, the database refuses this save (the page saves
        # again, as a new revision) rather than deleting that row with the revision.
        rows = Revision.objects.filter(pk=latest.pk)
        rows._raw_delete(rows.db)
    else:
        before = latest.snapshot if latest else None
        number = (latest.number if latest else 0) + 1
    revision = Revision.objects.create(
        task=task,
        number=number,
        snapshot=snapshot,
        author=author,
        reason=reason,
        summary=change_summary(before, snapshot),
        session=session if autosave else "",
        saves=saves,
        lint_findings=lint_findings or [],
    )
    task_search_write(task=task, snapshot=snapshot)
    revision_saved(revision.pk)
    return revision


def revisions_close(*, task_ids, session: str | None = None) -> int:
    """End the editing sessions of these tasks' revisions (only ``session``'s, if named): the
    next autosave makes a new revision. An explicit save that changed nothing closes its
    session; an export closes those of the tasks it writes, whose revision numbers it
    records. Only the bookkeeping field changes; a revision's content never does."""
    rows = Revision.objects.filter(task_id__in=task_ids).exclude(session="")
    if session is not None:
        rows = rows.filter(session=session)
    return rows.update(session="")
