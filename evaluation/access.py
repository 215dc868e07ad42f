"""``access_*`` for evaluation objects, on the core permission family: a run or pass of a
project the user does not read is absent (404), exactly like a missing one."""

from hilbench_annotate.access import BAD_ID, not_found
from hilbench_annotate.models import Project

from .models import EvaluationRun, TaskPass


def access_evaluation_run(user, run_id: int) -> EvaluationRun:
    runs = EvaluationRun.objects.select_related("project", "endpoint", "created_by")
    try:
        return runs.get(pk=run_id, project__in=Project.objects.visible_to(user))
    except (EvaluationRun.DoesNotExist, *BAD_ID):
        raise not_found("run") from None


def access_task_pass(user, pass_id: int) -> TaskPass:
    # Not the trajectory: it can be tens of megabytes, and the pass page reads a page of it.
    passes = TaskPass.objects.select_related("run", "task", "ask_human_run")
    try:
        return passes.get(pk=pass_id, run__project__in=Project.objects.visible_to(user))
    except (TaskPass.DoesNotExist, *BAD_ID):
        raise not_found("pass") from None
