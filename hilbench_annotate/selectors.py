"""Reads of the core domain, always scoped to what the user may see."""

from collections.abc import Mapping

from django.db.models import Prefetch, QuerySet

from hilbench_annotate.access import access_task
from hilbench_annotate.models import Blocker, Project, Revision, Task, TriggerQuestion
from hilbench_annotate.vocabulary import Domain, TaskStatus

TASK_FILTERS = ("project", "domain", "status", "author", "resource", "tag", "q")


def task_list(*, user, filters: Mapping[str, str]) -> QuerySet[Task]:
    """Tasks the user may see, filtered by the list page's / API's query parameters.

    Unknown or empty filter values are ignored rather than refused, as a list page should.
    """
    tasks = Task.objects.visible_to(user).for_list()
    project = filters.get("project")
    if project and str(project).isdigit():
        tasks = tasks.filter(project_id=int(project))
    if filters.get("domain") in Domain.values:
        tasks = tasks.filter(domain=filters["domain"])
    if filters.get("status") in TaskStatus.values:
        tasks = tasks.filter(status=filters["status"])
    if filters.get("author"):
        tasks = tasks.filter(author__username=filters["author"])
    if filters.get("resource"):
        tasks = tasks.on_resource(filters["resource"])
    if filters.get("tag"):
        tasks = tasks.filter(tags__name=filters["tag"])
    if filters.get("q"):
        tasks = tasks.search(filters["q"])
    return tasks.order_by("-updated_at", "-id")


def task_detail(*, user, task_id: int) -> Task:
    """One task with everything its page shows, in a fixed number of queries."""
    task = access_task(user, task_id)
    blockers = Blocker.objects.order_by("position", "id").prefetch_related(
        Prefetch("trigger_questions", queryset=TriggerQuestion.objects.order_by("position", "id"))
    )
    return (
        Task.objects.select_related(
            "project",
            "author",
            "sql_environment__database",
            "swe_environment__repository",
        )
        .prefetch_related(Prefetch("blockers", queryset=blockers), "tags")
        .get(pk=task.pk)
    )


def filter_choices(*, user) -> dict[str, list]:
    """Values offered in the task list's filter menus."""
    visible = Task.objects.visible_to(user)
    return {
        "projects": list(Project.objects.visible_to(user).values_list("id", "name")),
        "authors": _distinct(visible.exclude(author=None), "author__username"),
        "databases": _distinct(visible.filter(domain=Domain.SQL), "sql_environment__db_id"),
        "repositories": _distinct(visible.filter(domain=Domain.SWE), "swe_environment__repo_name"),
        "tags": _distinct(visible, "tags__name"),
    }


def _distinct(tasks: QuerySet[Task], field: str) -> list[str]:
    return [v for v in tasks.order_by(field).values_list(field, flat=True).distinct() if v]


def current_revisions(task_ids) -> dict[int, tuple[int, int]]:
    """Task id -> (primary key, number) of its current (latest) revision, in one query."""
    current: dict[int, tuple[int, int]] = {}
    for task_id, pk, number in (
        Revision.objects.filter(task_id__in=list(task_ids))
        .order_by("task_id", "number")
        .values_list("task_id", "pk", "number")
    ):
        current[task_id] = (pk, number)
    return current
