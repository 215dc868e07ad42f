import re
from collections import namedtuple
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from hilbench_annotate.access import access_task, editable_tasks, require_task_editor
from hilbench_annotate.envspec import spec_clean
from hilbench_annotate.errors import AccessDenied, DomainError, StaleVersion
from hilbench_annotate.models import (
    Blocker,
    Project,
    Revision,
    SqlEnvironment,
    SweEnvironment,
    Tag,
    Task,
    TaskEvent,
    TriggerQuestion,
)
from hilbench_annotate.spec import sections_for
from hilbench_annotate.toolkit.wording import plain_list
from hilbench_annotate.vocabulary import Domain
from hilbench_annotate.workflow import EDITABLE

from .revisions import revision_write

SQL_ENV_FIELDS = (
    "db_id",
    "descriptions",
    "edit_script",
    "business_info",
    "original_sql",
    "gold_sql",
    "golden_output",
    "difficulty",
)
SWE_ENV_FIELDS = (
    "repo_name",
    "base_commit",
    "setup_patch",
    "gold_patch",
    "test_patch",
    "fail_to_pass",
    "pass_to_pass",
    "test_command",
    "environment_spec",
)


def event_record(*, project_id: int, task_id: int | None, actor, kind: str, **data) -> TaskEvent:
    return TaskEvent.objects.create(
        project_id=project_id,
        task_id=task_id,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        kind=kind,
        data=data,
    )


def task_event(*, task: Task, actor, kind: str, **data) -> TaskEvent:
    """An event about one task (the project comes with it)."""
    return event_record(project_id=task.project_id, task_id=task.pk, actor=actor, kind=kind, **data)


def task_events(*, actor, kind: str, items) -> None:
    """``task_event`` for each ``(task, data)`` of ``items``, in one INSERT."""
    who = actor if getattr(actor, "is_authenticated", False) else None
    TaskEvent.objects.bulk_create(
        TaskEvent(project_id=task.project_id, task_id=task.pk, actor=who, kind=kind, data=data)
        for task, data in items
    )


def task_snapshot(task: Task) -> dict[str, Any]:
    """Everything an author can change, as plain JSON: what a revision freezes."""
    return task_snapshots([task])[task.pk]


_BLOCKER_FIELDS = (
    "pk",
    "task_id",
    "key",
    "type",
    "subtype",
    "description",
    "resolution",
    "surfaces_in",
    "criteria",
)
# What ``_snapshot`` reads of a blocker, read as plain rows (an export snapshots thousands
# of tasks; making a model instance of each blocker cost as much as the query).
_BlockerRow = namedtuple("_BlockerRow", _BLOCKER_FIELDS)


def task_snapshots(tasks: list[Task]) -> dict[int, dict[str, Any]]:
    """``task_snapshot`` of many tasks (their environments loaded with them) in two queries:
    the blockers, and their trigger questions."""
    blockers: dict[int, list[tuple[Any, list[str]]]] = {task.pk: [] for task in tasks}
    by_id: dict[int, list[str]] = {}
    for row in Blocker.objects.filter(task__in=[t.pk for t in tasks]).values_list(*_BLOCKER_FIELDS):
        blocker = _BlockerRow(*row)
        by_id[blocker.pk] = []
        blockers[blocker.task_id].append((blocker, by_id[blocker.pk]))
    for blocker_id, text in TriggerQuestion.objects.filter(blocker_id__in=by_id).values_list(
        "blocker_id", "text"
    ):
        by_id[blocker_id].append(text)
    return {task.pk: _snapshot(task, task.environment, blockers[task.pk]) for task in tasks}


def _snapshot(task: Task, env, blockers: list[tuple[Blocker, list[str]]]) -> dict[str, Any]:
    """``task_snapshot`` of rows in hand (no query): blockers in position order, each with
    its trigger questions' texts. Shared with ``task_create_many``, which has the rows
    before they are saved."""
    snapshot: dict[str, Any] = {
        "version": task.version,
        "title": task.title,
        "domain": task.domain,
        "status": task.status,
        "original_spec": task.original_spec,
        "blocked_spec": task.blocked_spec,
        "blockers": [
            {
                "id": blocker.key,
                "type": blocker.type,
                "subtype": blocker.subtype,
                "description": blocker.description,
                "resolution": blocker.resolution,
                "surfaces_in": blocker.surfaces_in,
                "criteria": blocker.criteria,
                "trigger_questions": questions,
            }
            for blocker, questions in blockers
        ],
    }
    if env is not None:
        sql = task.domain == Domain.SQL
        environment = {f: getattr(env, f) for f in (SQL_ENV_FIELDS if sql else SWE_ENV_FIELDS)}
        if sql:
            environment["database_sha256"] = env.database.sha256 if env.database else None
        snapshot["environment"] = environment
    return snapshot


