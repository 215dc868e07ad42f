"""A project's review pipeline: its layers and policy, made from the defaults with the project
(``pipeline_ensure``, run by ``review.apps`` when a project is created), and the lead's edits
of both. Reading them is ``review.selectors`` (``pipeline_layers``, ``policy_for``)."""

from django.db import transaction

from hilbench_annotate import workflow
from hilbench_annotate.access import access_project, require_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.gates import gate_names
from hilbench_annotate.models import Project, Task
from hilbench_annotate.services import event_record
from hilbench_annotate.toolkit.wording import plain_list
from hilbench_annotate.vocabulary import Role
from review.models import DEFAULT_REJECT_REASONS, ReviewLayer, ReviewPolicy
from review.pipeline import DEFAULT_LAYERS
from review.selectors import pipeline_layers, policy_for


def pipeline_ensure(project: Project) -> list[ReviewLayer]:
    """The project's layers, made from the default pipeline (with the default policy) when it
    has none: when the project is created, and before a task first enters review."""
    layers = list(ReviewLayer.objects.filter(project=project).order_by("position"))
    if layers:
        return layers
    with transaction.atomic():
        ReviewPolicy.objects.get_or_create(
            project=project, defaults={"reject_reasons": DEFAULT_REJECT_REASONS}
        )
        for position, layer in enumerate(DEFAULT_LAYERS, start=1):
            ReviewLayer.objects.get_or_create(project=project, position=position, defaults=layer)
    return list(ReviewLayer.objects.filter(project=project).order_by("position"))


@transaction.atomic
def pipeline_update(
    *, actor, project_id: int, layers: list[dict], lock_minutes: int, reject_reasons: list[str]
) -> list[ReviewLayer]:
    """Replace the project's pipeline (leads only; a project ``actor`` cannot see is a 404),
    on the project's row lock so that concurrent replacements follow one another. Tasks in
    review keep their position."""
    project = access_project(actor, project_id)
    require_role(actor, project, Role.LEAD, action="edit the pipeline")
    Project.objects.select_for_update().filter(pk=project.pk).first()
    if not 1 <= len(layers) <= 10:
        raise DomainError("A pipeline has between 1 and 10 layers.")
    problems = []
    for i, layer in enumerate(layers, start=1):
        if not str(layer.get("name", "")).strip():
            problems.append(f"layer {i} needs a name")
        if layer.get("role") not in {"author", "reviewer", "auditor", "lead"}:
            problems.append(f"layer {i}: role must be author, reviewer, auditor or lead")
    # Tasks sent back for changes keep their layer: they return to it when resubmitted.
    waiting_beyond = Task.objects.filter(
        project=project,
        status__in=[workflow.IN_REVIEW, workflow.CHANGES_REQUESTED],
        review_layer__gt=len(layers),
    ).count()
    if waiting_beyond:
        problems.append(
            f"{waiting_beyond} task(s) wait at a layer beyond the new last one "
            "(in review there, or returning to it after changes)"
        )
    unknown = sorted(
        {g.strip() for layer in layers for g in layer.get("gates", []) if g.strip()}
        - set(gate_names())
    )
    if unknown:
        problems.append(
            f"unknown automated checks {plain_list(unknown)}; "
            f"known: {plain_list(sorted(gate_names()))}"
        )
    if not [r for r in reject_reasons if r.strip()]:
        problems.append("give at least one reject reason")
    if problems:
        raise DomainError("; ".join(problems))
    ReviewLayer.objects.filter(project=project).delete()
    for position, layer in enumerate(layers, start=1):
        ReviewLayer.objects.create(
            project=project,
            position=position,
            name=layer["name"].strip(),
            role=layer["role"],
            self_check=bool(layer.get("self_check")),
            checklist=[c.strip() for c in layer.get("checklist", []) if c.strip()],
            gates=[g.strip() for g in layer.get("gates", []) if g.strip()],
        )
    policy = policy_for(project=project)
    policy.lock_minutes = max(1, int(lock_minutes))
    policy.reject_reasons = [r.strip() for r in reject_reasons if r.strip()]
    policy.save()
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="pipeline_changed",
        layers=[layer["name"] for layer in layers],
    )
    return list(ReviewLayer.objects.filter(project=project).order_by("position"))


def pipeline_layer(task: Task, position: int) -> ReviewLayer:
    layers = pipeline_layers(project=task.project)
    try:
        return layers[position - 1]
    except IndexError:
        raise DomainError(f"The pipeline has no layer {position}.") from None
