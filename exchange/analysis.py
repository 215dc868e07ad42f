"""A project's data for analysis: its tasks, blockers, judge labels and review decisions,
one flat table each, as CSV or JSON Lines (what Label Studio's and Argilla's exports give
people who load them into pandas: ``pd.read_csv(url)``, ``pd.read_json(url, lines=True)``).

One file per table, joined by ``task_id``, rather than one nested document a task: a
spreadsheet or a data frame reads a flat table, and each file streams row by row. The rows
are read ``ANALYSIS_CHUNK`` tasks at a time by id (keyset), a fixed number of queries a
chunk whatever the project's size, and written as they are read: an export of 100,000
tasks never holds more than one chunk. Only tasks ``user`` may read (the task list's
filters applied, so the list's "Download" gives what it shows).

Labels: those of settled questions only (two labels agree, or an adjudicator decided).
Until then a question's labels are hidden from a labeller who has not labelled it and its
text from the task's author (``judge.views``); a settled question hides nothing.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from django.db.models import Max, Q

from hilbench_annotate.models import Blocker, Revision, Task, TriggerQuestion
from hilbench_annotate.selectors import task_list
from judge.labels import SETTLED, gold_of
from judge.models import QuestionLabel, ValidationQuestion
from review.models import ReviewDecision

ANALYSIS_CHUNK = 500
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}

Rows = Callable[[list[dict]], Iterator[dict]]


@dataclass(frozen=True)
class Table:
    name: str
    label: str
    columns: tuple[str, ...]
    rows: Rows  # the table's rows for a chunk of task rows
    description: str
    # The tasks that can have a row, when few do: the download walks those only, not every
    # task of the project a chunk at a time for a handful of rows.
    having: Callable[[], Q] | None = None


def _iso(value) -> str:
    return value.isoformat() if value else ""


def _task_rows(tasks: list[dict]) -> Iterator[dict]:
    yield from tasks


def _renamed(row: dict, lookups: Mapping[str, str]) -> dict:
    """A ``values()`` row under the table's column names (``lookups``: column → ORM lookup)."""
    return {column: row[lookup] for column, lookup in lookups.items()}


_BLOCKER_LOOKUPS = {
    "task_id": "task_id",
    "blocker_id": "key",
    "position": "position",
    "type": "type",
    "subtype": "subtype",
    "surfaces_in": "surfaces_in",
    "description": "description",
    "resolution": "resolution",
}


def _blocker_rows(tasks: list[dict]) -> Iterator[dict]:
    ids = [t["task_id"] for t in tasks]
    questions: dict[int, list[str]] = defaultdict(list)
    for blocker_id, text in (
        TriggerQuestion.objects.filter(blocker__task_id__in=ids)
        .order_by("blocker_id", "position", "id")
        .values_list("blocker_id", "text")
    ):
        questions[blocker_id].append(text)
    for row in (
        Blocker.objects.filter(task_id__in=ids)
        .order_by("task_id", "position", "id")
        .values("id", *_BLOCKER_LOOKUPS.values())
    ):
        yield {**_renamed(row, _BLOCKER_LOOKUPS), "trigger_questions": questions[row["id"]]}


def _label_rows(tasks: list[dict]) -> Iterator[dict]:
    ids = [t["task_id"] for t in tasks]
    labels: dict[int, list[QuestionLabel]] = defaultdict(list)
    for label in (
        QuestionLabel.objects.filter(question__task_id__in=ids)
        .select_related("labeller")
        .order_by("question_id", "created_at", "id")
    ):
        labels[label.question_id].append(label)
    for question in ValidationQuestion.objects.filter(task_id__in=ids).order_by("task_id", "id"):
        mine = labels[question.pk]
        state, gold = gold_of(mine, question.created_by_id)
        if state not in SETTLED:
            continue
        for label in mine:
            yield {
                "task_id": question.task_id,
                "question_id": question.pk,
                "question": question.text,
                "split": question.split,
                "style": question.style,
                "labeller": label.labeller.username,
                "labeller_role": label.role,
                "label": label.blocker_key or "",
                "gold": gold or "",
                "gold_state": state,
                "labelled_at": _iso(label.created_at),
            }


_DECISION_LOOKUPS = {
    "task_id": "task_id",
    "decision_id": "id",
    "layer": "layer",
    "layer_name": "layer_name",
    "reviewer": "reviewer__username",
    "revision": "revision__number",
    "outcome": "outcome",
    "summary": "summary",
    "reject_reason": "reject_reason",
    "checklist": "checklist",
    "blocker_comments": "blocker_comments",
}


def _decision_rows(tasks: list[dict]) -> Iterator[dict]:
    ids = [t["task_id"] for t in tasks]
    for d in (
        ReviewDecision.objects.filter(task_id__in=ids)
        .order_by("task_id", "created_at", "id")
        .values(*_DECISION_LOOKUPS.values(), "created_at")
    ):
        yield {**_renamed(d, _DECISION_LOOKUPS), "decided_at": _iso(d["created_at"])}