def revision_create(
    *,
    task: Task,
    actor,
    reason: str,
    lint_findings: list[dict] | None = None,
    session: str = "",
    autosave: bool = False,
) -> Revision:
    """Freeze the task as it is now (an autosave of a workspace ``session`` may fold into
    the session's revision: ``revisions.revision_write``). Caller holds the task row lock
    (or just created it)."""
    return revision_write(
        task=task,
        actor=actor,
        snapshot=task_snapshot(task),
        reason=reason,
        lint_findings=lint_findings,
        session=session,
        autosave=autosave,
    )


EDITABLE_ENV_FIELDS = {
    "sql": ("descriptions", "edit_script", "business_info", "gold_sql", "golden_output"),
    "swe": ("setup_patch", "test_command", "environment_spec"),
}


def environment_update(*, task: Task, changes: dict[str, Any]) -> list[str]:
    """Write the author-editable environment fields; returns the names that changed.

    Caller holds the task row lock, bumped the version and makes the revision.
    """
    allowed = EDITABLE_ENV_FIELDS[task.domain]
    unknown = set(changes) - set(allowed)
    if unknown:
        raise DomainError(f"environment fields {plain_list(sorted(unknown))} cannot be edited here")
    env = task.environment
    changed = [name for name, value in changes.items() if getattr(env, name) != value]
    if isinstance(changes.get("business_info"), list) and not all(
        isinstance(s, str) for s in changes["business_info"]
    ):
        raise DomainError("business info must be a list of sentences")
    if isinstance(changes.get("descriptions"), dict) and set(changes["descriptions"]) != set(
        env.descriptions
    ):
        raise DomainError("description CSVs can be edited, not added or removed, here")
    if "environment_spec" in changes:
        changes = {**changes, "environment_spec": spec_clean(changes["environment_spec"])}
        changed = [name for name, value in changes.items() if getattr(env, name) != value]
    for name in changed:
        setattr(env, name, changes[name])
    if changed:
        env.save(update_fields=changed)
    return changed


# Each domain's section names, and the values a task's domain may take: read for every
# record of an import.
_SECTION_KEYS = {domain: frozenset(key for key, _ in sections_for(domain)) for domain in Domain}
_DOMAINS = frozenset(Domain.values)


def _check_spec(domain: str, spec: dict[str, Any], field: str) -> dict[str, str]:
    if not isinstance(spec, dict):
        raise DomainError(f"{field} must be an object of section name to text.")
    allowed = _SECTION_KEYS[domain]
    if spec.keys() == allowed and all(isinstance(value, str) for value in spec.values()):
        return dict(spec)  # every section given, as text: nothing to fill in or refuse
    unknown = set(spec) - allowed
    if unknown:
        raise DomainError(
            f"{field} has unknown sections {plain_list(sorted(unknown))}; "
            f"a {domain} task has {plain_list(sorted(allowed))}."
        )
    bad = [key for key, value in spec.items() if not isinstance(value, str)]
    if bad:
        raise DomainError(f"{field} sections {plain_list(bad)} must be text.")
    return {key: spec.get(key, "") for key in allowed}


