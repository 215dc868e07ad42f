"""Threads on a task or a blocker, and notifications."""

from django.db import transaction
from django.utils import timezone

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.services import event_record, task_event
from hilbench_annotate.toolkit.wording import shorten
from review.models import Comment, Notification


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
                text=f"{author.username} replied on “{shorten(task.title, 80)}”",
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
    # Past the column's length the text ends at a word and "…", never mid-word.
    return Notification.objects.create(user=user, task=task, kind=kind, text=shorten(text, 300))


def notifications_mark_read(*, user, ids: list[int] | None = None) -> int:
    unread = Notification.objects.filter(user=user, read_at=None)
    if ids is not None:
        unread = unread.filter(pk__in=ids)
    return unread.update(read_at=timezone.now())
