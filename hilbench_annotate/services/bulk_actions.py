"""One bulk task action (``hilbench_annotate/bulk_actions.py``) over many tasks: the ones
ticked on the task list, or every task its filter matches — ten thousand as readily as ten.

The selection is read a chunk at a time, each chunk in a fixed number of queries and its own
transaction; the action gets only the tasks the user may read (an id they may not is
reported exactly as one that no longer exists), and refuses per task, through the single-task
services, whatever those refuse.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.contrib import messages
from django.db import transaction

from hilbench_annotate import selectors  # the module: selectors import ``services.tasks``
from hilbench_annotate.access import ProjectRoles
from hilbench_annotate.bulk_actions import BulkAction, BulkOutcome, bulk_action
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.params import param_id
from hilbench_annotate.toolkit.iteration import batched
from hilbench_annotate.toolkit.wording import plain_list, shorten

CHUNK = 500
# Tasks named for each reason a message gives; the rest are counted.
NAMED = 3


@dataclass
class BulkReport:
    """What ``task_bulk_apply`` did, in words for the list's message."""

    action: BulkAction
    params: dict[str, str]
    done: int = 0
    skipped: list[tuple[Task, str]] = field(default_factory=list)
    missing: int = 0

    @property
    def level(self) -> int:
        if not self.skipped and not self.missing:
            return messages.SUCCESS
        return messages.WARNING if self.done else messages.ERROR

    @property
    def text(self) -> str:
        """``Tagged 3 tasks with “x”. 2 skipped — why: #12 “Title”, #14 “Other”.
        1 was not found (deleted, or not yours to see).``"""
        count = f"{self.done} task{'' if self.done == 1 else 's'}"
        parts = [self.action.done_text.format(tasks=count, **self.params) + "."]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped — {_reasons(self.skipped)}.")
        if self.missing:
            were = "was" if self.missing == 1 else "were"
            parts.append(f"{self.missing} {were} not found (deleted, or not yours to see).")
        return " ".join(parts)


def _reasons(skipped: list[tuple[Task, str]]) -> str:
    """``why: #12 “Title”, #14 “Other” and 3 more; other why: #7 “…”``, a reason once."""
    by_reason: dict[str, list[Task]] = {}
    for task, why in skipped:
        by_reason.setdefault(why.rstrip("."), []).append(task)
    said = []
    for why, tasks in by_reason.items():
        names = [f"#{t.pk} “{shorten(t.title, 40)}”" for t in tasks[:NAMED]]
        if len(tasks) > NAMED:
            names.append(f"{len(tasks) - NAMED} more")
        said.append(f"{why}: {plain_list(names, quote=False)}")
    return "; ".join(said)


def _selected(
    *, actor, ids: Iterable[str], filters: Mapping[str, str] | None
) -> tuple[list[int], int]:
    """The ids asked for, in order and once each — every task the filter matches now, or
    the ids ticked — and how many of those ticked are no id at all (not found)."""
    if filters is not None:
        return list(
            selectors.task_list(user=actor, filters=filters).values_list("pk", flat=True)
        ), 0
    raw = list(dict.fromkeys(str(i) for i in ids))
    wanted = [param_id(i) for i in raw]
    return list(dict.fromkeys(pk for pk in wanted if pk)), wanted.count(None)


def task_bulk_apply(
    *,
    actor,
    action: str,
    params: Mapping[str, str],
    ids: Iterable[str] = (),
    filters: Mapping[str, str] | None = None,
) -> BulkReport:
    """Apply the bulk action ``action`` to the tasks ``ids`` (or, given ``filters``, to every
    task the task list's filters match) with the action's ``params``.

    Refused as a whole, before any task: an unknown action or no task selected
    (``DomainError``), an action of a role ``actor`` holds nowhere (``AccessDenied``), params
    the action's ``clean`` refuses. Then each chunk of ``CHUNK`` tasks is read (only those
    ``actor`` may read) and handed to the action in one transaction.
    """
    chosen = bulk_action(action)
    if chosen is None:
        raise DomainError("Choose an action to apply to the selected tasks.")
    if not ProjectRoles(actor).has_anywhere(*chosen.roles):
        needed = " or ".join(str(r) for r in chosen.roles)
        raise AccessDenied(f"“{chosen.label}” needs the {needed} role in a project.")
    clean = chosen.clean(dict(params)) if chosen.clean else dict(params)
    wanted, unreadable = _selected(actor=actor, ids=ids, filters=filters)
    if not wanted and not unreadable:
        raise DomainError(
            "No task is selected: tick some, or every task the filter matches."
            if filters is None
            else "The filter matches no task."
        )
    report = BulkReport(action=chosen, params=clean, missing=unreadable)
    readable = Task.objects.visible_to(actor).select_related("project")
    readable = readable.defer("original_spec", "blocked_spec", "source_metadata")
    for chunk in batched(wanted, CHUNK):
        found = {t.pk: t for t in readable.filter(pk__in=chunk)}
        report.missing += len(chunk) - len(found)
        if not found:
            continue
        tasks = [found[pk] for pk in chunk if pk in found]
        with transaction.atomic():
            outcome: BulkOutcome = chosen.apply(user=actor, tasks=tasks, params=clean)
        report.done += outcome.done
        report.skipped += outcome.skipped
    return report
