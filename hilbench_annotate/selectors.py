"""Reads of the core domain, always scoped to what the user may see."""

import hashlib
from collections.abc import Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Exists, OuterRef, Prefetch, QuerySet, Subquery

from hilbench_annotate.access import access_task
from hilbench_annotate.models import (
    ApiToken,
    Blocker,
    Project,
    Revision,
    SqlDatabase,
    SqlEnvironment,
    SweEnvironment,
    Tag,
    Task,
    TriggerQuestion,
)
from hilbench_annotate.params import param_choice, param_id, param_text
from hilbench_annotate.services.tasks import SQL_ENV_FIELDS, SWE_ENV_FIELDS
from hilbench_annotate.vocabulary import Domain, TaskStatus

TASK_FILTERS = ("project", "domain", "status", "author", "resource", "tag", "q")
MENU_CACHE_S = 600  # a state of a project's tasks no longer asked for is dropped after this


def task_list(*, user, filters: Mapping[str, str]) -> QuerySet[Task]:
    """Tasks the user may see, filtered by the list page's / API's query parameters.

    Unknown or empty filter values are ignored rather than refused, as a list page should.
    """
    tasks = Task.objects.visible_to(user).for_list()
    clean = task_filters_clean(filters=filters)
    if clean["project"]:
        tasks = tasks.filter(project_id=int(clean["project"]))
    if clean["domain"]:
        tasks = tasks.filter(domain=clean["domain"])
    if clean["status"]:
        tasks = tasks.filter(status=clean["status"])
    if clean["author"]:
        tasks = tasks.filter(author__username=clean["author"])
    if clean["resource"]:
        tasks = tasks.on_resource(clean["resource"])
    if clean["tag"]:
        tasks = tasks.filter(tags__name=clean["tag"])
    if clean["q"]:
        tasks = tasks.search(clean["q"])
    return tasks.order_by("-updated_at", "-id")


def task_ids(*, tasks: QuerySet[Task]) -> QuerySet:
    """The ids of ``tasks`` in its order, read from the task table alone (none of what it
    prefetches): a list page's ids first, then the rows of the page's ids."""
    return tasks.prefetch_related(None).values_list("pk", flat=True)


def tasks_in_order(*, tasks: QuerySet[Task], ids: list[int]) -> list[Task]:
    """The tasks of ``ids`` (read from ``tasks``, with what it loads), in that order."""
    found = tasks.order_by().in_bulk(ids)
    return [found[pk] for pk in ids if pk in found]


@dataclass(frozen=True)
class TaskRow:
    """What a row of the task list page shows, read as plain values (no model instance)."""

    pk: int
    title: str
    project_name: str
    source_id: str
    tags: list[str]
    domain: str
    resource: str
    status: str
    blocker_count: int
    author: str
    updated_at: datetime

    @property
    def domain_label(self) -> str:
        return Domain(self.domain).label

    @property
    def status_label(self) -> str:
        return TaskStatus(self.status).label


_ROW_FIELDS = (
    "pk", "title", "project__name", "source_id", "domain", "sql_environment__db_id",
    "swe_environment__repo_name", "status", "blocker_count", "author__username", "updated_at",
)  # fmt: skip


def task_rows(*, ids: list[int]) -> list[TaskRow]:
    """The list page's rows of the tasks ``ids`` (already chosen from what the user sees),
    in that order, in two queries: the rows with their project, author and environment
    names, and their tags. Model instances and template filters on them were half of the
    page's time."""
    tags: dict[int, list[str]] = {pk: [] for pk in ids}
    for task_id, name in (
        Task.tags.through.objects.filter(task_id__in=ids)
        .order_by("tag__name")
        .values_list("task_id", "tag__name")
    ):
        tags[task_id].append(name)
    found = {}
    for (
        pk,
        title,
        project,
        source_id,
        domain,
        db_id,
        repo,
        status,
        blockers,
        author,
        at,
    ) in Task.objects.filter(pk__in=ids).values_list(*_ROW_FIELDS):
        found[pk] = TaskRow(
            pk=pk, title=title, project_name=project, source_id=source_id, tags=tags[pk],
            domain=domain, resource=(db_id if domain == Domain.SQL else repo) or "",
            status=status, blocker_count=blockers, author=author or "", updated_at=at,
        )  # fmt: skip
    return [found[pk] for pk in ids if pk in found]