def _task_values(
    *,
    project: Project,
    domain: str,
    source: str,
    source_id: str,
    title: str,
    original_spec: dict[str, str],
    blocked_spec: dict[str, str] | None = None,
    source_metadata: dict[str, Any] | None = None,
    import_notes: str = "",
    author=None,
    blocker_count: int = 0,
) -> dict[str, Any]:
    """The task row ``task_create`` saves, checked, as attribute name to value (no query)."""
    if domain not in _DOMAINS:
        raise DomainError(f"Unknown domain {domain!r}; expected one of {Domain.values}.")
    original = _check_spec(domain, original_spec, "original_spec")
    blocked = _check_spec(
        domain, blocked_spec if blocked_spec is not None else original_spec, "blocked_spec"
    )
    return {
        "project_id": project.pk,
        "domain": domain,
        "source": source,
        "source_id": source_id,
        "title": title[:300] or source_id,
        "original_spec": original,
        "blocked_spec": blocked,
        "source_metadata": source_metadata or {},
        "import_notes": import_notes,
        "author_id": author.pk if getattr(author, "is_authenticated", False) else None,
        "blocker_count": blocker_count,
    }


@transaction.atomic
def task_create(
    *,
    project: Project,
    domain: str,
    source: str,
    source_id: str,
    title: str,
    original_spec: dict[str, str],
    blocked_spec: dict[str, str] | None = None,
    environment: dict[str, Any],
    source_metadata: dict[str, Any] | None = None,
    import_notes: str = "",
    author=None,
    blockers: list[dict[str, Any]] = (),
    reason: str = "created",
) -> Task:
    """Make a task with its environment and (optionally) its blockers, and revision 1."""
    task = Task(
        **_task_values(
            project=project,
            domain=domain,
            source=source,
            source_id=source_id,
            title=title,
            original_spec=original_spec,
            blocked_spec=blocked_spec,
            source_metadata=source_metadata,
            import_notes=import_notes,
            author=author,
            blocker_count=len(blockers),
        )
    )
    task.project = project
    if task.author_id:
        task.author = author
    task.save()
    env_model = SqlEnvironment if domain == Domain.SQL else SweEnvironment
    env_model.objects.create(task=task, **environment)
    for position, blocker in enumerate(blockers):
        Blocker.objects.insert(task=task, position=position, **blocker)
    # Revision 1 tells the task's making (its reason, author and time; the timeline words it
    # from the task's source): an event beside it only restated it, a row a task.
    revision_create(task=task, actor=author, reason=reason)
    return task


def task_require_editable(task: Task) -> None:
    """Authors edit drafts and tasks sent back for changes; review judges a frozen task."""

    if task.status not in EDITABLE:
        raise DomainError(
            f"The task is {task.get_status_display().lower()}; it can be edited only as a "
            "draft or when changes were requested."
        )


def _edited_reason(fields: list[str]) -> str:
    """A revision's reason as the timeline shows it: "edited golden output and descriptions"."""
    words = [
        field.replace("_", " ").replace("blocked spec", "blocked specification") for field in fields
    ]
    return "edited " + (plain_list(words, quote=False) or "nothing")


def task_lock(task: Task) -> Task:
    """Lock the task's row until the caller's transaction ends, and refresh from it what an
    edit checks (its version and status): a service that reads before it writes starts here."""
    row = Task.objects.select_for_update().filter(pk=task.pk).values("version", "status").first()
    if row:
        task.version, task.status = row["version"], row["status"]
    return task


def task_lock_for_editor(*, actor, task: Task) -> Task:
    """The first step of every edit of a task's content, taken by the service itself so that
    a caller that forgot the view's check (a bulk action, a command, an MCP tool) writes
    nothing: ``access_task(..., for_update=True, edit=True)`` — a task ``actor`` cannot see is
    absent (404), one they see but may not change an ``AccessDenied`` (403) — then the row is
    locked and its version and status refreshed into ``task``. Caller is inside a transaction.

    There is no system path: every edit has a user who may make it (an import's or the demo's
    author included), and an edit without one (``actor=None``) is refused."""
    if actor is None:
        raise AccessDenied("An edit of a task needs the user who makes it.")
    locked = access_task(actor, task.pk, for_update=True, edit=True)
    task.version, task.status = locked.version, locked.status
    return task


def task_bump_version(*, task: Task, expected_version: int) -> None:
    """Claim the next version with ``UPDATE … WHERE version = expected``; refuse stale edits.

    The conditional update is the lock: of two saves that read the same version, exactly
    one matches. Caller is inside a transaction and makes the revision afterwards.
    """
    updated = Task.objects.filter(pk=task.pk, version=expected_version).update(
        version=F("version") + 1, updated_at=timezone.now()
    )
    if not updated:
        current = Task.objects.filter(pk=task.pk).values_list("version", flat=True).first()
        raise StaleVersion(expected=expected_version, current=current or 0)
    task.version = expected_version + 1


