"""Core's own bulk task actions: put a tag on the selected tasks, or take it off.

A tag is how a set of tasks is kept: the task list and the API filter by it, an export
selects by it, and the Evaluation page's agent runs take one. There is no saved-selection
model besides tags. Registered in ``CoreConfig.ready``.
"""

from hilbench_annotate.bulk_actions import BulkField, BulkOutcome, register_bulk_action
from hilbench_annotate.errors import DomainError
from hilbench_annotate.services import task_tag_add_many, task_tag_remove_many
from hilbench_annotate.services.tasks import tag_names_clean
from hilbench_annotate.vocabulary import Role

TAG_FIELD = BulkField("tag", "Tag", placeholder="e.g. batch-3")


def _clean(params: dict[str, str]) -> dict[str, str]:
    names = tag_names_clean([params.get("tag", "")])
    if not names:
        raise DomainError("Name the tag to add or remove.")
    return {"tag": names[0]}


def _add(*, user, tasks, params) -> BulkOutcome:
    tagged, skipped = task_tag_add_many(tasks=tasks, actor=user, name=params["tag"])
    return BulkOutcome(done=len(tagged), skipped=skipped)


def _remove(*, user, tasks, params) -> BulkOutcome:
    untagged, skipped = task_tag_remove_many(tasks=tasks, actor=user, name=params["tag"])
    return BulkOutcome(done=len(untagged), skipped=skipped)


def register() -> None:
    # Those who may change a task may tag it: its author, or a lead.
    for position, (name, label, apply, done_text) in enumerate(
        (
            ("add_tag", "Add tag", _add, "Tagged {tasks} with “{tag}”"),
            ("remove_tag", "Remove tag", _remove, "Removed “{tag}” from {tasks}"),
        ),
        start=1,
    ):
        register_bulk_action(
            name,
            label=label,
            apply=apply,
            roles=(Role.AUTHOR, Role.LEAD),
            done_text=done_text,
            fields=(TAG_FIELD,),
            clean=_clean,
            position=10 * position,
        )
