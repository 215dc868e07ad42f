"""Built-in SQL runs: a model endpoint runs SQL tasks in each mode, a few passes each.

Jobs (``evaluation/tasks.py``) fetch by id and call ``*_execute``, which claims the run with
a conditional update so a redelivered job never runs twice. An imported run
(``results_import``) goes through the same job and ``evaluation_run_execute``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F

from hilbench_annotate.access import require_role
from hilbench_annotate.databases import edited_copy
from hilbench_annotate.errors import DomainError
from hilbench_annotate.instructions import task_instructions
from hilbench_annotate.jobs import (
    job_claim,
    job_fail,
    job_heartbeat,
    job_heartbeat_while,
    job_send,
)
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.toolkit.compare import read_golden_csv
from hilbench_annotate.toolkit.sqlconsole import run_select
from hilbench_annotate.vocabulary import Role
from judge.base import JudgeError
from judge.services import ask_human, ask_human_reject, ask_human_run_start

from ..models import EvaluationRun, Mode, ModelEndpoint, TaskPass, Trajectory
from ..runner import Endpoint, SqlTaskContext, run_sql_pass
from .common import current_revision, evaluation_run_finish, project_tasks, run_modes_clean
from .results_import import imported_run_store


def sql_task_context(task: Task, revision: Revision) -> SqlTaskContext:
    """What the runner needs of one SQL task: the edited database and the gold result."""
    env = getattr(task, "sql_environment", None)
    if env is None or env.database is None:
        raise DomainError(f"Task {task.pk} has no database to run against.")
    db_path = edited_copy(
        project_id=task.project_id, source=Path(env.database.path), edit_script=env.edit_script
    )
    if env.golden_output.strip():
        gold_columns, gold_rows = read_golden_csv(env.golden_output)
    elif env.gold_sql.strip():
        result = run_select(db_path, env.gold_sql, timeout_s=30.0, row_cap=10_000, exact=True)
        gold_columns, gold_rows = result.columns, result.rows
    else:
        raise DomainError(f"Task {task.pk} has neither golden_output.csv nor gold SQL.")
    return SqlTaskContext(
        db_path=db_path,
        instructions=task_instructions(revision.snapshot),
        descriptions=dict(env.descriptions or {}),
        business_info=[str(x) for x in env.business_info or []],
        gold_columns=list(gold_columns),
        gold_rows=[tuple(r) for r in gold_rows],
        query_timeout_s=float(settings.SQL_CONSOLE_TIMEOUT_S),
    )


@transaction.atomic
def evaluation_run_start(
    *,
    project: Project,
    actor,
    endpoint: ModelEndpoint,
    task_ids: list[int],
    modes: list[str],
    passes: int = 3,
) -> EvaluationRun:
    require_role(actor, project, Role.LEAD, action="do this")
    if endpoint.project_id != project.pk:
        raise DomainError("The endpoint belongs to another project.")
    if not task_ids:
        raise DomainError("Choose at least one task.")
    modes = run_modes_clean(modes, passes)
    tasks = project_tasks(project, task_ids, domain="sql")
    run = EvaluationRun.objects.create(
        project=project,
        source=EvaluationRun.Source.BUILTIN,
        endpoint=endpoint,
        model_name=endpoint.name,
        modes=modes,
        passes=passes,
        task_ids=[t.pk for t in tasks],
        total=len(tasks) * len(modes) * passes,
        created_by=actor,
    )
    event_record(
        project_id=project.pk, task_id=None, actor=actor, kind="evaluation_run_queued", run=run.pk
    )
    job_send(run)
    return run


def _claim(run_id: int) -> EvaluationRun | None:
    if not job_claim(EvaluationRun, run_id):
        return None  # finished, or another worker holds it
    return EvaluationRun.objects.select_related("endpoint", "project", "created_by").get(pk=run_id)


def _ask_callback(run: EvaluationRun, task: Task, mode: str, index: int):
    """The pass's ask_human tool: the judge's own service, logged under an AskHumanRun."""
    if mode != Mode.ASK_HUMAN:
        return None, None, None
    ask_run = ask_human_run_start(
        task=task, actor=run.created_by, label=f"{run.model_name} pass {index} (run {run.pk})"
    )

    def ask(question: str) -> str:
        try:
            return ask_human(run=ask_run, actor=run.created_by, question=question).response
        except JudgeError as error:  # the service logged the failed call
            return f"error: {error}"
        except DomainError as error:  # empty, too long…: logged here as a rejected call
            ask_human_reject(run=ask_run, question=question, reason=str(error))
            return f"error: {error}"

    def reject(raw: str, reason: str) -> None:
        ask_human_reject(run=ask_run, question=raw, reason=reason)

    return ask_run, ask, reject


def _run_one_pass(
    run: EvaluationRun, endpoint: Endpoint, task: Task, mode: str, index: int, *, thread: bool
):
    """One pass; in a pool thread (``thread``) its database connection is closed after."""
    try:
        if TaskPass.objects.filter(run=run, task=task, mode=mode, index=index).exists():
            return  # stored before a redelivery
        revision = current_revision(task)
        try:
            context = sql_task_context(task, revision)
        except DomainError as error:
            _store_pass(run, task, revision, mode, index, resolved=False, error=str(error))
            return
        ask_run, ask, reject = _ask_callback(run, task, mode, index)

        def heartbeat() -> None:
            job_heartbeat(EvaluationRun, run.pk)

        outcome = run_sql_pass(
            endpoint=endpoint,
            context=context,
            mode=mode,
            ask=ask,
            reject=reject,
            heartbeat=heartbeat,
        )
        _store_pass(
            run,
            task,
            revision,
            mode,
            index,
            resolved=outcome.resolved,
            error=outcome.error,
            final_sql=outcome.final_sql,
            detail=outcome.detail,
            tokens=outcome.tokens,
            ask_run=ask_run,
            steps=outcome.steps,
        )
    finally:
        if thread:
            connection.close()


def _store_pass(run, task, revision, mode, index, *, ask_run=None, steps=None, **fields) -> None:
    blockers = len(revision.snapshot.get("blockers", []))
    if TaskPass.objects.filter(run=run, task=task, mode=mode, index=index).exists():
        return  # a re-sent run: this pass was stored before the worker died
    with transaction.atomic():
        task_pass = TaskPass.objects.create(
            run=run,
            task=task,
            revision=revision,
            mode=mode,
            index=index,
            blocker_count=blockers,
            ask_human_run=ask_run,
            **fields,
        )
        if steps:
            Trajectory.objects.create(task_pass=task_pass, steps=steps, source="built-in runner")
        job_heartbeat(EvaluationRun, run.pk, done=F("done") + 1)


# Executors of runs whose work another app does: ``exchange`` registers the Harbor runs'
# (it exports bundles, which this app may not import) in its AppConfig.ready.
RUN_EXECUTORS: dict[str, Callable[[EvaluationRun], None]] = {}


def evaluation_run_execute(*, run_id: int) -> None:
    run = _claim(run_id)
    if run is None:
        return
    # A heartbeat the whole time the worker lives (an export before Harbor starts, a slow
    # model call), so a dead worker's run is taken over within EVALUATION_STALE_S — minutes,
    # not the half hour a run without one needed.
    with job_heartbeat_while(EvaluationRun, run.pk, every_s=settings.JOB_HEARTBEAT_S):
        _execute(run)


def _execute(run: EvaluationRun) -> None:
    if run.source == EvaluationRun.Source.IMPORTED:
        imported_run_store(run)
        return
    if run.source in RUN_EXECUTORS:
        RUN_EXECUTORS[run.source](run)
        return
    if run.endpoint is None:
        job_fail(EvaluationRun, run.pk, "The run's endpoint was deleted.")
        return
    endpoint = run.endpoint.client()
    tasks = list(Task.objects.filter(pk__in=run.task_ids).select_related("project"))
    units = [
        (task, mode, index)
        for task in tasks
        for mode in run.modes
        for index in range(1, run.passes + 1)
    ]
    if run.endpoint.concurrency <= 1:
        for unit in units:
            _run_one_pass(run, endpoint, *unit, thread=False)
    else:
        with ThreadPoolExecutor(max_workers=run.endpoint.concurrency) as pool:
            list(pool.map(lambda unit: _run_one_pass(run, endpoint, *unit, thread=True), units))
    evaluation_run_finish(run)
