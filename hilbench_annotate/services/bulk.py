"""Many tasks at once: what ``task_create`` writes, in a fixed number of statements a chunk.

An import of 10,000 records through ``task_create`` costs some ten queries a task; here a
chunk of tasks costs a savepoint, one statement per table for all its rows (tasks,
environments, revisions: ``COPY`` on PostgreSQL, a prepared INSERT run for every row on
SQLite), one SELECT of the new tasks' ids, and ``bulk_create`` for blockers and trigger
questions when there are any. A task's making is told by its revision 1 (its reason, author
and time), as ``task_create`` tells it: no event of its own.
"""

import contextlib
import json
import logging
import operator
from collections.abc import Callable, Iterable
from functools import cache, partial
from typing import Any

import orjson
from django.conf import settings
from django.db import DatabaseError, Error, connections, router, transaction
from django.db.models import DateTimeField, JSONField
from django.utils import timezone

from hilbench_annotate.models import (
    Blocker,
    Project,
    Revision,
    SqlEnvironment,
    SweEnvironment,
    Task,
    TriggerQuestion,
)
from hilbench_annotate.toolkit.iteration import batched
from hilbench_annotate.vocabulary import Domain

from .search import task_search_insert_new
from .tasks import _snapshot, _task_values

logger = logging.getLogger(__name__)


class _Row(dict):
    """A row to INSERT (attribute name to value) that ``_snapshot`` reads as it reads a
    model instance: making a Task and an environment instance of every record was a third
    of an import's time."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _defaults(model) -> dict[str, Any]:
    return {f.attname: f.get_default() for f in model._meta.concrete_fields if not f.primary_key}


@cache
def _environment_fields(model) -> tuple[frozenset[str], tuple]:
    """The names a record's ``environment`` may use for ``model`` (attribute names, and
    foreign keys by name), and its foreign keys but the task: read once per model."""
    relations = [f for f in model._meta.concrete_fields if f.is_relation]
    columns = {f.attname for f in model._meta.concrete_fields if not f.primary_key}
    names = columns | {f.name for f in relations}
    return frozenset(names), tuple(f for f in relations if f.name != "task")


def _environment_row(domain: str, fields: dict[str, Any], defaults: dict) -> _Row:
    """The environment row of a record's ``environment`` (its model's field names, foreign
    keys as instances), with the defaults of the fields it leaves out."""
    model = SqlEnvironment if domain == Domain.SQL else SweEnvironment
    accepted, foreign_keys = _environment_fields(model)
    unknown = set(fields) - accepted
    if unknown:
        raise TypeError(f"{model.__name__} has no field(s) {sorted(unknown)}")
    env = _Row(defaults[domain])
    env.update(fields)
    for field in foreign_keys:
        instance = env.get(field.name)
        if instance is None and env[field.attname] is not None:  # given by id: the snapshot
            instance = field.related_model.objects.get(pk=env[field.attname])  # reads it
        env[field.name] = instance
        env[field.attname] = instance.pk if instance is not None else None
    return env


def _json_column(field: JSONField) -> Callable[[Any], str]:
    """``json.dumps`` for one INSERT's values of ``field``, each object encoded once: the
    environments of a database's questions share its descriptions (up to some 15 kB of
    JSON in BIRD) and its defaults."""
    dumps = partial(json.dumps, cls=field.encoder) if field.encoder else _dumps
    done: dict[int, tuple[Any, str]] = {}

    def convert(value: Any) -> str:
        hit = done.get(id(value))
        if hit is None or hit[0] is not value:  # the value is kept, so its id is not reused
            hit = done[id(value)] = (value, dumps(value))
        return hit[1]

    return convert


def _dumps(value: Any) -> str:
    """``json.dumps`` for a column: orjson's compact text, several times faster (the JSON
    columns of 10,000 tasks took an eighth of their import); json for what orjson refuses
    (an integer past 64 bits, a lone surrogate)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


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
            convert = _json_column(f)
        elif isinstance(f, DateTimeField) and (f.auto_now or f.auto_now_add):
            convert = partial(_constant, stamp)
        elif isinstance(f, DateTimeField):
            convert = connection.ops.adapt_datetimefield_value
        else:
            convert = None
        plan.append((f.attname, convert))
    return plan


def _constant(value, _ignored):
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
    values = _row_values(model, rows, _column_values(model, connection, timezone.now()))
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    names = ", ".join(quote(f.column) for f in _columns(model))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Names from the model's meta, quoted; the values travel as COPY data.
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(values[0]))
            # Names from the model's meta, quoted; the values are bound.
            sql = f"INSERT INTO {table} ({names}) VALUES ({marks})"  # noqa: S608
            cursor.executemany(sql, values)


@cache
def _columns(model) -> tuple:
    return tuple(f for f in model._meta.concrete_fields if not f.primary_key)


