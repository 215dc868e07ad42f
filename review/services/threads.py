"""Threads on a task or a blocker, and notifications."""

from django.db import transaction
from django.utils import timezone

from hilbench_annotate.access import access_task
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.services import event_record, task_event, task_search_refresh
from hilbench_annotate.text_limits import text_too_long
from hilbench_annotate.toolkit.wording import shorten
from review.access import access_comment
from review.models import Comment, Notification


@transaction.atomic
def comment_add(
    *, actor, task_id: int, body: str, blocker_key: str = "", parent_id=None
) -> Comment:
    """``actor`` comments on a task they may read (404 otherwise), on one of its blockers, or
    replies in a thread (``parent_id``: any comment of it; a comment they cannot see is no
    such comment)."""
    task = access_task(actor, task_id)
    author = actor
    body = body.strip()
    if not body:
        raise DomainError("A comment needs text.")
    if too_long := text_too_long("comment", body):
        raise DomainError(too_long)
    parent = _parent(actor, parent_id)
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
    task_search_refresh(task_ids=[task.pk])  # the task list's search reads comments
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
                text=f"{author.username} replied on “{shorten(task.title, 80)}”",
            )
    return comment


@transaction.atomic
def _parent(actor, parent_id) -> Comment | None:
    if parent_id in (None, ""):
        return None
    try:
        parent_id = int(parent_id)
    except (TypeError, ValueError):
        raise DomainError("No such comment.") from None
    parent = (
        Comment.objects.filter(pk=parent_id, task__in=Task.objects.visible_to(actor))
        .select_related("parent")
        .first()
    )
    if parent is None:
        raise DomainError("No such comment.")
    return parent


@transaction.atomic
def comment_set_resolved(*, actor, comment_id: int, resolved: bool) -> Comment:
    """Resolve or reopen the thread of a comment on a task ``actor`` may read."""
    comment = access_comment(actor, comment_id)
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
    # Past the column's length the text ends at a word and "…", never mid-word.
    return Notification.objects.create(user=user, task=task, kind=kind, text=shorten(text, 300))


def notifications_mark_read(*, user, ids: list[int] | None = None) -> int:
    unread = Notification.objects.filter(user=user, read_at=None)
    if ids is not None:
        unread = unread.filter(pk__in=ids)
    return unread.update(read_at=timezone.now())
