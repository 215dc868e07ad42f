"""Review's bulk task action on the task list: assign the selected tasks' current layers to
one person. Registered in ``ReviewConfig.ready``."""

from django.contrib.auth import get_user_model

from hilbench_annotate import workflow
from hilbench_annotate.bulk_actions import BulkField, BulkOutcome, register_bulk_action
from hilbench_annotate.errors import DomainError, Refused
from hilbench_annotate.models import Project
from hilbench_annotate.vocabulary import READER_ROLES, Role

from .services import review_assign
from .services.assignments import NOT_IN_REVIEW


def _people(*, user) -> list[str]:
    """Whom ``user`` may assign: the members of the projects they lead, in one query."""
    led = Project.objects.with_role(user, Role.LEAD).values("pk")
    members = get_user_model().objects.filter(
        memberships__project__in=led, memberships__role__in=READER_ROLES
    )
    return list(members.order_by("username").values_list("username", flat=True).distinct())


def _clean(params: dict[str, str]) -> dict[str, str]:
    reviewer = params.get("reviewer", "").strip()
    if not reviewer:
        raise DomainError("Choose the person to assign.")
    return {"reviewer": reviewer}


def _assign(*, user, tasks, params) -> BulkOutcome:
    """``review_assign`` for each task in review (its lock, lead check, membership and
    independence rules, event and notifications); a task it refuses is skipped with why."""
    outcome = BulkOutcome()
    for task in tasks:
        if task.status != workflow.IN_REVIEW:
            # What review_assign says, without its queries: most of a big selection is here.
            outcome.skipped.append((task, NOT_IN_REVIEW))
            continue
        try:
            review_assign(actor=user, task_id=task.pk, reviewer=params["reviewer"])
        except Refused as refused:
            outcome.skipped.append((task, str(refused)))
        else:
            outcome.done += 1
    return outcome


def register() -> None:
    register_bulk_action(
        "assign",
        label="Assign to reviewer…",
        apply=_assign,
        roles=(Role.LEAD,),
        done_text="Assigned {tasks} to {reviewer} at their current layer",
        fields=(BulkField("reviewer", "Person", choices=_people),),
        clean=_clean,
        position=30,
    )