def _row_values(model, rows: list, plan: list[tuple[str, Callable | None]]) -> list:
    """Each row's column values in ``plan``'s order, converted. A dict row lacking a column
    takes its default; a row's values are read at once (``itemgetter``) and only the columns
    that need it are converted (JSON, timestamps): a call for every value was a fifth of an
    import's Python time."""
    names = [name for name, _ in plan]
    converts = [(i, convert) for i, (_, convert) in enumerate(plan) if convert is not None]
    if isinstance(rows[0], dict):
        read = operator.itemgetter(*names)
        defaults = _defaults(model)
        # The rows of one call are made alike: merged with the defaults if the first needs it.
        get = read if defaults.keys() <= rows[0].keys() else partial(_with_defaults, read, defaults)
    else:
        get = operator.attrgetter(*names)
    values = []
    for row in rows:
        try:
            row_values = list(get(row))
        except KeyError:  # a row with fewer keys than the first
            row_values = list(_with_defaults(read, defaults, row))
        for i, convert in converts:
            row_values[i] = convert(row_values[i])
        values.append(row_values)
    return values


def _with_defaults(get, defaults: dict, row: dict) -> tuple:
    return get(defaults | row)


def _insert_tasks(project: Project, tasks: list[_Row]) -> None:
    """INSERT the chunk's tasks and set each one's primary key. On SQLite, whose
    ``executemany`` returns none, the rows just written under the transaction's write lock
    have the consecutive ids ending at ``last_insert_rowid()`` (checked at both ends);
    elsewhere they are read back in one query by their source records, unique in the
    project."""
    _insert_many(Task, tasks)
    connection = connections[router.db_for_write(Task)]
    if connection.vendor == "sqlite":
        table = connection.ops.quote_name(Task._meta.db_table)
        with connection.cursor() as cursor:
            # The table's name from the model's meta, quoted; the count is bound.
            cursor.execute(
                f"SELECT id, source_id FROM {table} WHERE id IN "  # noqa: S608
                "(last_insert_rowid(), last_insert_rowid() - %s) ORDER BY id",
                [len(tasks) - 1],
            )
            ends = cursor.fetchall()
        expected = [tasks[0]["source_id"], tasks[-1]["source_id"]][: len(tasks)]
        if [source_id for _, source_id in ends] == expected:
            for pk, task in enumerate(tasks, start=ends[0][0]):
                task["id"] = pk
            return
    ids = {
        (source, source_id): pk
        for source, source_id, pk in Task.objects.filter(
            project=project, source_id__in={t["source_id"] for t in tasks}
        ).values_list("source", "source_id", "pk")
    }
    for task in tasks:
        task["id"] = ids[(task["source"], task["source_id"])]


def _blocker_rows(task_id: int, blockers: list[dict[str, Any]]) -> list[tuple[Blocker, list[str]]]:
    rows = []
    for position, fields in enumerate(blockers):
        fields = dict(fields)
        questions = list(fields.pop("trigger_questions", ()))
        rows.append((Blocker(task_id=task_id, position=position, **fields), questions))
    return rows


def _create_chunk(
    *, project: Project, records: list[dict[str, Any]], author, reason: str
) -> list[int]:
    author_id = author.pk if getattr(author, "is_authenticated", False) else None
    task_defaults = _defaults(Task)
    env_defaults = {Domain.SQL: _defaults(SqlEnvironment), Domain.SWE: _defaults(SweEnvironment)}
    tasks, envs = [], []
    for record in records:
        task = _Row(task_defaults)
        task.update(
            _task_values(
                project=project,
                author=author,
                blocker_count=len(record.get("blockers", ())),
                **{k: v for k, v in record.items() if k not in ("environment", "blockers")},
            )
        )
        env = _environment_row(task["domain"], record["environment"], env_defaults)
        tasks.append(task)
        envs.append(env)
    _insert_tasks(project, tasks)
    for task, env in zip(tasks, envs, strict=True):
        env["task_id"] = task["id"]
    for domain, env_model in ((Domain.SQL, SqlEnvironment), (Domain.SWE, SweEnvironment)):
        _insert_many(
            env_model,
            [env for task, env in zip(tasks, envs, strict=True) if task["domain"] == domain],
        )
    blockers = [
        _blocker_rows(task["id"], record.get("blockers", ()))
        for task, record in zip(tasks, records, strict=True)
    ]
    Blocker.objects.bulk_create([b for rows in blockers for b, _ in rows])
    TriggerQuestion.objects.bulk_create(
        TriggerQuestion(blocker=blocker, position=i, text=text)
        for rows in blockers
        for blocker, questions in rows
        for i, text in enumerate(questions)
    )
    snapshots = {
        task["id"]: _snapshot(task, env, rows)
        for task, env, rows in zip(tasks, envs, blockers, strict=True)
    }
    _insert_many(
        Revision,
        [
            {
                "task_id": pk,
                "number": 1,
                "snapshot": snapshot,
                "author_id": author_id,
                "reason": reason,
                "lint_findings": [],
            }
            for pk, snapshot in snapshots.items()
        ],
    )
    task_search_insert_new(snapshots={t["id"]: (snapshots[t["id"]], t["source_id"]) for t in tasks})
    return [task["id"] for task in tasks]


