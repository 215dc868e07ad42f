import re
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Blocker, Task, TriggerQuestion
from hilbench_annotate.text_limits import text_too_long
from hilbench_annotate.toolkit.wording import plain_list
from hilbench_annotate.vocabulary import (
    QUALITY_CRITERIA_KEYS,
    SQL_SUBTYPES,
    SUBTYPE_TYPE,
    Domain,
    Surface,
    blocker_types_for,
)

from .tasks import (
    revision_create,
    task_bump_version,
    task_event,
    task_lock_for_editor,
    task_require_editable,
)

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,119}$")


def blocker_check(
    *,
    domain: str,
    key: str,
    type: str,  # noqa: A002 - the registry's own field name
    subtype: str = "",
    description: str,
    resolution: str,
    surfaces_in: str = "",
    criteria: dict[str, Any] | None = None,
    trigger_questions: list[str] | None = None,
) -> list[str]:
    """Every reason these blocker fields cannot be stored (empty when they can)."""
    problems = []
    if not isinstance(key, str) or not _KEY.match(key):
        problems.append(
            f"id {key!r} must be a slug (letters, digits, '_' or '-', at most 120 characters)"
        )
    allowed_types = blocker_types_for(domain)
    # Imported registries are untrusted JSON: a list here must be refused, not hashed.
    if not isinstance(type, str) or type not in allowed_types:
        problems.append(
            f"type {type!r} is not a {domain} blocker type ({plain_list(allowed_types, last='or')})"
        )
        type = ""  # noqa: A001 - checked; no subtype check against a bad type
    subtype = subtype or ""
    if not isinstance(subtype, str):
        problems.append(f"subtype {subtype!r} must be text")
        subtype = ""
    if domain == Domain.SQL and type in SQL_SUBTYPES:
        if subtype not in SQL_SUBTYPES[type]:
            # Name the type it belongs to: the fix is often the type, not the subtype.
            owner = SUBTYPE_TYPE.get(subtype)
            problems.append(
                f"subtype {subtype!r} is not a subtype of {type!r} "
                f"({plain_list(SQL_SUBTYPES[type], last='or')})"
                + (f": {subtype!r} belongs to type {owner!r}" if owner else "")
            )
    elif subtype and domain != Domain.SQL:  # an SQL type not known is said above
        problems.append(f"subtype {subtype!r} given, but {domain} blockers have no subtype")
    for name, value in (("description", description), ("resolution", resolution)):
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{name} must be non-empty text")
    for key, value in (("blocker_description", description), ("resolution", resolution)):
        if too_long := text_too_long(key, value):
            problems.append(too_long)
    if surfaces_in and (not isinstance(surfaces_in, str) or surfaces_in not in Surface.values):
        surfaces = plain_list(Surface.values, last="or")
        problems.append(f"surfaces_in {surfaces_in!r} is not one of {surfaces}")
    if criteria:
        if not isinstance(criteria, dict):
            problems.append("criteria must be an object")
        else:
            unknown = set(criteria) - set(QUALITY_CRITERIA_KEYS)
            if unknown:
                problems.append(f"criteria has unknown keys {plain_list(sorted(unknown))}")
    questions_ok = isinstance(trigger_questions, list) and all(
        isinstance(q, str) and q.strip() for q in trigger_questions
    )
    if trigger_questions is not None and not questions_ok:
        problems.append("trigger questions must be a list of non-empty texts")
    problems += _questions_too_long(trigger_questions)
    return problems


def _questions_too_long(questions) -> list[str]:
    if not isinstance(questions, list | tuple):
        return []
    return [
        too_long
        for j, text in enumerate(questions, start=1)
        if (too_long := text_too_long("trigger_question", text, name=f"trigger question {j}"))
    ]


def _next_position(rows) -> int:
    highest = rows.aggregate(m=Max("position"))["m"]
    return 0 if highest is None else highest + 1


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise DomainError("; ".join(problems))


def _after_change(*, task: Task, actor, reason: str, **data) -> None:
    revision_create(task=task, actor=actor, reason=reason)
    task_event(
        task=task,
        actor=actor,
        kind="registry_edited",
        change=reason,
        version=task.version,
        **data,
    )


