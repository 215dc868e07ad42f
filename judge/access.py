"""Who may see and do what in the judge's rooms, on the core permission family.

The harness reads no tasks, so ``access_task`` does not fit the ask_human endpoints; but a
task or run of a project the caller is not a member of must look exactly like a missing one
(404), never "exists but is not yours" (403), or ids of other teams' tasks could be
enumerated. Which role may start a run and whose run it is stay the services' questions (403).
"""

from hilbench_annotate.access import BAD_ID, has_role, member_project_ids, not_found
from hilbench_annotate.errors import AccessDenied
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import READER_ROLES

from .models import AskHumanRun


def task_for_ask_human(user, task_id) -> Task:
    tasks = Task.objects.select_related("project")
    if not user.is_superuser:
        tasks = tasks.filter(project_id__in=member_project_ids(user))
    try:
        return tasks.get(pk=task_id)
    except (Task.DoesNotExist, *BAD_ID):
        raise not_found("task") from None


def access_ask_human_run(user, run_id) -> AskHumanRun:
    runs = AskHumanRun.objects.select_related("task__project")
    if not user.is_superuser:
        runs = runs.filter(task__project_id__in=member_project_ids(user))
    try:
        return runs.get(pk=run_id)
    except (AskHumanRun.DoesNotExist, *BAD_ID):
        raise not_found("ask_human run") from None


def require_ask_human_caller(user, run: AskHumanRun) -> None:
    """A run is asked and scored by the caller who started it (or a site admin): another
    member of the project sees it exists (403), but may not use it."""
    if run.created_by_id != user.pk and not user.is_superuser:
        raise AccessDenied("This ask_human run belongs to another caller.")


def may_label(user, task: Task) -> bool:
    """Held-out questions are labelled by any human member of the project but the task's
    author, who wrote the blockers the labels judge."""
    return task.author_id != user.pk and has_role(user, task.project_id, *READER_ROLES)
