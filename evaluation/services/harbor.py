"""Agent runs in Harbor, as a lead starts them: which tasks, modes, passes, agent, endpoint.

The worker's half — export the tasks, run Harbor, import each trial as it finishes — is
``exchange.services.harbor_runs`` (it exports bundles, which only ``exchange`` may do); it is
registered as the executor of ``EvaluationRun.Source.HARBOR`` runs (``RUN_EXECUTORS``).
"""

from __future__ import annotations

from django.db import transaction

from hilbench_annotate.access import require_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_cancel_queued, job_send
from hilbench_annotate.models import Project
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.vocabulary import Role

from ..agents import AGENTS
from ..models import EvaluationRun, ModelEndpoint
from .common import project_tasks, run_modes_clean

MAX_TRIALS = 5000


@transaction.atomic
def harbor_run_start(
    *,
    project: Project,
    actor,
    agent: str,
    task_ids: list[int],
    modes: list[str],
    passes: int,
    endpoint: ModelEndpoint | None = None,
    allow_internet: bool = False,
) -> EvaluationRun:
    """Queue a run of ``agent`` on the tasks in Harbor; the worker does the rest.
    ``allow_internet``: the lead lets the agent's container reach the internet (otherwise it
    has no network at all, whatever a task folder's ``task.toml`` asks)."""
    require_role(actor, project, Role.LEAD, action="do this")
    chosen = AGENTS.get(agent)
    if chosen is None:
        raise DomainError(f"Unknown agent {agent!r}; choose one of {', '.join(AGENTS)}.")
    if chosen.needs_model and endpoint is None:
        raise DomainError(f"{chosen.label} needs a model endpoint: register one first.")
    if endpoint is not None and endpoint.project_id != project.pk:
        raise DomainError("The endpoint belongs to another project.")
    if not task_ids:
        raise DomainError("Choose at least one task.")
    modes = run_modes_clean(modes, passes)
    tasks = project_tasks(project, task_ids, domain=None)
    total = len(tasks) * len(modes) * passes
    if total > MAX_TRIALS:
        raise DomainError(f"{total} trials is more than one run takes ({MAX_TRIALS}).")
    model = endpoint.name if chosen.needs_model else f"reference: {chosen.key}"
    run = EvaluationRun.objects.create(
        project=project,
        source=EvaluationRun.Source.HARBOR,
        endpoint=endpoint if chosen.needs_model else None,
        model_name=model,
        agent=chosen.key,
        reference=chosen.reference,
        modes=modes,
        passes=passes,
        task_ids=[t.pk for t in tasks],
        total=total,
        allow_internet=bool(allow_internet),
        created_by=actor,
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="harbor_run_queued",
        run=run.pk,
        internet=bool(allow_internet),
    )
    job_send(run)
    return run


def evaluation_run_cancel(*, run: EvaluationRun, actor) -> EvaluationRun:
    """Stop a Harbor run: its worker stops the trials (finished ones are kept) and ends it."""
    require_role(actor, run.project, Role.LEAD, action="do this")
    if run.source != EvaluationRun.Source.HARBOR:
        raise DomainError("Only an agent run in Harbor can be cancelled.")
    if run.is_finished:
        raise DomainError(f"Run {run.pk} has already finished.")
    EvaluationRun.objects.filter(pk=run.pk).update(cancel_requested=True)
    # Not taken by a worker yet: nothing to stop.
    job_cancel_queued(
        EvaluationRun, run.pk, f"Cancelled by {actor.get_username()} before it started."
    )
    event_record(
        project_id=run.project_id, task_id=None, actor=actor, kind="harbor_run_cancelled",
        run=run.pk,
    )  # fmt: skip
    run.refresh_from_db()
    return run