def _sync_blocker_count(task: Task) -> None:
    count = Blocker.objects.filter(task=task).count()
    Task.objects.filter(pk=task.pk).update(blocker_count=count)
    task.blocker_count = count


@transaction.atomic
def blocker_create(
    *,
    task: Task,
    actor,
    expected_version: int,
    key: str,
    type: str,  # noqa: A002
    description: str,
    resolution: str,
    subtype: str = "",
    surfaces_in: str = "",
    criteria: dict[str, Any] | None = None,
    trigger_questions: list[str] = (),
) -> Blocker:
    """Add a blocker at the end of the registry. Each service here first refuses an
    ``actor`` who may not edit the task (``task_lock_for_editor``: 404 hidden, 403 not
    theirs), then checks the input, the task's state and ``expected_version``."""
    task_lock_for_editor(actor=actor, task=task)
    fields = dict(
        key=key,
        type=type,
        subtype=subtype or "",
        description=description,
        resolution=resolution,
        surfaces_in=surfaces_in,
        criteria=criteria or {},
    )
    _raise_if(
        blocker_check(domain=task.domain, trigger_questions=list(trigger_questions), **fields)
    )
    task_require_editable(task)
    task_bump_version(task=task, expected_version=expected_version)
    if Blocker.objects.filter(task=task, key=key).exists():
        raise DomainError(f"id {key!r} is already used by another blocker of this task")
    position = _next_position(Blocker.objects.filter(task=task))
    try:
        with transaction.atomic():
            blocker = Blocker.objects.insert(
                task=task, position=position, trigger_questions=list(trigger_questions), **fields
            )
    except IntegrityError as exc:
        raise DomainError(f"blocker {key!r} could not be stored: {exc}") from exc
    _sync_blocker_count(task)
    _after_change(task=task, actor=actor, reason=f"added blocker {key}", blocker=key)
    return blocker


@transaction.atomic
def blocker_update(*, blocker: Blocker, actor, expected_version: int, **changes) -> Blocker:
    task = task_lock_for_editor(actor=actor, task=blocker.task)
    allowed = {"key", "type", "subtype", "description", "resolution", "surfaces_in", "criteria"}
    unknown = set(changes) - allowed
    if unknown:
        raise DomainError(f"cannot change {plain_list(sorted(unknown))} of a blocker")
    merged = {
        name: changes.get(name, getattr(blocker, name))
        for name in ("key", "type", "subtype", "description", "resolution", "surfaces_in")
    }
    merged["criteria"] = changes.get("criteria", blocker.criteria)
    _raise_if(blocker_check(domain=task.domain, **merged))
    task_require_editable(task)
    task_bump_version(task=task, expected_version=expected_version)
    if (
        merged["key"] != blocker.key
        and Blocker.objects.filter(task=task, key=merged["key"]).exists()
    ):
        raise DomainError(f"id {merged['key']!r} is already used by another blocker of this task")
    for name, value in merged.items():
        setattr(blocker, name, value or ("" if name != "criteria" else {}))
    blocker.save()
    _after_change(
        task=task, actor=actor, reason=f"edited blocker {blocker.key}", blocker=blocker.key
    )
    return blocker


@transaction.atomic
def blocker_delete(*, blocker: Blocker, actor, expected_version: int) -> None:
    task = task_lock_for_editor(actor=actor, task=blocker.task)
    task_require_editable(task)
    task_bump_version(task=task, expected_version=expected_version)
    key = blocker.key
    blocker.delete()
    Blocker.objects.filter(task=task, position__gt=blocker.position).update(
        position=F("position") - 1
    )
    _sync_blocker_count(task)
    _after_change(task=task, actor=actor, reason=f"deleted blocker {key}", blocker=key)


