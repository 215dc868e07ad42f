"""Results imported from an outside harness: validated whole, then stored by the worker.

Each pass is judged against the revision it ran on, fixed before the run is queued: the one a
Harbor trial's folder was exported from, else the task's current revision at import. A blocker
edited afterwards — before the worker stores the pass, or before another worker takes the run
over — changes neither its verdicts nor its Ask-F1. A Harbor try the release leaves out
(``tries.py``) is stored with why, beside the passes, when the run is queued.
"""

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
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.jobs import job_fail, job_heartbeat, job_send
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.selectors import current_revisions
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.toolkit.archives import extract_archive
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.vocabulary import Role
from judge.base import JudgeError
from judge.models import AskHumanRun
from judge.services import ask_human, ask_human_reject, ask_human_run_start

from ..harbor_jobs import is_harbor_jobs, parse_harbor_jobs
from ..models import EvaluationRun, ExcludedTry, Mode, TaskPass, Trajectory
from ..results import PassRecord, parse_jsonl, parse_results_folder
from ..trajectories import TrajectoryError, steps_within_caps
from ..tries import Exclusion
from .common import current_revision, evaluation_run_finish, stored_upload, task_resolver


def _queue_import(
    *,
    project: Project,
    actor,
    model_name: str,
    records: list[PassRecord],
    excluded: list[Exclusion] = (),
) -> EvaluationRun:
    # The validated passes wait for the worker in a file (trajectories can be large), not in
    # the run's row.
    relative = f"pending-results/{uuid.uuid4().hex}.jsonl"
    path = settings.UPLOAD_STORE / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.as_json()) + "\n")
    tried = [*records, *excluded]
    run = EvaluationRun.objects.create(
        project=project,
        source=EvaluationRun.Source.IMPORTED,
        model_name=model_name[:200],
        modes=sorted({r.mode for r in tried}, key=Mode.values.index),
        passes=max((r.index for r in records), default=1),
        task_ids=sorted({r.task_id for r in tried}),
        pending={"file": relative},
        total=len(records),
        created_by=actor,
    )
    for exclusion in excluded:
        excluded_try_store(run=run, exclusion=exclusion)
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="results_import_queued",
        run=run.pk,
        passes=len(records),
        excluded=len(excluded),
    )
    job_send(run)
    return run


def excluded_try_store(*, run: EvaluationRun, exclusion: Exclusion) -> ExcludedTry:
    """Keep a try the release leaves out (``tries.py``) with why; once per trial, so a worker
    that takes a run over and reads the trial again stores nothing twice."""
    fields = exclusion.as_json()
    trial = fields.pop("trial")
    excluded, _ = ExcludedTry.objects.get_or_create(run=run, trial=trial[:200], defaults=fields)
    return excluded


def _pin_revisions(records: list[PassRecord]) -> None:
    """Fix each pass's revision before its run is queued: the one its folder names, else the
    task's current one now. ``ImportRefused`` naming each pass whose task has no such
    revision."""
    task_ids = {r.task_id for r in records}
    current = current_revisions(task_ids=task_ids)
    numbered = dict(
        ((task_id, number), pk)
        for task_id, number, pk in Revision.objects.filter(
            task_id__in=task_ids, number__in={r.revision for r in records if r.revision}
        ).values_list("task_id", "number", "pk")
    )
    problems = []
    for record in records:
        if record.revision is None:
            record.revision_id = current.get(record.task_id, (None,))[0]
        else:
            record.revision_id = numbered.get((record.task_id, record.revision))
        if record.revision_id is None:
            where = record.detail.get("trial") or f"task {record.task_id} pass {record.index}"
            what = f"revision {record.revision}" if record.revision else "a revision"
            problems.append((where, f"task {record.task_id} has no {what} to judge it on"))
    if problems:
        raise ImportRefused(f"{len(problems)} pass(es) without their revision", problems)


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
    excluded: dict[str, list[Exclusion]] = {}
    if path.is_dir() and is_harbor_jobs(path):
        trials = parse_harbor_jobs(path, resolve)
        by_model, excluded = trials.by_model, trials.excluded
        if not by_model and not excluded:
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
    _pin_revisions([r for records in by_model.values() for r in records])
    return [
        _queue_import(
            project=project,
            actor=actor,
            model_name=model,
            records=by_model.get(model, []),
            excluded=excluded.get(model, []),
        )
        for model in sorted({*by_model, *excluded})
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
                record = PassRecord(**json_loads(line))
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


def _pass_revision(task: Task, record: PassRecord) -> Revision:
    """The revision the pass ran on: pinned at import, else the one its Harbor folder names
    (a run the app drives), else — a pass read by no import — the task's current one."""
    if record.revision_id is None and record.revision is None:
        return current_revision(task)
    found = Revision.objects.filter(task=task)
    if record.revision_id is not None:
        found = found.filter(pk=record.revision_id).first()
    else:
        found = found.filter(number=record.revision).first()
    if found is None:
        raise DomainError(f"task {task.pk} no longer has the revision pass {record.index} ran on")
    return found


def _ask(run: EvaluationRun, task: Task, revision: Revision, record: PassRecord) -> AskHumanRun:
    """The pass's questions asked of the judge, on ``revision``: ``ask_human_run_start`` opens
    a run on the task's current revision (what an agent asking live gets), so the run is
    moved to the revision the pass ran on before its first question."""
    ask_run = ask_human_run_start(
        task=task,
        actor=run.created_by,
        label=f"{run.model_name} pass {record.index} (import {run.pk})",
    )
    if ask_run.revision_id != revision.pk:
        AskHumanRun.objects.filter(pk=ask_run.pk).update(revision=revision)
        ask_run.revision = revision
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
    return ask_run


def _sidecar_check(ask_run: AskHumanRun, revision: Revision, logged: list) -> dict:
    """The sidecar's logged verdicts beside the app's on the same revision: how many agree,
    each that differs, and any blocker it named that the revision does not have."""
    app = [
        None if capped or error else key
        for key, capped, error in ask_run.calls.order_by("id").values_list(
            "blocker_key", "capped", "error"
        )
    ]
    ids = {b.get("id") for b in revision.snapshot.get("blockers", [])}
    differ = [
        {"question": n, "sidecar": theirs, "app": ours}
        for n, (theirs, ours) in enumerate(zip(logged, app, strict=False), start=1)
        if theirs != ours
    ]
    return {
        "revision": revision.number,
        "agree": min(len(logged), len(app)) - len(differ),
        "differ": differ[:50],
        "not_in_revision": sorted({b for b in logged if b and b not in ids}),
    }


def imported_pass_store(run: EvaluationRun, task: Task, record: PassRecord) -> TaskPass:
    """One pass read from a harness: its questions asked of the judge on the revision it ran
    on (logged under an ``AskHumanRun``), its trajectory, the run's progress counted."""
    revision = _pass_revision(task, record)
    steps, refused = _trajectory_kept(record)
    detail = {**record.detail, "trajectory_refused": refused} if refused else record.detail
    with transaction.atomic():
        ask_run = None
        if record.mode == Mode.ASK_HUMAN:
            ask_run = _ask(run, task, revision, record)
            logged = detail.get("sidecar_verdicts")
            if isinstance(logged, list):
                detail = {**detail, "sidecar_check": _sidecar_check(ask_run, revision, logged)}
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
