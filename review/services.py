from django.db import transaction
from django.db.models import F
from django.utils import timezone

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.services import event_record
from review import workflow


@transaction.atomic
def task_transition(*, task: Task, action: str, actor, **data) -> Task:
    """Apply a workflow action with ``UPDATE … WHERE status = <state read>``.

    If someone moved the task in between, the update matches nothing and the action is
    refused; one event row records every transition that happened.
    """
    try:
        target = workflow.next_state(task.status, action)
    except workflow.TransitionRefused as exc:
        raise DomainError(str(exc)) from exc
    moved = Task.objects.filter(pk=task.pk, status=task.status).update(
        status=target, updated_at=timezone.now(), version=F("version") + 1
    )
    if not moved:
        raise DomainError("The task changed state meanwhile; reload and try again.")
    source = task.status
    task.status = target
    task.version += 1
    event_record(
        project_id=task.project_id,
        task_id=task.pk,
        actor=actor,
        kind="status_changed",
        action=action,
        source=source,
        target=target,
        **data,
    )
    return task
