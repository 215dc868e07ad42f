"""Reads of the evaluation pages, beside ``selectors.py`` (at its split point): a project's
endpoints, runs, studies and labelling runs; a run's passes and the tries it left out; a
pass's labels and the other passes of its task; the failure queue's passes."""

from django.db.models import Exists, OuterRef, QuerySet

from hilbench_annotate.models import Task

from .models import (
    EvaluationRun,
    FailureLabel,
    LabellingRun,
    ModelEndpoint,
    SupportStudy,
    TaskPass,
    Trajectory,
)
from .tries import exclusions_text


def task_titles(*, task_ids) -> dict[int, str]:
    """Task id -> title, for the tasks of ``task_ids``."""
    return dict(Task.objects.filter(pk__in=task_ids).values_list("pk", "title"))


def sql_task_ids(*, project) -> list[int]:
    """The ids of ``project``'s SQL tasks."""
    return list(Task.objects.filter(project=project, domain="sql").values_list("pk", flat=True))


def project_endpoints(*, project) -> QuerySet[ModelEndpoint]:
    """``project``'s model endpoints."""
    return ModelEndpoint.objects.filter(project=project)


def recent_runs(*, project, limit: int = 20) -> QuerySet[EvaluationRun]:
    """``project``'s latest model runs, with who started them."""
    return EvaluationRun.objects.filter(project=project).select_related("created_by")[:limit]


def recent_studies(*, project, limit: int = 20) -> QuerySet[SupportStudy]:
    """``project``'s latest support-seeking studies."""
    return SupportStudy.objects.filter(project=project)[:limit]


def recent_labelling_runs(*, project, limit: int = 10) -> QuerySet[LabellingRun]:
    """``project``'s latest LLM labelling runs."""
    return LabellingRun.objects.filter(project=project)[:limit]


def resolved_count(*, run: EvaluationRun) -> int:
    """How many of ``run``'s passes resolved their task so far."""
    return run.task_passes.filter(resolved=True).count()


def run_passes(*, run: EvaluationRun, limit: int) -> QuerySet[TaskPass]:
    """The first ``limit`` of ``run``'s passes with what the run page shows of each: the
    task's title, the ask_human run and its calls, and whether it has a trajectory."""
    return (
        run.task_passes.select_related("task", "ask_human_run")
        .only("pk", "index", "mode", "resolved", "error", "detail", "task__title", "ask_human_run")
        .prefetch_related("ask_human_run__calls")
        .annotate(has_trajectory=Exists(Trajectory.objects.filter(task_pass=OuterRef("pk"))))
    )[:limit]


def run_excluded_tries(*, run: EvaluationRun, limit: int):
    """The first ``limit`` tries ``run`` left out as the release does, with the task's title."""
    return run.excluded_tries.select_related("task").only(
        "trial", "task_id", "mode", "reason", "exception", "message", "reward", "task__title"
    )[:limit]


def run_exclusions(*, run: EvaluationRun) -> str:
    """The tries ``run`` left out, as one sentence (``tries.exclusions_text``)."""
    return exclusions_text(run.excluded_tries.values_list("reason", "exception"))


def pass_labels(*, task_pass: TaskPass) -> list[FailureLabel]:
    """``task_pass``'s failure labels in the order they were made, with the labeller and
    the LLM run."""
    return list(task_pass.failure_labels.select_related("labeller", "llm_run").order_by("id"))


def pass_siblings(*, task_pass: TaskPass, project, limit: int = 60) -> QuerySet[TaskPass]:
    """The other passes of ``task_pass``'s task in ``project``, with their runs, by model,
    mode and index."""
    return (
        TaskPass.objects.filter(task=task_pass.task, run__project=project)
        .exclude(pk=task_pass.pk)
        .select_related("run")
        .order_by("run__model_name", "mode", "index")[:limit]
    )


def failed_passes(*, project, model: str = "", domain: str = "") -> QuerySet[TaskPass]:
    """The unresolved passes of ``project``'s finished runs (of ``model`` and ``domain`` when
    given), by model, task, mode and index: the labelling queue's candidates."""
    failed = (
        TaskPass.objects.filter(
            run__project=project, run__status=EvaluationRun.Status.SUCCEEDED, resolved=False
        )
        .select_related("run", "task")
        .only("pk", "index", "mode", "run__model_name", "task__title")
    )
    if model:
        failed = failed.filter(run__model_name=model)
    if domain:
        failed = failed.filter(task__domain=domain)
    return failed.order_by("run__model_name", "task_id", "mode", "index")


def model_names(*, project) -> list[str]:
    """The names of the models with a pass in ``project``, sorted."""
    return sorted(
        set(TaskPass.objects.filter(run__project=project).values_list("run__model_name", flat=True))
    )
