"""Model runs: endpoints, built-in SQL runs, imported results, selection thresholds.

Every write is here. Jobs (``evaluation/tasks.py``) fetch by id and call ``*_execute``, which
claims the run with a conditional update so a redelivered job never runs twice.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from hilbench_annotate.access import require_role
from hilbench_annotate.chat import ChatError
from hilbench_annotate.errors import DomainError
from hilbench_annotate.instructions import task_instructions
from hilbench_annotate.jobs import job_claim, job_fail, job_finish, job_heartbeat, job_send
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.toolkit.archives import extract_archive
from hilbench_annotate.toolkit.compare import parse_csv_table
from hilbench_annotate.toolkit.sqlconsole import edited_database, run_select
from hilbench_annotate.vocabulary import Role
from judge.base import JudgeError
from judge.services import ask_human, ask_human_reject, ask_human_run_start

from ..models import (
    EvaluationRun,
    Mode,
    ModelEndpoint,
    SelectionPolicy,
    SupportRecord,
    SupportStudy,
    TaskPass,
    Trajectory,
)
from ..results import PassRecord, parse_jsonl, parse_results_folder, parse_support_jsonl
from ..runner import Endpoint, SqlTaskContext, run_sql_pass
from ..support import METHODS as SUPPORT_METHODS
from ..support import run_support

MAX_PASSES = 10


# --- endpoints and thresholds ------------------------------------------------------------


def endpoint_create(
    *,
    project: Project,
    actor,
    name: str,
    base_url: str,
    model: str,
    api_key_env: str = "",
    concurrency: int = 1,
    timeout_s: float = 60.0,
    max_turns: int = 12,
) -> ModelEndpoint:
    require_role(actor, project, Role.LEAD, action="do this")
    if not base_url.startswith(("http://", "https://")):
        raise DomainError(f"The base URL must start with http:// or https://, not {base_url!r}.")
    prefix = settings.MODEL_KEY_ENV_PREFIX
    if api_key_env and (
        not api_key_env.startswith(prefix) or not api_key_env.replace("_", "").isalnum()
    ):
        # Only variables meant for model endpoints: a lead must not be able to send the
        # server's own secrets (DJANGO_SECRET_KEY, DATABASE_URL…) to a URL of their choosing.
        raise DomainError(
            f"The API key is read from an environment variable whose name starts with "
            f"{prefix} (e.g. {prefix}OPENAI); the key itself is never stored."
        )
    host = urlsplit(base_url).hostname or ""
    allowed = settings.MODEL_ENDPOINT_HOSTS
    if allowed and host not in allowed:
        raise DomainError(
            f"{host} is not an allowed model endpoint host (HILBENCH_MODEL_ENDPOINT_HOSTS)."
        )
    if not 1 <= concurrency <= 32:
        raise DomainError("Concurrency must be between 1 and 32.")
    if not 0 < timeout_s <= 600 or not 1 <= max_turns <= 100:
        raise DomainError("The timeout is at most 600 s and a pass has 1 to 100 turns.")
    if ModelEndpoint.objects.filter(project=project, name=name).exists():
        raise DomainError(f"The project already has an endpoint called {name!r}.")
    endpoint = ModelEndpoint.objects.create(
        project=project,
        name=name,
        base_url=base_url.rstrip("/"),
        model=model,
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout_s=timeout_s,
        max_turns=max_turns,
        created_by=actor,
    )
    event_record(
        project_id=project.pk, task_id=None, actor=actor, kind="endpoint_created", name=name
    )
    return endpoint


def selection_policy_update(
    *,
    project: Project,
    actor,
    k: int,
    full_info_min: float,
    baseline_max: float,
    min_models: int = 1,
) -> SelectionPolicy:
    require_role(actor, project, Role.LEAD, action="do this")
    if not 1 <= k <= MAX_PASSES:
        raise DomainError(f"k must be between 1 and {MAX_PASSES}.")
    if not (0 <= full_info_min <= 1 and 0 <= baseline_max <= 1):
        raise DomainError("Thresholds are pass rates between 0 and 1.")
    if min_models < 1:
        raise DomainError("At least one model must have run a task to decide it.")
    policy, _ = SelectionPolicy.objects.update_or_create(
        project=project,
        defaults={
            "k": k,
            "full_info_min": full_info_min,
            "baseline_max": baseline_max,
            "min_models": min_models,
            "updated_by": actor,
        },
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="selection_policy_updated",
        k=k,
        full_info_min=full_info_min,
        baseline_max=baseline_max,
        min_models=min_models,
    )
    return policy


# --- the built-in SQL runner -------------------------------------------------------------


def sql_task_context(task: Task, revision: Revision) -> SqlTaskContext:
    """What the runner needs of one SQL task: the edited database and the gold result."""
    env = getattr(task, "sql_environment", None)
    if env is None or env.database is None:
        raise DomainError(f"Task {task.pk} has no database to run against.")
    db_path = edited_database(
        source=Path(env.database.path),
        edit_script=env.edit_script,
        cache_dir=settings.VAR_DIR / "edited-databases",
    )
    if env.golden_output.strip():
        gold_columns, gold_rows = parse_csv_table(env.golden_output)
    elif env.gold_sql.strip():
        result = run_select(db_path, env.gold_sql, timeout_s=30.0, row_cap=10_000)
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


def _current_revision(task: Task) -> Revision:
    revision = task.revisions.order_by("-number").first()
    if revision is None:
        raise DomainError(f"Task {task.pk} has no revision to evaluate.")
    return revision


def _project_tasks(project: Project, task_ids: list[int], *, domain: str | None) -> list[Task]:
    tasks = list(Task.objects.filter(project=project, pk__in=task_ids).order_by("pk"))
    missing = sorted(set(task_ids) - {t.pk for t in tasks})
    if missing:
        raise DomainError(f"The project has no task(s) {', '.join(map(str, missing))}.")
    if domain:
        wrong = [t.pk for t in tasks if t.domain != domain]
        if wrong:
            raise DomainError(
                f"The built-in runner runs SQL tasks only; {', '.join(map(str, wrong))} "
                "are SWE tasks (import their results from your harness instead)."
            )
    return tasks


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
    bad = [m for m in modes if m not in Mode.values]
    if bad or not modes:
        raise DomainError(f"Modes must be among {', '.join(Mode.values)}.")
    if not 1 <= passes <= MAX_PASSES:
        raise DomainError(f"Passes per mode must be between 1 and {MAX_PASSES}.")
    tasks = _project_tasks(project, task_ids, domain="sql")
    modes = [m for m in Mode.values if m in modes]  # known order, each once
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


def _finish(run: EvaluationRun) -> None:
    job_finish(EvaluationRun, run.pk, pending={})
    event_record(
        project_id=run.project_id,
        task_id=None,
        actor=run.created_by,
        kind="evaluation_run_finished",
        run=run.pk,
    )


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
        revision = _current_revision(task)
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


def evaluation_run_execute(*, run_id: int) -> None:
    run = _claim(run_id)
    if run is None:
        return
    if run.source == EvaluationRun.Source.IMPORTED:
        _import_pending(run)
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
    _finish(run)


# --- imported results --------------------------------------------------------------------


def _resolver(project: Project):
    by_source = dict(Task.objects.filter(project=project).values_list("source_id", "pk"))
    ids = set(by_source.values())

    def resolve(reference: str) -> int | None:
        if reference in by_source:
            return by_source[reference]
        if reference.isdigit() and int(reference) in ids:
            return int(reference)
        return None

    return resolve


def _queue_import(
    *, project: Project, actor, model_name: str, records: list[PassRecord]
) -> EvaluationRun:
    # The validated passes wait for the worker in a file (trajectories can be large), not in
    # the run's row.
    relative = f"pending-results/{uuid.uuid4().hex}.jsonl"
    path = settings.UPLOAD_STORE / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.as_json()) + "\n")
    run = EvaluationRun.objects.create(
        project=project,
        source=EvaluationRun.Source.IMPORTED,
        model_name=model_name[:200],
        modes=sorted({r.mode for r in records}, key=Mode.values.index),
        passes=max(r.index for r in records),
        task_ids=sorted({r.task_id for r in records}),
        pending={"file": relative},
        total=len(records),
        created_by=actor,
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="results_import_queued",
        run=run.pk,
        passes=len(records),
    )
    job_send(run)
    return run


def results_import_start(
    *, project: Project, actor, path: Path, model_name: str = ""
) -> list[EvaluationRun]:
    """Validate a results file (JSONL), folder or archive of a folder; queue one run per model.

    Every line is checked first: with any bad line nothing is queued (``ImportRefused``
    names the lines). The worker then judges the ask_human questions and stores the passes.
    """
    require_role(actor, project, Role.LEAD, action="do this")
    resolve = _resolver(project)
    path = Path(path)
    if path.is_dir():
        by_model = parse_results_folder(path, resolve)
    elif path.suffix == ".jsonl":
        if not model_name.strip():
            raise DomainError("Name the model whose results these are.")
        if path.stat().st_size > settings.MAX_UPLOAD_BYTES:
            raise DomainError(f"{path.name} is larger than {settings.MAX_UPLOAD_BYTES} bytes.")
        with path.open(encoding="utf-8", errors="replace") as handle:
            by_model = {model_name.strip(): parse_jsonl(handle, resolve, name=path.name)}
    elif path.name.endswith((".zip", ".tar.gz", ".tgz", ".tar")):
        scratch = Path(tempfile.mkdtemp(prefix="results-", dir=settings.VAR_DIR))
        try:
            folder = extract_archive(path, scratch / "x")
            by_model = parse_results_folder(folder, resolve)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    else:
        raise DomainError(
            f"{path.name}: give a .jsonl file or a results folder (.zip / .tar.gz) holding "
            "pass_level_metrics.csv."
        )
    return [
        _queue_import(project=project, actor=actor, model_name=model, records=records)
        for model, records in sorted(by_model.items())
    ]


@contextmanager
def _stored_upload(upload):
    """A browser upload as a file on disk, removed afterwards."""
    if upload.size > settings.MAX_UPLOAD_BYTES:
        raise DomainError(
            f"{upload.name} is {upload.size} bytes; uploads are limited to "
            f"{settings.MAX_UPLOAD_BYTES} bytes."
        )
    suffix = "".join(Path(upload.name).suffixes[-2:]).lower()
    directory = settings.UPLOAD_STORE / f"results-{uuid.uuid4().hex[:12]}"
    directory.mkdir(parents=True)
    try:
        path = directory / f"{Path(upload.name).stem.split('.')[0][:60] or 'upload'}{suffix}"
        with open(path, "wb") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def results_upload_start(*, project: Project, actor, upload, model_name: str = ""):
    """``results_import_start`` on a browser upload."""
    require_role(actor, project, Role.LEAD, action="do this")
    with _stored_upload(upload) as path:
        return results_import_start(project=project, actor=actor, path=path, model_name=model_name)


def _import_pending(run: EvaluationRun) -> None:
    """Store an imported run's passes, judging their questions, one pass per transaction.

    The file was validated whole before the run was queued. Passes are read one at a time
    (trajectories can be large) and each is committed with a heartbeat, so a long import is
    not mistaken for a dead one; a re-sent job skips what is stored. A run that fails is
    never counted: the leaderboard and the selection gate read succeeded runs only.
    """
    pending = settings.UPLOAD_STORE / run.pending.get("file", "")
    if not run.pending.get("file") or not pending.is_file():
        job_fail(EvaluationRun, run.pk, "The imported results' file is missing.")
        return
    tasks = {t.pk: t for t in Task.objects.filter(pk__in=run.task_ids).select_related("project")}
    stored = set(TaskPass.objects.filter(run=run).values_list("task_id", "mode", "index"))
    try:
        with pending.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                record = PassRecord(**json.loads(line))
                if (record.task_id, record.mode, record.index) in stored:
                    continue
                task = tasks.get(record.task_id)
                if task is None:
                    raise DomainError(f"task {record.task_id} was deleted before the import ran")
                _import_pass(run, task, record)
    except (DomainError, JudgeError) as error:
        job_fail(EvaluationRun, run.pk, f"The import stopped: {error}".replace("\n", " "))
        return
    _finish(run)
    pending.unlink(missing_ok=True)


def _import_pass(run: EvaluationRun, task: Task, record: PassRecord) -> None:
    revision = _current_revision(task)
    with transaction.atomic():
        ask_run = None
        if record.mode == Mode.ASK_HUMAN:
            ask_run = ask_human_run_start(
                task=task,
                actor=run.created_by,
                label=f"{run.model_name} pass {record.index} (import {run.pk})",
            )
            for question in record.questions:
                ask_human(
                    run=ask_run,
                    actor=run.created_by,
                    question=question["text"],
                    client_time=question.get("time", ""),
                )
        task_pass = TaskPass.objects.create(
            run=run,
            task=task,
            revision=revision,
            mode=record.mode,
            index=record.index,
            resolved=record.resolved,
            blocker_count=len(revision.snapshot.get("blockers", [])),
            ask_human_run=ask_run,
            tokens=record.tokens,
            cost=record.cost,
        )
        if record.trajectory is not None:
            Trajectory.objects.create(
                task_pass=task_pass, steps=record.trajectory, source=record.trajectory_file[:300]
            )
        job_heartbeat(EvaluationRun, run.pk, done=F("done") + 1)


# --- the support-seeking study (second paper) ---------------------------------------------


def support_study_start(
    *, project: Project, actor, endpoint: ModelEndpoint, method: str, task_ids: list[int]
) -> SupportStudy:
    require_role(actor, project, Role.LEAD, action="do this")
    if method not in SUPPORT_METHODS:
        raise DomainError(f"The method must be one of {', '.join(SUPPORT_METHODS)}.")
    if endpoint.project_id != project.pk:
        raise DomainError("The endpoint belongs to another project.")
    if not task_ids:
        raise DomainError("Choose at least one task.")
    tasks = _project_tasks(project, task_ids, domain="sql")
    study = SupportStudy.objects.create(
        project=project,
        model_name=endpoint.name,
        method=method,
        endpoint=endpoint,
        task_ids=[t.pk for t in tasks],
        total=len(tasks),
        created_by=actor,
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="support_study_queued",
        study=study.pk,
    )
    job_send(study)
    return study


def support_study_execute(*, study_id: int) -> None:
    if not job_claim(SupportStudy, study_id):
        return
    study = SupportStudy.objects.select_related("endpoint").get(pk=study_id)
    if study.endpoint is None:
        job_fail(SupportStudy, study.pk, "The study's endpoint was deleted.")
        return
    endpoint = study.endpoint.client()
    failures = []
    done = set(study.records.values_list("task_id", flat=True))
    for task in Task.objects.filter(pk__in=study.task_ids).exclude(pk__in=done).order_by("pk"):
        revision = _current_revision(task)
        try:
            context = sql_task_context(task, revision)
            blockers = revision.snapshot.get("blockers", [])
            outcome = run_support(
                endpoint=endpoint,
                context=context,
                question=revision.snapshot["blocked_spec"].get("question", ""),
                hints=[b.get("resolution", "") for b in blockers],
                method=study.method,
            )
        except (DomainError, ChatError) as error:
            failures.append(f"task {task.pk}: {error}")
            continue
        with transaction.atomic():
            SupportRecord.objects.create(
                study=study,
                task=task,
                score=outcome.score,
                score_source=outcome.score_source,
                correct=outcome.correct,
                correct_with_support=outcome.correct_with_support,
                detail={**outcome.detail, "revision": revision.number},
            )
            job_heartbeat(SupportStudy, study.pk, done=F("done") + 1)
    job_finish(
        SupportStudy,
        study.pk,
        error="\n".join(failures)[:4000],
    )


def support_import(
    *, project: Project, actor, path: Path, model_name: str, method: str = "imported"
) -> SupportStudy:
    """Records ``{task, score, correct, correct_with_support}`` per JSONL line, all or none."""
    require_role(actor, project, Role.LEAD, action="do this")
    if not model_name.strip():
        raise DomainError("Name the model whose scores these are.")
    if method not in SupportStudy.Method.values:
        raise DomainError(f"The method must be one of {', '.join(SupportStudy.Method.values)}.")
    resolve = _resolver(project)
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        records = parse_support_jsonl(handle, resolve, name=Path(path).name)
    study = SupportStudy.objects.create(
        project=project,
        model_name=model_name.strip()[:200],
        method=method,
        task_ids=sorted({r["task_id"] for r in records}),
        status=EvaluationRun.Status.SUCCEEDED,
        done=len(records),
        total=len(records),
        created_by=actor,
        finished_at=timezone.now(),
    )
    SupportRecord.objects.bulk_create(
        SupportRecord(study=study, score_source="imported", **record) for record in records
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="support_scores_imported",
        study=study.pk,
        records=len(records),
    )
    return study


def support_upload(*, project: Project, actor, upload, model_name: str) -> SupportStudy:
    """``support_import`` on a browser upload."""
    require_role(actor, project, Role.LEAD, action="do this")
    with _stored_upload(upload) as path:
        return support_import(project=project, actor=actor, path=path, model_name=model_name)