def task_filters_clean(*, filters: Mapping[str, str]) -> dict[str, str]:
    """The task list's filters as it applies them (``params``): a project id in range, a
    known domain and status, names without NULs, the search cut to ``MAX_TEXT``; "" where
    a value cannot be used."""
    project = param_id(filters.get("project"))
    return {
        "project": str(project) if project else "",
        "domain": param_choice(filters.get("domain"), Domain.values),
        "status": param_choice(filters.get("status"), TaskStatus.values),
        "author": param_text(filters.get("author")),
        "resource": param_text(filters.get("resource")),
        "tag": param_text(filters.get("tag")),
        "q": param_text(filters.get("q"), cut=True),
    }


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


def readable_projects(*, user) -> QuerySet[Project]:
    """The projects where ``user`` holds a reading role, by name."""
    return Project.objects.visible_to(user).order_by("name")


def task_blockers(*, task: Task) -> QuerySet[Blocker]:
    """``task``'s blockers with their trigger questions."""
    return task.blockers.prefetch_related("trigger_questions")


def recent_revisions(*, task: Task, limit: int = 20) -> list[Revision]:
    """``task``'s latest revisions, newest first, with what the task page lists of each."""
    return list(
        task.revisions.select_related("author").only(
            "number", "reason", "summary", "created_at", "author__username", "task_id"
        )[:limit]
    )


def api_tokens(*, user) -> QuerySet[ApiToken]:
    """``user``'s API tokens, newest first."""
    return ApiToken.objects.filter(user=user).order_by("-created_at")


def filter_choices(*, user, project: str = "") -> dict[str, list]:
    """Values offered in the task list's filter menus: of the tasks of ``project`` (the
    list's project filter, a cleaned id) when it is one the user sees, else of all the
    user's projects. The authors, databases and repositories are read once per state of
    those tasks (each project's latest change, read from the index on the project and the
    change: a new task and every edit of a task's environment move it) and kept in the
    process's cache: reading them was half the time of the list page of a project of 10,000
    tasks, and counting the tasks for the state a sixth on PostgreSQL. A task deleted in the
    admin (the app never deletes one) may leave its author offered for ``MENU_CACHE_S``.
    Projects and tags are read each time."""
    projects = list(Project.objects.visible_to(user).values_list("id", "name"))
    scope = [pk for pk, _name in projects]
    if project and int(project) in scope:
        scope = [int(project)]
    latest = Task.objects.filter(project=OuterRef("pk")).order_by("-updated_at")
    state = list(
        Project.objects.filter(pk__in=scope)
        .order_by("pk")
        .annotate(changed=Subquery(latest.values("updated_at")[:1]))
        .values_list("pk", "changed")
    )
    key = "task-menus:" + hashlib.sha256(repr((scope, state)).encode()).hexdigest()
    menus = cache.get(key)
    if menus is None:
        authored = Task.objects.filter(author=OuterRef("pk"), project_id__in=scope)
        menus = {
            "authors": list(
                get_user_model()
                .objects.filter(Exists(authored))
                .order_by("username")
                .values_list("username", flat=True)
            ),
            "databases": _distinct(
                SqlEnvironment.objects.filter(task__project_id__in=scope), "db_id"
            ),
            "repositories": _distinct(
                SweEnvironment.objects.filter(task__project_id__in=scope), "repo_name"
            ),
        }
        cache.set(key, menus, MENU_CACHE_S)
    tagged = Task.tags.through.objects.filter(tag=OuterRef("pk"))
    return {
        "projects": projects,
        **menus,
        "tags": _distinct(Tag.objects.filter(Exists(tagged), project_id__in=scope), "name"),
    }


