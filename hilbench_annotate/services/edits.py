"""The edit recipe, written once: claim the next version, write what changed (the task's own
fields, its environment, its whole registry), freeze the result as a revision, record the
event. Every edit of a task's content goes through ``task_edit``; the workspace builds its
``TaskChanges`` from the draft and never writes a core row itself."""

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.text_limits import spec_limit_key, text_too_long

from .blockers import registry_problems, registry_replace
from .tasks import (
    _check_spec,
    _edited_reason,
    environment_update,
    revision_create,
    task_bump_version,
    task_event,
    task_lock_for_editor,
    task_require_editable,
)


@dataclass(frozen=True)
class TaskChanges:
    """What an edit changes; None: left as it is."""

    title: str | None = None
    blocked_spec: dict[str, str] | None = None
    environment: dict[str, Any] | None = None  # author-editable fields (EDITABLE_ENV_FIELDS)
    blockers: list[dict[str, Any]] | None = None  # the whole registry, in order


@transaction.atomic
def task_edit(
    *,
    task: Task,
    actor,
    expected_version: int,
    changes: TaskChanges,
    reason: str = "",
    event: str = "task_edited",
    lint_findings: list[dict] | None = None,
    session: str = "",
    autosave: bool = False,
    **event_data,
) -> Revision:
    """Apply ``changes`` as one new revision (``reason``: what the timeline says; by default
    the fields edited) and record ``event``. Refused, writing nothing, when the task is not
    editable, the registry is invalid or the task moved past ``expected_version``. An
    ``autosave`` of a workspace ``session`` may fold into the session's revision instead
    (``revisions.revision_write``); the version moves either way. ``actor`` must be the
    task's author or a lead (404 when they cannot see it, 403 when they may not change it),
    asked here whatever the caller asked (``tasks.task_lock_for_editor``)."""
    task_lock_for_editor(actor=actor, task=task)
    task_require_editable(task)
    if changes.blockers is not None:
        problems = registry_problems(domain=task.domain, blockers=changes.blockers)
        if problems:
            raise DomainError("; ".join(problems))
    _check_spec_lengths(task, changes.blocked_spec)
    task_bump_version(task=task, expected_version=expected_version)
    fields = _write_own_fields(task, changes)
    if changes.environment:
        fields += environment_update(task=task, changes=changes.environment)
    if changes.blockers is not None:
        registry_replace(task=task, blockers=changes.blockers)
        fields.append("blockers")
    revision = revision_create(
        task=task,
        actor=actor,
        reason=reason or _edited_reason(fields),
        lint_findings=lint_findings,
        session=session,
        autosave=autosave,
    )
    task_event(
        task=task,
        actor=actor,
        kind=event,
        fields=fields,
        version=task.version,
        revision=revision.number,
        **event_data,
    )
    return revision


def _check_spec_lengths(task: Task, spec) -> None:
    """A section of the blocked specification past its limit is refused, unless it is the
    text already stored (an import may bring a longer one; a save that keeps it passes)."""
    if not isinstance(spec, dict):
        return
    stored = task.blocked_spec if isinstance(task.blocked_spec, dict) else {}
    key = spec_limit_key(task.domain)
    problems = [
        too_long
        for section, text in spec.items()
        if text != stored.get(section)
        and (too_long := text_too_long(key, text, name=f"the {section.replace('_', ' ')}"))
    ]
    if problems:
        raise DomainError("; ".join(problems))


def _write_own_fields(task: Task, changes: TaskChanges) -> list[str]:
    written = {}
    if changes.title is not None:
        if not changes.title.strip():
            raise DomainError("title must not be empty.")
        written["title"] = changes.title.strip()[:300]
    if changes.blocked_spec is not None:
        written["blocked_spec"] = _check_spec(task.domain, changes.blocked_spec, "blocked_spec")
    if written:
        Task.objects.filter(pk=task.pk).update(**written)
        for name, value in written.items():
            setattr(task, name, value)
    return list(written)


def task_update(
    *,
    task: Task,
    actor,
    expected_version: int,
    title: str | None = None,
    blocked_spec: dict[str, str] | None = None,
) -> Task:
    """Change a task's own fields; a new revision records it (``edits.task_edit``, which
    refuses an ``actor`` who may not edit the task)."""
    changes = TaskChanges(title=title, blocked_spec=blocked_spec)
    task_edit(task=task, actor=actor, expected_version=expected_version, changes=changes)
    return task


def task_touch_environment(*, task: Task, actor, expected_version: int, changes: dict) -> Task:
    """Change editable environment fields outside the workspace, as one revision (checked
    and written by ``task_edit``)."""
    task_edit(
        task=task,
        actor=actor,
        expected_version=expected_version,
        changes=TaskChanges(environment=changes),
        event="environment_edited",
    )
    return task
