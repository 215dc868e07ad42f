"""Many tasks at once: what ``task_create`` writes, in a fixed number of statements a chunk.

An import of 10,000 records through ``task_create`` costs some ten queries a task; here a
chunk of tasks costs a savepoint, one prepared INSERT per table run for every row
(``executemany``: tasks, environments, revisions, events), one SELECT of the new tasks'
ids, and ``bulk_create`` for blockers and trigger questions when there are any.
"""

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from django.conf import settings
from django.db import connections, router, transaction

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
from hilbench_annotate.vocabulary import Domain

from .tasks import _snapshot, _task_row


def _chunks(items: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _blocker_rows(task: Task, blockers: list[dict[str, Any]]) -> list[tuple[Blocker, list[str]]]:
    rows = []
    for position, fields in enumerate(blockers):
        fields = dict(fields)
        questions = list(fields.pop("trigger_questions", ()))
        rows.append((Blocker(task=task, position=position, **fields), questions))
    return rows


def _insert_many(model, rows: list) -> None:
    """INSERT ``rows`` (unsaved, every foreign key set) in one ``executemany``, for rows
    whose primary keys nobody needs back. ``bulk_create`` spends most of an import's time
    compiling its multi-row INSERTs value by value (and, on SQLite, splits them every 999
    parameters); one prepared statement run for each row costs a fraction of that. Values
    are prepared by the fields themselves (``pre_save`` sets ``auto_now_add``)."""
    if not rows:
        return
    connection = connections[router.db_for_write(model)]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    table, columns = quote(model._meta.db_table), ", ".join(quote(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    # Names from the model's meta, quoted; the values are bound.
    sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608
    values = [
        [f.get_db_prep_save(f.pre_save(row, add=True), connection) for f in fields] for row in rows
    ]
    with connection.cursor() as cursor:
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
            Revision(
                task=task,
                number=1,
                snapshot=_snapshot(task, env, rows),
                author=actor,
                reason=reason,
                lint_findings=[],
            )
            for task, env, rows in zip(tasks, envs, blockers, strict=True)
        ],
    )
    _insert_many(
        TaskEvent,
        [
            TaskEvent(
                project_id=project.pk,
                task_id=task.pk,
                actor=actor,
                kind=reason,
                data={"source": task.source, "source_id": task.source_id},
            )
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
        for chunk in _chunks(records, size):
            with transaction.atomic():
                created.extend(
                    _create_chunk(project=project, records=chunk, author=author, reason=reason)
                )
            if on_chunk is not None:
                on_chunk(len(created))
    return created