TAG_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
MAX_TAGS = 20


def tag_names_clean(names) -> list[str]:
    """Lower-case names of letters, digits, ``.``, ``_``, ``-`` (at most 40 characters)."""
    clean = []
    for raw in names:
        name = str(raw).strip().lower()
        if not name:
            continue
        if not TAG_NAME.match(name):
            raise DomainError(
                f"Tag {raw!r}: use up to 40 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit."
            )
        if name not in clean:
            clean.append(name)
    if len(clean) > MAX_TAGS:
        raise DomainError(f"A task has at most {MAX_TAGS} tags.")
    return clean


@transaction.atomic
def task_tags_set(*, task: Task, actor, names) -> list[str]:
    """Replace the task's tags (created in its project as needed); an event records it."""

    require_task_editor(actor, task)
    clean = tag_names_clean(names)
    before = sorted(task.tags.values_list("name", flat=True))
    tags = [Tag.objects.get_or_create(project_id=task.project_id, name=name)[0] for name in clean]
    task.tags.set(tags)
    if sorted(clean) != before:
        task_event(task=task, actor=actor, kind="tags_set", before=before, after=sorted(clean))
    return sorted(clean)


def _tag_names_of(tasks: list[Task]) -> dict[int, list[str]]:
    names: dict[int, list[str]] = {task.pk: [] for task in tasks}
    rows = Task.tags.through.objects.filter(task_id__in=list(names)).values_list(
        "task_id", "tag__name"
    )
    for task_id, name in rows:
        names[task_id].append(name)
    return {task_id: sorted(found) for task_id, found in names.items()}


def _tag_name(name: str) -> str:
    clean = tag_names_clean([name])
    if not clean:
        raise DomainError("Name the tag.")
    return clean[0]


@transaction.atomic
def task_tag_add_many(*, tasks: list[Task], actor, name: str) -> tuple[list[Task], list]:
    """Put the tag ``name`` on each of ``tasks`` its actor may change (``task_tags_set``'s
    rule and event, for many tasks in a fixed number of queries). Returns the tasks tagged
    and the others, each with why: not theirs to change, tagged already, or full."""
    name = _tag_name(name)
    allowed, skipped = editable_tasks(actor, tasks)
    before = _tag_names_of(allowed)
    tagged = []
    for task in allowed:
        if name in before[task.pk]:
            skipped.append((task, f"already tagged “{name}”"))
        elif len(before[task.pk]) >= MAX_TAGS:
            skipped.append((task, f"a task has at most {MAX_TAGS} tags"))
        else:
            tagged.append(task)
    tags = {
        project_id: Tag.objects.get_or_create(project_id=project_id, name=name)[0]
        for project_id in {task.project_id for task in tagged}
    }
    Task.tags.through.objects.bulk_create(
        [Task.tags.through(task_id=t.pk, tag_id=tags[t.project_id].pk) for t in tagged],
        ignore_conflicts=True,
    )
    task_events(
        actor=actor,
        kind="tags_set",
        items=[
            (t, {"before": before[t.pk], "after": sorted([*before[t.pk], name])}) for t in tagged
        ],
    )
    return tagged, skipped


@transaction.atomic
def task_tag_remove_many(*, tasks: list[Task], actor, name: str) -> tuple[list[Task], list]:
    """Take the tag ``name`` off each of ``tasks`` its actor may change; as
    ``task_tag_add_many``, the tasks changed and the others with why."""
    name = _tag_name(name)
    allowed, skipped = editable_tasks(actor, tasks)
    before = _tag_names_of(allowed)
    untagged = []
    for task in allowed:
        if name in before[task.pk]:
            untagged.append(task)
        else:
            skipped.append((task, f"not tagged “{name}”"))
    Task.tags.through.objects.filter(task_id__in=[t.pk for t in untagged], tag__name=name).delete()
    task_events(
        actor=actor,
        kind="tags_set",
        items=[
            (t, {"before": before[t.pk], "after": [n for n in before[t.pk] if n != name]})
            for t in untagged
        ],
    )
    return untagged, skipped