TABLES: dict[str, Table] = {
    "tasks": Table(
        "tasks",
        "Tasks",
        (
            "task_id",
            "project",
            "domain",
            "source",
            "source_id",
            "title",
            "status",
            "author",
            "version",
            "revision",
            "review_layer",
            "blocker_count",
            "tags",
            "resource",
            "original_spec",
            "blocked_spec",
            "gold_sql",
            "created_at",
            "updated_at",
        ),  # fmt: skip
        _task_rows,
        "one row a task: its specification (original and blocked), status, current revision",
    ),
    "blockers": Table(
        "blockers",
        "Blockers",
        (
            "task_id",
            "blocker_id",
            "position",
            "type",
            "subtype",
            "surfaces_in",
            "description",
            "resolution",
            "trigger_questions",
        ),  # fmt: skip
        _blocker_rows,
        "one row a blocker: its description, resolution and trigger questions",
    ),
    "labels": Table(
        "labels",
        "Judge labels",
        (
            "task_id",
            "question_id",
            "question",
            "split",
            "style",
            "labeller",
            "labeller_role",
            "label",
            "gold",
            "gold_state",
            "labelled_at",
        ),  # fmt: skip
        _label_rows,
        "one row a label of a settled held-out question: the blocker it names, and the gold",
        having=lambda: Q(pk__in=ValidationQuestion.objects.values("task_id")),
    ),
    "decisions": Table(
        "decisions",
        "Review decisions",
        (
            "task_id",
            "decision_id",
            "layer",
            "layer_name",
            "reviewer",
            "revision",
            "outcome",
            "summary",
            "reject_reason",
            "checklist",
            "blocker_comments",
            "decided_at",
        ),  # fmt: skip
        _decision_rows,
        "one row a reviewer's decision at a layer: outcome, summary, checklist, notes",
        having=lambda: Q(pk__in=ReviewDecision.objects.values("task_id")),
    ),
}


def _task_chunks(user, filters: Mapping[str, str], having=None) -> Iterator[list[dict]]:
    """The readable tasks the filters match, ``ANALYSIS_CHUNK`` at a time in id order: three
    queries a chunk (the tasks, their tags, their current revision numbers)."""
    tasks = task_list(user=user, filters=filters).order_by("pk")
    if having is not None:
        tasks = tasks.filter(having())
    last = 0
    while True:
        chunk = list(
            tasks.filter(pk__gt=last).values(
                "pk",
                "project__slug",
                "domain",
                "source",
                "source_id",
                "title",
                "status",
                "author__username",
                "version",
                "review_layer",
                "blocker_count",
                "sql_environment__db_id",
                "swe_environment__repo_name",
                "original_spec",
                "blocked_spec",
                "sql_environment__gold_sql",
                "created_at",
                "updated_at",
            )[:ANALYSIS_CHUNK]
        )
        if not chunk:
            return
        last = chunk[-1]["pk"]
        yield _task_dicts(chunk)


def _task_dicts(chunk: list[dict]) -> list[dict]:
    ids = [t["pk"] for t in chunk]
    tags: dict[int, list[str]] = defaultdict(list)
    for task_id, name in Task.tags.through.objects.filter(task_id__in=ids).values_list(
        "task_id", "tag__name"
    ):
        tags[task_id].append(name)
    revisions = dict(
        Revision.objects.filter(task_id__in=ids)
        .values("task_id")
        .annotate(latest=Max("number"))
        .values_list("task_id", "latest")
    )
    return [
        {
            "task_id": t["pk"],
            "project": t["project__slug"],
            "domain": t["domain"],
            "source": t["source"],
            "source_id": t["source_id"],
            "title": t["title"],
            "status": t["status"],
            "author": t["author__username"] or "",
            "version": t["version"],
            "revision": revisions.get(t["pk"], 0),
            "review_layer": t["review_layer"],
            "blocker_count": t["blocker_count"],
            "tags": sorted(tags[t["pk"]]),
            "resource": t["sql_environment__db_id"] or t["swe_environment__repo_name"] or "",
            "original_spec": t["original_spec"],
            "blocked_spec": t["blocked_spec"],
            "gold_sql": t["sql_environment__gold_sql"] or "",
            "created_at": _iso(t["created_at"]),
            "updated_at": _iso(t["updated_at"]),
        }
        for t in chunk
    ]


def analysis_rows(*, user, table: str, filters: Mapping[str, str]) -> Iterator[dict]:
    """The rows of ``table`` (a key of ``TABLES``) for the tasks ``user`` may read that
    ``filters`` (the task list's) match, read a chunk at a time."""
    rows = TABLES[table].rows
    for tasks in _task_chunks(user, filters, TABLES[table].having):
        yield from rows(tasks)


def _cell(value) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def as_csv(table: str, rows: Iterator[dict]) -> Iterator[str]:
    """CSV text, the header first, a line (or a few) per yield. Lists and objects are JSON."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    columns = TABLES[table].columns
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row[c]) for c in columns])
        if buffer.tell() > 64_000:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def as_jsonl(table: str, rows: Iterator[dict]) -> Iterator[str]:
    """One JSON object a line, its keys in the table's column order."""
    columns = TABLES[table].columns
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps({c: row[c] for c in columns}, ensure_ascii=False))
        if len(lines) >= 200:
            yield "\n".join(lines) + "\n"
            lines = []
    if lines:
        yield "\n".join(lines) + "\n"


def analysis_stream(*, user, table: str, fmt: str, filters: Mapping[str, str]) -> Iterator[str]:
    rows = analysis_rows(user=user, table=table, filters=filters)
    return as_csv(table, rows) if fmt == "csv" else as_jsonl(table, rows)
