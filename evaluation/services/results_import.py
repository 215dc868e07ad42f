"""Results imported from an outside harness: validated whole, then stored by the worker."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F

from hilbench_annotate.access import require_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_fail, job_heartbeat, job_send
from hilbench_annotate.models import Project, Task
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.toolkit.archives import extract_archive
from hilbench_annotate.vocabulary import Role
from judge.base import JudgeError
from judge.services import ask_human, ask_human_reject, ask_human_run_start

from ..harbor_jobs import is_harbor_jobs, parse_harbor_jobs
from ..models import EvaluationRun, Mode, TaskPass, Trajectory
from ..results import PassRecord, parse_jsonl, parse_results_folder
from ..trajectories import TrajectoryError, steps_within_caps
from .common import current_revision, evaluation_run_finish, stored_upload, task_resolver


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
    """Validate a results file (JSONL), folder or archive of a folder, or Harbor's jobs
    folder (``harbor_jobs``); queue one run per model.

    Every line is checked first: with any bad line nothing is queued (``ImportRefused``
    names the lines). The worker then judges the ask_human questions and stores the passes.
    """
    require_role(actor, project, Role.LEAD, action="do this")
    resolve = task_resolver(project)
    path = Path(path)
    if path.is_dir() and is_harbor_jobs(path):
        by_model = parse_harbor_jobs(path, resolve).by_model
        if not by_model:
            raise DomainError(f"{path.name}: no trial of these Harbor jobs has a reward.")
    elif path.is_dir():
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


@transaction.atomic
def results_upload_start(*, project: Project, actor, upload, model_name: str = ""):
    """``results_import_start`` on a browser upload."""
    require_role(actor, project, Role.LEAD, action="do this")
    with stored_upload(upload) as path:
        return results_import_start(project=project, actor=actor, path=path, model_name=model_name)


def imported_run_store(run: EvaluationRun) -> None:
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
                imported_pass_store(run, task, record)
    except (DomainError, JudgeError) as error:
        job_fail(EvaluationRun, run.pk, f"The import stopped: {error}".replace("\n", " "))
        return
    evaluation_run_finish(run)
    pending.unlink(missing_ok=True)


def _trajectory_kept(record: PassRecord) -> tuple[list[dict] | None, str]:
    """The steps to store, or why none are: a trajectory over a pass's caps (``MAX_STEPS``,
    ``MAX_BYTES`` as stored) is not kept, and the pass says why instead of failing the run.
    The readers refuse such files before a run is queued; this holds for every other way."""
    if record.trajectory is None:
        return None, ""
    try:
        return steps_within_caps(record.trajectory, name=record.trajectory_file or "steps"), ""
    except TrajectoryError as error:
        return None, str(error)


def imported_pass_store(run: EvaluationRun, task: Task, record: PassRecord) -> TaskPass:
    """One pass read from a harness: its questions asked of the judge (logged under an
    ``AskHumanRun``), its trajectory, the run's progress counted."""
    revision = current_revision(task)
    steps, refused = _trajectory_kept(record)
    detail = {**record.detail, "trajectory_refused": refused} if refused else record.detail
    with transaction.atomic():
        ask_run = None
        if record.mode == Mode.ASK_HUMAN:
            ask_run = ask_human_run_start(
                task=task,
                actor=run.created_by,
                label=f"{run.model_name} pass {record.index} (import {run.pk})",
            )
            for question in record.questions:
                if not question["text"].strip():
                    # Logged by the harness, so made: a call that matched nothing, counted in
                    # precision's denominator as the release counts it.
                    ask_human_reject(run=ask_run, question="", reason="the question is blank")
                    continue
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
            detail=detail,
            error=record.error,
        )
        if steps is not None:
            Trajectory.objects.create(
                task_pass=task_pass, steps=steps, source=record.trajectory_file[:300]
            )
        job_heartbeat(EvaluationRun, run.pk, done=F("done") + 1)
    return task_pass
