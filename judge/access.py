"""Lookups for the ask_human endpoints (REST and MCP).

The harness reads no tasks, so ``access_task`` does not fit; but a task or run of a project
the caller is not a member of must look exactly like a missing one (404), never "exists but
is not yours" (403), or ids of other teams' tasks could be enumerated. Which role may start
a run and whose run it is stay the services' questions (403).
"""

from django.http import Http404

from hilbench_annotate.models import Membership, Task

from .models import AskHumanRun


def _member_projects(user):
    return Membership.objects.filter(user=user).values("project_id")


def task_for_ask_human(user, task_id) -> Task:
    tasks = Task.objects.select_related("project")
    if not user.is_superuser:
        tasks = tasks.filter(project_id__in=_member_projects(user))
    try:
        return tasks.get(pk=task_id)
    except (Task.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("No such task.") from None


def access_ask_human_run(user, run_id) -> AskHumanRun:
    runs = AskHumanRun.objects.select_related("task__project")
    if not user.is_superuser:
        runs = runs.filter(task__project_id__in=_member_projects(user))
    try:
        return runs.get(pk=run_id)
    except (AskHumanRun.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("No such ask_human run.") from None