def _distinct(rows: QuerySet, field: str) -> list[str]:
    return [v for v in rows.order_by(field).values_list(field, flat=True).distinct() if v]


def revision_current(*, task: Task) -> Revision | None:
    """The task's current (latest) revision, None before its first."""
    return task.revisions.order_by("-number").first()


def current_snapshots(*, task_ids) -> dict[int, dict[str, Any]]:
    """Task id -> the snapshot of its current revision, in one query (tasks without a
    revision are left out)."""
    latest = Revision.objects.filter(task_id=OuterRef("task_id")).order_by("-number")
    return dict(
        Revision.objects.filter(
            task_id__in=list(task_ids), pk=Subquery(latest.values("pk")[:1])
        ).values_list("task_id", "snapshot")
    )


# Within ``current_revisions_kept``: task id -> its current revision, or None for none.
_KEPT_REVISIONS: ContextVar[dict[int, tuple[int, int] | None] | None] = ContextVar(
    "kept_revisions", default=None
)


@contextmanager
def current_revisions_kept():
    """Within the block (this thread's), ``current_revisions`` asks the database once for
    each task: a step that reads the same tasks' revisions from several places (an export
    chunk: its files, pass rates, gates and provenance) asked five times, a query that
    PostgreSQL answers by a scan of the table once it is large (13 ms a chunk each, 2.6 s
    of its CPU in a 10,000-task export). Also a decorator."""
    token = _KEPT_REVISIONS.set({})
    try:
        yield
    finally:
        _KEPT_REVISIONS.reset(token)


def current_revisions(*, task_ids) -> dict[int, tuple[int, int]]:
    """Task id -> (primary key, number) of its current (latest) revision, in one query (none
    for the tasks already read within ``current_revisions_kept``)."""
    wanted = list(task_ids)
    kept = _KEPT_REVISIONS.get()
    if kept is None:
        return _current_revisions(wanted)
    missing = [pk for pk in wanted if pk not in kept]
    if missing:
        found = _current_revisions(missing)
        kept.update((pk, found.get(pk)) for pk in missing)
    return {pk: kept[pk] for pk in wanted if kept[pk] is not None}


def _current_revisions(task_ids: list[int]) -> dict[int, tuple[int, int]]:
    current: dict[int, tuple[int, int]] = {}
    for task_id, pk, number in (
        Revision.objects.filter(task_id__in=task_ids)
        .order_by("task_id", "number")
        .values_list("task_id", "pk", "number")
    ):
        current[task_id] = (pk, number)
    return current


def environment_at(*, task: Task, snapshot: Mapping[str, Any]) -> SimpleNamespace:
    """The task's environment as ``snapshot`` (a revision's) froze it, shaped like the
    environment row: the fields from the snapshot, for SQL the database of the snapshot's
    content (databases are stored by content: its db_id and sha256), for SWE the task's
    repository mirror (the snapshot names the commit). A field an older snapshot lacks is
    read from the task. What a validation run pinned to a revision checks."""
    frozen = snapshot.get("environment") or {}
    if task.domain == Domain.SQL:
        live = task.sql_environment
        fields = {f: frozen.get(f, getattr(live, f)) for f in SQL_ENV_FIELDS}
        database = live.database
        sha = frozen.get("database_sha256", database.sha256 if database else None)
        if database is None or database.sha256 != sha:
            database = (
                SqlDatabase.objects.filter(db_id=fields["db_id"], sha256=sha).first()
                if sha
                else None
            )
        return SimpleNamespace(**fields, database=database)
    live = task.swe_environment
    fields = {f: frozen.get(f, getattr(live, f)) for f in SWE_ENV_FIELDS}
    # The task too: building the environment a check needs records the build against it.
    return SimpleNamespace(**fields, repository=live.repository, task=task)
