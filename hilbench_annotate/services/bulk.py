"""Many tasks at once: what ``task_create`` writes, in a fixed number of statements a chunk.

An import of 10,000 records through ``task_create`` costs some ten queries a task; here a
chunk of tasks costs a savepoint, one statement per table for all its rows (tasks,
environments, revisions, events: ``COPY`` on PostgreSQL, a prepared INSERT run for every row
on SQLite), one SELECT of the new tasks' ids, and ``bulk_create`` for blockers and trigger
questions when there are any.
"""

import json
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import DateTimeField, JSONField
from django.utils import timezone

from hilbench_annotate.models import (
    Blocker,
    Project,
    Revision,
    SqlEnvironment,
    SweEnvironment,
    Task,
    TaskEvent,
    TriggerQuestion,
)
from hilbench_annotate.toolkit.iteration import batched
from hilbench_annotate.vocabulary import Domain

from .tasks import _snapshot, _task_row


def _blocker_rows(task: Task, blockers: list[dict[str, Any]]) -> list[tuple[Blocker, list[str]]]:
    rows = []
    for position, fields in enumerate(blockers):
        fields = dict(fields)
        questions = list(fields.pop("trigger_questions", ()))
        rows.append((Blocker(task=task, position=position, **fields), questions))
    return rows


def _column_values(model, connection, now) -> list[tuple[str, Callable[[Any], Any]]]:
    """For each column of ``model`` but the primary key: the attribute it is read from and
    what turns a value into what the driver takes. Django's ``get_db_prep_save`` per value
    was most of an import's time; the columns here need only these three conversions."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    plan = []
    for f in model._meta.concrete_fields:
        if f.primary_key:
            continue
        if isinstance(f, JSONField):
            convert = partial(json.dumps, cls=f.encoder)
        elif isinstance(f, DateTimeField) and (f.auto_now or f.auto_now_add):
            convert = partial(_constant, stamp)
        elif isinstance(f, DateTimeField):
            convert = connection.ops.adapt_datetimefield_value
        else:
            convert = _same
        plan.append((f.attname, convert))
    return plan


def _constant(value, _ignored):
    return value


def _same(value):
    return value


def _insert_many(model, rows: list) -> None:
    """INSERT ``rows`` (unsaved instances, or dicts of attribute name to value with every
    foreign key set; a missing field takes its default) for rows whose primary keys nobody
    needs back. PostgreSQL takes them with one ``COPY``; SQLite with one prepared INSERT run
    for each row (``executemany``). ``bulk_create`` compiles its multi-row INSERTs value by
    value (and, on SQLite, splits them every 999 parameters): several times slower."""
    if not rows:
        return
    connection = connections[router.db_for_write(model)]
    plan = _column_values(model, connection, timezone.now())
    defaults = {
        f.attname: f.get_default() for f in model._meta.concrete_fields if not f.primary_key
    }
    values = [
        [
            convert(row.get(name, defaults[name]) if isinstance(row, dict) else getattr(row, name))
            for name, convert in plan
        ]
        for row in rows
    ]
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(model._meta.get_field(name).column) for name, _ in plan)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Names from the model's meta, quoted; the values travel as COPY data.
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(plan))
            # Names from the model's meta, quoted; the values are bound.
            sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608
            cursor.executemany(sql, values)


def _insert_tasks(project: Project, tasks: list[Task]) -> None:
    """INSERT the chunk's tasks, then read their primary keys back in one query (by their
    source records, unique in the project): ``executemany`` returns none."""
    _insert_many(Task, tasks)
    ids = {
        (source, source_id): pk
        for source, source_id, pk in Task.objects.filter(
            project=project, source_id__in={t.source_id for t in tasks}
        ).values_list("source", "source_id", "pk")
    }
    for task in tasks:
        task.pk = ids[(task.source, task.source_id)]
        task._state.adding = False
        task._state.db = router.db_for_write(Task)


def _create_chunk(
    *, project: Project, records: list[dict[str, Any]], author, reason: str
) -> list[Task]:
    actor = author if getattr(author, "is_authenticated", False) else None
    tasks, envs, blockers = [], [], []
    for record in records:
        task = _task_row(
            project=project,
            author=author,
            blocker_count=len(record.get("blockers", ())),
            **{k: v for k, v in record.items() if k not in ("environment", "blockers")},
        )
        env_model = SqlEnvironment if task.domain == Domain.SQL else SweEnvironment
        tasks.append(task)
        envs.append(env_model(task=task, **record["environment"]))
        blockers.append(_blocker_rows(task, record.get("blockers", [])))
    _insert_tasks(project, tasks)
    for env in envs:
        env.task_id = env.task.pk  # set by the INSERT above
    for env_model in (SqlEnvironment, SweEnvironment):
        _insert_many(env_model, [env for env in envs if isinstance(env, env_model)])
    Blocker.objects.bulk_create([b for rows in blockers for b, _ in rows])
    TriggerQuestion.objects.bulk_create(
        TriggerQuestion(blocker=blocker, position=i, text=text)
        for rows in blockers
        for blocker, questions in rows
        for i, text in enumerate(questions)
    )
    _insert_many(
        Revision,
        [
            {
                "task_id": task.pk,
                "number": 1,
                "snapshot": _snapshot(task, env, rows),
                "author_id": actor.pk if actor else None,
                "reason": reason,
                "lint_findings": [],
            }
            for task, env, rows in zip(tasks, envs, blockers, strict=True)
        ],
    )
    _insert_many(
        TaskEvent,
        [
            {
                "project_id": project.pk,
                "task_id": task.pk,
                "actor_id": actor.pk if actor else None,
                "kind": reason,
                "data": {"source": task.source, "source_id": task.source_id},
            }
            for task in tasks
        ],
    )
    return tasks


def task_create_many(
    *,
    project: Project,
    records: Iterable[dict[str, Any]],
    author=None,
    reason: str = "created",
    chunk_size: int | None = None,
    on_chunk=None,
) -> list[Task]:
    """``task_create`` for each record (its keyword arguments but ``project``, ``author``
    and ``reason``), all or nothing, a chunk of ``chunk_size`` (``IMPORT_CHUNK_SIZE``) at a
    time; ``on_chunk(done)`` is called after each chunk with the tasks written so far.

    The caller checked the records (as importers do in their first pass); a record that
    still fails (a bad domain or spec, a constraint) rolls back every chunk.
    """
    size = chunk_size or settings.IMPORT_CHUNK_SIZE
    created: list[Task] = []
    with transaction.atomic():
        for chunk in batched(records, size):
            with transaction.atomic():
                created.extend(
                    _create_chunk(project=project, records=chunk, author=author, reason=reason)
                )
            if on_chunk is not None:
                on_chunk(len(created))
    return created
