"""Reads of the validators' rows for the pages."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from hilbench_annotate.models import SweEnvironment, Task

from .models import EnvironmentBuild, ValidationRun

LIVE = (EnvironmentBuild.Status.QUEUED, EnvironmentBuild.Status.RUNNING)


def build_in_progress(*, task) -> EnvironmentBuild | None:
    """The build of the task's environment queued or running now, if any: a validation run
    of a SWE task never built makes one before its tests run, and its page says so."""
    if task.domain != "swe":
        return None
    return EnvironmentBuild.objects.filter(task=task, status__in=LIVE).order_by("-id").first()


def validation_run(*, task: Task, run_id: int) -> ValidationRun:
    """``task``'s validation run ``run_id`` with its revision and results (404 when the task
    has none of that id)."""
    return get_object_or_404(
        ValidationRun.objects.select_related("revision").prefetch_related("results"),
        pk=run_id,
        task=task,
    )


def latest_build(*, key: str) -> EnvironmentBuild | None:
    """The latest build of the environment ``key``, if any."""
    return EnvironmentBuild.objects.filter(key=key).order_by("-created_at", "-id").first()


def project_swe_environments(*, task: Task) -> QuerySet[SweEnvironment]:
    """The SWE environments of ``task``'s project, each with what its key is made of."""
    return SweEnvironment.objects.filter(task__project_id=task.project_id).only(
        "environment_spec", "base_commit"
    )


def environment_build(*, build_id) -> EnvironmentBuild:
    """The environment build ``build_id`` with its task and repository (``DoesNotExist``, or
    ``ValueError``… for an id that is none)."""
    return EnvironmentBuild.objects.select_related("task", "repository").get(pk=build_id)


def earlier_builds(*, build: EnvironmentBuild, limit: int = 10) -> QuerySet[EnvironmentBuild]:
    """Other builds of ``build``'s environment, newest first."""
    return EnvironmentBuild.objects.filter(key=build.key).exclude(pk=build.pk)[:limit]
