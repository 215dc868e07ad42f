"""What the task list can do to many tasks at once, by name: its *bulk task actions*.

The task list is core's, but assigning a reviewer is review's and starting checks the
validators', which core may not import. Each app registers its actions from its
``AppConfig.ready``: core its own (``tag_actions.py``: add a tag, remove a tag),
``review/bulk_actions.py`` (assign to a reviewer), ``validators/bulk_actions.py`` (run the
structural checks). The list offers a user the actions of a role they hold in some project;
``services.task_bulk_apply`` runs one over the ticked tasks, or over every task a filter
matches, a chunk at a time.

An action's ``apply(user=…, tasks=[…], params={…})`` gets one chunk of tasks the user may
read (never one they may not) and goes through the same services and access checks as the
single-task path, so it refuses per task what that path refuses; it returns a
``BulkOutcome``: how many tasks it changed, and each task it skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from django.core.exceptions import ImproperlyConfigured

from hilbench_annotate.access import ProjectRoles

# ``choices(user=…) -> [value, …]``: what a field offers the user, in a fixed number of queries.
FieldChoices = Callable[..., list[str]]
BulkApply = Callable[..., "BulkOutcome"]
BulkClean = Callable[[dict[str, str]], dict[str, str]]


@dataclass(frozen=True)
class BulkField:
    """An input an action needs besides the tasks (a tag's name, a reviewer)."""

    name: str
    label: str
    choices: FieldChoices | None = None  # None: typed text
    placeholder: str = ""


@dataclass
class BulkOutcome:
    """What an action did to one chunk of tasks."""

    done: int = 0
    skipped: list[tuple[object, str]] = field(default_factory=list)  # (task, why)


@dataclass(frozen=True)
class BulkAction:
    name: str
    label: str
    apply: BulkApply
    # Offered to a user with one of these roles in some project; a POST from anyone else is a 403.
    roles: tuple[str, ...]
    # What was done, e.g. "Tagged {tasks} with “{tag}”": ``tasks`` is the count in words
    # ("2 tasks"), the other names are the cleaned params.
    done_text: str
    fields: tuple[BulkField, ...] = ()
    # The params checked once, before any task (a ``DomainError`` names what is wrong).
    clean: BulkClean | None = None
    position: int = 0


_ACTIONS: dict[str, BulkAction] = {}
# A field's name in the list's form: the form also carries the list's filters (``tag``…).
PARAM_PREFIX = "param-"


def register_bulk_action(
    name: str,
    *,
    label: str,
    apply: BulkApply,
    roles: tuple[str, ...],
    done_text: str,
    fields: tuple[BulkField, ...] = (),
    clean: BulkClean | None = None,
    position: int = 0,
) -> None:
    """Register (or, on a second ``ready``, replace) the bulk task action ``name``.

    The list's one form holds the fields of every action, each once by its name (add and
    remove a tag share "tag"): a field named as another action's but unlike it is refused."""
    for new in fields:
        for other in _ACTIONS.values():
            if other.name == name:
                continue
            clash = [f for f in other.fields if f.name == new.name and f != new]
            if clash:
                raise ImproperlyConfigured(
                    f"The bulk action {name!r} has a field {new.name!r} unlike the one of "
                    f"{other.name!r}."
                )
    _ACTIONS[name] = BulkAction(
        name=name,
        label=label,
        apply=apply,
        roles=tuple(roles),
        done_text=done_text,
        fields=tuple(fields),
        clean=clean,
        position=position,
    )


def bulk_action(name: str) -> BulkAction | None:
    return _ACTIONS.get(name)


def bulk_actions_for(user) -> list[BulkAction]:
    """The actions offered to ``user``, in ``position`` order (their roles read once)."""
    roles = ProjectRoles(user)
    return [
        action
        for action in sorted(_ACTIONS.values(), key=lambda a: (a.position, a.name))
        if roles.has_anywhere(*action.roles)
    ]


def bulk_menu(user) -> dict[str, list[dict]]:
    """What the task list's action bar shows ``user``: the actions offered, and the fields
    they need — each once, with the actions that use it and the choices it offers."""
    actions = bulk_actions_for(user)
    fields: dict[str, dict] = {}
    for action in actions:
        for f in action.fields:
            if f.name not in fields:
                fields[f.name] = {
                    "input": PARAM_PREFIX + f.name,
                    "label": f.label,
                    "placeholder": f.placeholder,
                    "choices": f.choices(user=user) if f.choices else None,
                    "actions": [],
                }
            fields[f.name]["actions"].append(action.name)
    return {
        "actions": [{"name": a.name, "label": a.label} for a in actions],
        "fields": list(fields.values()),
    }


def bulk_params(name: str, data: Mapping[str, str]) -> dict[str, str]:
    """The action's own fields as posted by the list's form (nothing for an unknown name)."""
    action = _ACTIONS.get(name)
    if action is None:
        return {}
    return {f.name: str(data.get(PARAM_PREFIX + f.name, "")) for f in action.fields}