def _check_question(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise DomainError("A trigger question must be non-empty text.")
    _raise_if(_questions_too_long([text]))
    return text


@transaction.atomic
def trigger_question_create(
    *, blocker: Blocker, actor, expected_version: int, text: str
) -> TriggerQuestion:
    task = task_lock_for_editor(actor=actor, task=blocker.task)
    _check_question(text)
    task_require_editable(task)
    task_bump_version(task=task, expected_version=expected_version)
    position = _next_position(blocker.trigger_questions.all())
    question = TriggerQuestion.objects.create(blocker=blocker, position=position, text=text)
    _after_change(
        task=task,
        actor=actor,
        reason=f"added trigger question to {blocker.key}",
        blocker=blocker.key,
    )
    return question


@transaction.atomic
def trigger_question_update(
    *, question: TriggerQuestion, actor, expected_version: int, text: str
) -> TriggerQuestion:
    task = task_lock_for_editor(actor=actor, task=question.blocker.task)
    _check_question(text)
    task_require_editable(task)
    task_bump_version(task=task, expected_version=expected_version)
    question.text = text
    question.save(update_fields=["text"])
    _after_change(
        task=task,
        actor=actor,
        reason=f"edited trigger question of {question.blocker.key}",
        blocker=question.blocker.key,
    )
    return question


@transaction.atomic
def trigger_question_delete(*, question: TriggerQuestion, actor, expected_version: int) -> None:
    blocker = question.blocker
    task = task_lock_for_editor(actor=actor, task=blocker.task)
    task_require_editable(task)
    task_bump_version(task=task, expected_version=expected_version)
    question.delete()
    _after_change(
        task=task,
        actor=actor,
        reason=f"deleted trigger question of {blocker.key}",
        blocker=blocker.key,
    )


def registry_problems(*, domain: str, blockers: list[dict[str, Any]]) -> list[str]:
    """What stops a (possibly unfinished) registry from being stored.

    Drafts may leave text fields empty (lint blocks submission until they are filled),
    but ids must be usable and unique, and types and subtypes must be the release's.
    """
    problems = []
    keys: dict[str, int] = {}
    for i, blocker in enumerate(blockers, start=1):
        reasons = [
            r
            for r in blocker_check(
                domain=domain,
                key=blocker["id"],
                type=blocker["type"],
                subtype=blocker.get("subtype", ""),
                description=blocker.get("description") or "-",
                resolution=blocker.get("resolution") or "-",
                surfaces_in=blocker.get("surfaces_in", ""),
                criteria=blocker.get("criteria") or {},
            )
        ]
        reasons += _questions_too_long(blocker.get("trigger_questions"))
        problems.extend(f"Blocker {i}: {r}" for r in reasons)
        if blocker["id"] in keys:
            problems.append(
                f"Blocker {i}: id {blocker['id']!r} is also used by blocker {keys[blocker['id']]}"
            )
        keys.setdefault(blocker["id"], i)
    return problems


def registry_replace(*, task: Task, blockers: list[dict[str, Any]]) -> None:
    """Make the task's registry exactly ``blockers`` (in order).

    Rows named by ``pk`` are updated in place, others created, missing ones deleted; trigger
    questions are rewritten. Caller validated with ``registry_problems``, holds the task
    row lock and makes the revision.
    """
    existing = {b.pk: b for b in Blocker.objects.filter(task=task)}
    keep = {int(b["pk"]) for b in blockers if b.get("pk") and str(b["pk"]).isdigit()}
    # Delete first, and park kept rows on temporary keys, so renames and swaps of ids
    # never collide with the unique (task, key) constraint mid-way.
    Blocker.objects.filter(task=task).exclude(pk__in=keep).delete()
    for pk in keep & set(existing):
        Blocker.objects.filter(pk=pk).update(key=f"__moving_{pk}")
    for position, data in enumerate(blockers):
        fields = {
            "key": data["id"],
            "position": position,
            "type": data["type"],
            "subtype": data.get("subtype") or "",
            "description": data.get("description") or "",
            "resolution": data.get("resolution") or "",
            "surfaces_in": data.get("surfaces_in") or "",
            "criteria": data.get("criteria") or {},
        }
        pk = int(data["pk"]) if data.get("pk") and str(data["pk"]).isdigit() else None
        if pk in existing:
            Blocker.objects.filter(pk=pk).update(**fields, updated_at=timezone.now())
            blocker = existing[pk]
            blocker.trigger_questions.all().delete()
        else:
            blocker = Blocker.objects.create(task=task, **fields)
        TriggerQuestion.objects.bulk_create(
            TriggerQuestion(blocker_id=blocker.pk, position=i, text=text)
            for i, text in enumerate(data.get("trigger_questions") or [])
        )
    _sync_blocker_count(task)
