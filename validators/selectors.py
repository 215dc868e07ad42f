"""Reads of the validators' rows for the pages."""

from .models import EnvironmentBuild

LIVE = (EnvironmentBuild.Status.QUEUED, EnvironmentBuild.Status.RUNNING)


def build_in_progress(task) -> EnvironmentBuild | None:
    """The build of the task's environment queued or running now, if any: a validation run
    of a SWE task never built makes one before its tests run, and its page says so."""
    if task.domain != "swe":
        return None
    return EnvironmentBuild.objects.filter(task=task, status__in=LIVE).order_by("-id").first()
