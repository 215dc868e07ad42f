"""Validation runs: start one (scheduled on commit), execute it idempotently (``jobs.py``)."""

import tempfile
from collections import defaultdict
from pathlib import Path

from django.db import IntegrityError, transaction
from django.utils import timezone

from hilbench_annotate.access import access_task, editable_tasks
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.jobs import (
    job_claim,
    job_finish,
    job_heartbeat,
    job_heartbeat_while,
    job_send,
)
from hilbench_annotate.models import Task
from hilbench_annotate.selectors import current_revisions
from hilbench_annotate.services import event_record, task_events
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.toolkit.wording import shorten

from .models import ValidationResult, ValidationRun
from .registry import GROUPS, groups_for, run_group
from .results import ERROR, FAILED

NO_REVISION = "The task has no revision to validate."


def _run_create(*, task: Task, actor, checks: list[str] | None) -> ValidationRun:
    runs, skipped = _runs_create(tasks=[task], actor=actor, checks=checks)
    if skipped:
        raise DomainError(skipped[0][1])
    return runs[0]


def _runs_create(
    *, tasks: list[Task], actor, checks: list[str] | None
) -> tuple[list[ValidationRun], list[tuple[Task, str]]]:
    """A queued run of ``checks`` (by default the task's structural groups) on each task's
    current revision, and its event, in a fixed number of queries for any number of tasks.
    A task without a revision is skipped, with why; an unknown check refuses them all."""
    revisions = current_revisions(task_ids=[task.pk for task in tasks])
    runs, skipped = [], []
    for task in tasks:
        allowed = groups_for(task.domain, structural_only=False)
        chosen = list(checks or groups_for(task.domain))
        unknown = [c for c in chosen if c not in allowed]
        if unknown:
            raise DomainError(
                f"Unknown checks for a {task.domain} task: {unknown}; known: {allowed}"
            )
        if task.pk not in revisions:
            skipped.append((task, NO_REVISION))
            continue
        runs.append(
            ValidationRun(
                task=task,
                revision_id=revisions[task.pk][0],
                checks=chosen,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
        )
    ValidationRun.objects.bulk_create(runs)
    task_events(
        actor=actor,
        kind="validation_queued",
        items=[
            (
                run.task,
                {"run": run.pk, "revision": revisions[run.task_id][1], "checks": run.checks},
            )
            for run in runs
        ],
    )
    return runs, skipped


def _require_actor(actor) -> None:
    """No system path: a run is started for a user, whose right to start it is checked."""
    if actor is None:
        raise AccessDenied("A validation run needs the user who starts it.")


@transaction.atomic
def validation_run_start(*, task: Task, actor, checks: list[str] | None = None) -> ValidationRun:
    """Queue a run on the task's current revision; the job is sent once the transaction commits.

    Whoever may change the task starts it (the task page's button): a task ``actor`` cannot
    see is absent (404), one they see but may not change an ``AccessDenied`` (403)."""
    _require_actor(actor)
    access_task(actor, task.pk, edit=True)
    run = _run_create(task=task, actor=actor, checks=checks)
    job_send(run)
    return run


@transaction.atomic
def validation_runs_start(
    *, tasks: list[Task], actor, checks: list[str] | None = None
) -> tuple[list[ValidationRun], list[tuple[Task, str]]]:
    """``validation_run_start`` for many tasks: one run (one job) each. Skipped, each with
    why: the tasks ``actor`` may not change (as ``validation_run_start`` refuses them), then
    those without a revision."""
    _require_actor(actor)
    allowed, refused = editable_tasks(actor, tasks)
    runs, skipped = _runs_create(tasks=allowed, actor=actor, checks=checks)
    for run in runs:
        job_send(run)
    return runs, refused + skipped


def validation_run_inline(*, task: Task, actor, checks: list[str]) -> ValidationRun:
    """Run ``checks`` here and now and record the run like any other (no worker): for checks
    quick enough to wait for, such as the judge's recall on a task's held-out questions.

    Whoever reads the task may (the judge page's measurement); a task ``actor`` cannot see
    is absent (404)."""
    _require_actor(actor)
    access_task(actor, task.pk)
    run = _run_create(task=task, actor=actor, checks=checks)
    validation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def validation_run_execute(*, run_id: int) -> None:
    """Run every group of the run that has no results yet, then finish the run.

    Idempotent: results are unique per (run, check), groups already done are skipped, and a
    redelivered job for a run that is running normally or finished does nothing.
    """
    if not job_claim(ValidationRun, run_id):
        return
    run = ValidationRun.objects.select_related("task__project", "revision").get(pk=run_id)
    task = Task.objects.select_related(
        "project", "sql_environment__database", "swe_environment__repository"
    ).get(pk=run.task_id)
    snapshot = run.revision.snapshot
    done_groups = set(run.results.values_list("group", flat=True))
    for group in run.checks:
        if group in done_groups or group not in GROUPS:
            continue
        # A group may block for minutes (a SWE task's first run builds its environment):
        # signs of life meanwhile, so the reaper does not hand the run to a second worker.
        with (
            job_heartbeat_while(ValidationRun, run.pk),
            tempfile.TemporaryDirectory(prefix="hilbench-validate-") as tmp,
        ):
            results = run_group(group, task, snapshot, Path(tmp))
        with transaction.atomic():
            for result in results:
                try:
                    with transaction.atomic():
                        ValidationResult.objects.create(
                            run=run,
                            group=group,
                            check_name=result.name,
                            outcome=result.outcome,
                            message=result.message[:5000],
                            details=_jsonable(result.details),
                        )
                except IntegrityError:
                    pass  # another delivery stored it first
            job_heartbeat(
                ValidationRun,
                run.pk,
                log=_append(
                    run.pk, f"{group}: " + ", ".join(f"{r.name}={r.outcome}" for r in results)
                ),
            )
    validation_run_finish(run_id=run.pk)


def _append(run_id: int, line: str) -> str:
    log = ValidationRun.objects.filter(pk=run_id).values_list("log", flat=True).first() or ""
    return (log + f"{timezone.now():%H:%M:%S} {line}\n")[-20000:]


def _jsonable(value):
    import json

    return json_loads(json.dumps(value, default=str))


def validation_run_finish(*, run_id: int) -> ValidationRun:
    outcomes = set(ValidationResult.objects.filter(run_id=run_id).values_list("outcome", flat=True))
    status = (
        ValidationRun.Status.ERROR
        if ERROR in outcomes
        else ValidationRun.Status.FAILED
        if FAILED in outcomes
        else ValidationRun.Status.PASSED
    )
    job_finish(ValidationRun, run_id, status=status)
    run = ValidationRun.objects.get(pk=run_id)
    event_record(
        project_id=run.task.project_id,
        task_id=run.task_id,
        actor=None,
        kind="validation_finished",
        run=run.pk,
        status=run.status,
    )
    return run


def latest_run(task: Task, *, structural: bool = False) -> ValidationRun | None:
    """The task's latest validation run; ``structural``: the latest that ran a structural
    group (a judge-recall measurement is a run too, and must not hide them)."""
    runs = task.validation_runs.select_related("revision").prefetch_related("results")
    if not structural:
        return runs.first()
    wanted = set(groups_for(task.domain))
    return next((run for run in runs[:50] if wanted & set(run.checks or [])), None)


def _failure_line(group: str, check: str, message: str) -> str:
    """One failed check in a gate's verdict: the check's name unless it is the group's own
    (the gate already says the group), its message cut at a word."""
    text = shorten(message, 240)
    return text if check == group else f"{check}: {text}"


def group_verdicts(tasks: list[Task], groups: list[str]) -> dict[int, dict[str, tuple[bool, str]]]:
    """For each task and check group: green when the latest finished run on the task's
    current revision that included the group passed it. Three queries, whatever the number
    of tasks: the current revisions, the runs on them, their results that did not pass."""
    current = {
        pk: rev for pk, (rev, _number) in current_revisions(task_ids=(t.pk for t in tasks)).items()
    }
    runs: dict[int, list[tuple[int, list]]] = defaultdict(list)
    for run_id, task_id, checks in (
        ValidationRun.objects.filter(
            revision_id__in=current.values(), status__in=ValidationRun.FINISHED
        )
        .order_by("-created_at", "-id")
        .values_list("pk", "task_id", "checks")
    ):
        runs[task_id].append((run_id, checks))
    chosen = {
        (task.pk, group): next((run for run, checks in runs[task.pk] if group in checks), None)
        for task in tasks
        for group in groups
    }
    bad: dict[tuple[int, str], list[tuple[str, str]]] = defaultdict(list)
    for run_id, group, name, message in (
        ValidationResult.objects.filter(run_id__in={r for r in chosen.values() if r})
        .exclude(outcome__in=["passed", "skipped"])
        .values_list("run_id", "group", "check_name", "message")
    ):
        bad[(run_id, group)].append((name, message))
    verdicts: dict[int, dict[str, tuple[bool, str]]] = {}
    for task in tasks:
        verdicts[task.pk] = {}
        for group in groups:
            run = chosen[(task.pk, group)]
            if run is None:
                verdict = (False, f"no finished validation run of {group} on the current revision")
            elif bad[(run, group)]:
                failed = bad[(run, group)][:3]
                verdict = (False, "; ".join(_failure_line(group, n, m) for n, m in failed))
            else:
                verdict = (True, f"passed in run {run}")
            verdicts[task.pk][group] = verdict
    return verdicts


def gate_many_for(group: str):
    """A review gate (``register_gate``'s ``check_many``): green for each task when the
    latest finished run on its current revision passed ``group``."""

    def check_many(tasks: list[Task]) -> dict[int, tuple[bool, str]]:
        return {pk: groups[group] for pk, groups in group_verdicts(tasks, [group]).items()}

    return check_many