def task_create_many(
    *,
    project: Project,
    records: Iterable[dict[str, Any]],
    author=None,
    reason: str = "created",
    chunk_size: int | None = None,
    on_chunk=None,
) -> list[int]:
    """``task_create`` for each record (its keyword arguments but ``project``, ``author``
    and ``reason``), all or nothing, a chunk of ``chunk_size`` (``IMPORT_CHUNK_SIZE``) at a
    time; ``on_chunk(done)`` is called after each chunk with the tasks written so far.
    Returns the new tasks' ids, in the records' order.

    The caller checked the records (as importers do in their first pass); a record that
    still fails (a bad domain or spec, a constraint) rolls back every chunk.
    """
    size = chunk_size or settings.IMPORT_CHUNK_SIZE
    created: list[int] = []
    with transaction.atomic():
        for chunk in batched(records, size):
            with transaction.atomic():
                created.extend(
                    _create_chunk(project=project, records=chunk, author=author, reason=reason)
                )
            if on_chunk is not None:
                on_chunk(len(created))
    return created


# Tables a bulk write fills with the tasks, a row (or some) a task, that an export reads by
# task: their statistics are taken with the task table's.
_FILLED_WITH_TASKS = (Revision, SqlEnvironment, SweEnvironment, Blocker, TriggerQuestion)


# The statistics target of the refresh for the tables written with the tasks (PostgreSQL's
# default is 100): ANALYZE holds the rows it samples, 300 per unit of target, in the
# connection's server process while it runs. Of 30,000 revisions (their snapshots as JSON)
# that process held 63 MB of its own at the peak, 8 MB with 10; of the environments, blockers
# and trigger questions 63 and 8. These tables are read by task: the export's reads stay on
# their indexes, and the row counts are the tables' own. The stats stay until autovacuum's
# next ANALYZE (a tenth of the table changed since). The task table keeps the default target
# (its VACUUM (ANALYZE) held 37 MB): its list and counts are planned per project, and a
# deployment of many projects needs their most common values.
STATISTICS_TARGET = 10


def task_statistics_refresh(created: int) -> bool:
    """After a bulk write of ``created`` tasks, bring PostgreSQL's statistics and visibility
    map of the task table up to date at once (``VACUUM (ANALYZE)``, some 0.1 s for 10,000
    rows) where autovacuum would at its next turn, up to a minute later: by the same rule,
    more new rows than 50 and a tenth of the table. Until then the planner took a freshly
    imported project for some twenty tasks and read page 1 of its list by a bitmap scan of
    all of them (4.9 ms instead of 0.7), and counted them from the heap (2.2 ms, not 0.9).
    The tables written with the tasks (``_FILLED_WITH_TASKS``) are analyzed too: without
    statistics the planner read a chunk's current revisions by a scan of the whole revision
    table (6.6 ms for 250 of 10,000 tasks, 13 ms of 30,000; 0.6 ms by its index), and an
    export right after an import asked that five times a chunk.
    Outside a transaction only (VACUUM cannot run in one); nothing on SQLite, whose planner
    keeps no statistics unless asked. Returns whether it ran."""
    connection = connections[router.db_for_write(Task)]
    if connection.vendor != "postgresql":
        return False
    table = connection.ops.quote_name(Task._meta.db_table)
    others = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in _FILLED_WITH_TASKS)
    try:
        if not connection.get_autocommit():
            return False
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = %s::regclass", [table]
            )
            rows = cursor.fetchone()[0]
            if created <= 50 + 0.1 * rows:
                return False
            # The tables' names from the models' meta, quoted.
            cursor.execute(f"VACUUM (ANALYZE) {table}")
            # The others sampled for STATISTICS_TARGET: 3,000 rows a table, not 30,000.
            cursor.execute(f"SET default_statistics_target = {STATISTICS_TARGET}")
            try:
                cursor.execute(f"ANALYZE {others}")
            finally:
                with contextlib.suppress(Error):  # a lost connection: its own error is logged
                    cursor.execute("RESET default_statistics_target")
    except DatabaseError as exc:  # the tasks are written: autovacuum will do it
        logger.warning("Statistics refresh after %d new tasks failed: %s", created, exc)
        return False
    return True


def bulk_connection_release() -> bool:
    """Close this thread's PostgreSQL connection after a bulk write of tasks (outside a
    transaction; the next query opens another). Its server process keeps what the write
    made it allocate as long as the connection lives (``CONN_MAX_AGE``): after an import of
    10,000 tasks, 40 MB of its own in a first measurement, 6 MB in a later one on the same
    tables once their statistics had been taken. Returns whether it closed."""
    connection = connections[router.db_for_write(Task)]
    if connection.vendor != "postgresql" or connection.connection is None:
        return False
    if connection.in_atomic_block or not connection.get_autocommit():
        return False  # a transaction's work is not cut off
    connection.close()
    return True
