"""Keeping ``TaskSearchText`` true: the words the task list's search reads of each task."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F

from hilbench_annotate.models import Blocker, Task, TaskSearchText, TriggerQuestion
from hilbench_annotate.search_sources import search_sources, search_words
from hilbench_annotate.toolkit.iteration import batched

SEARCH_REFRESH_CHUNK = 500


def _spec_texts(spec) -> list[str]:
    return [v for v in spec.values() if isinstance(v, str)] if isinstance(spec, dict) else []


def _chunk_texts(ids: list[int]) -> dict[int, list[str]]:
    """Every searchable text of these tasks: 3 queries and one per registered source."""
    texts: dict[int, list[str]] = {}
    rows = Task.objects.filter(pk__in=ids).values_list(
        "pk",
        "title",
        "source_id",
        "sql_environment__db_id",
        "swe_environment__repo_name",
        "blocked_spec",
        "original_spec",
    )
    for pk, title, source_id, db_id, repo, blocked, original in rows:
        texts[pk] = [title, source_id, db_id or "", repo or ""]
        texts[pk] += _spec_texts(blocked) + _spec_texts(original)
    for task_id, *fields in Blocker.objects.filter(task_id__in=ids).values_list(
        "task_id", "key", "description", "resolution"
    ):
        texts[task_id] += fields
    for task_id, text in (
        TriggerQuestion.objects.filter(blocker__task_id__in=ids)
        .annotate(task_ref=F("blocker__task_id"))
        .values_list("task_ref", "text")
    ):
        texts[task_id].append(text)
    for source in search_sources():
        for task_id, more in source(ids).items():
            if task_id in texts:
                texts[task_id] += more
    return texts


def task_search_refresh(*, task_ids: Iterable[int]) -> int:
    """Rewrite the search words of these tasks from their rows as they are now (in the
    caller's transaction): a fixed number of queries per ``SEARCH_REFRESH_CHUNK`` tasks.
    Called when a revision is saved and by the apps whose text a search reads (a comment,
    a decision). Returns the number of tasks written."""
    written = 0
    for chunk in batched(list(dict.fromkeys(task_ids)), SEARCH_REFRESH_CHUNK):
        texts = _chunk_texts(list(chunk))
        TaskSearchText.objects.bulk_create(
            [TaskSearchText(task_id=pk, text=search_words(t)) for pk, t in texts.items()],
            update_conflicts=True,
            unique_fields=["task"],
            update_fields=["text"],
        )
        written += len(texts)
    return written


def _snapshot_texts(snapshot: dict, source_id: str) -> list[str]:
    """The searchable texts of a revision snapshot (title, specification, environment's
    database or repository, blockers) and the task's source id."""
    environment = snapshot.get("environment") or {}
    texts = [
        snapshot.get("title", ""),
        source_id,
        environment.get("db_id", ""),
        environment.get("repo_name", ""),
        *_spec_texts(snapshot.get("blocked_spec")),
        *_spec_texts(snapshot.get("original_spec")),
    ]
    for blocker in snapshot.get("blockers", ()):
        texts += [blocker.get(k, "") for k in ("id", "description", "resolution")]
        texts += blocker.get("trigger_questions", ())
    return texts


def task_search_insert_new(*, snapshots: dict[int, tuple[dict, str]]) -> None:
    """The search words of tasks just made, from their revision 1 snapshots and source ids
    (``{task id: (snapshot, source id)}``): one INSERT, as ``task_create_many`` writes a
    chunk. A new task has nothing an app registers (no comment, no decision) yet."""
    TaskSearchText.objects.bulk_create(
        TaskSearchText(task_id=pk, text=search_words(_snapshot_texts(snapshot, source_id)))
        for pk, (snapshot, source_id) in snapshots.items()
    )


def task_search_write(*, task: Task, snapshot: dict) -> None:
    """``task_search_refresh`` of one task from the revision snapshot just made (its title,
    specification, environment and blockers are in it): the registered sources' queries and
    one write. Caller holds the task row lock (``revisions.revision_write``)."""
    texts = _snapshot_texts(snapshot, task.source_id)
    for source in search_sources():
        texts += source([task.pk]).get(task.pk, [])
    TaskSearchText.objects.update_or_create(task_id=task.pk, defaults={"text": search_words(texts)})
