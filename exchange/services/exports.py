"""Bundle exports: a lead selects tasks, a worker writes the bundle, the file expires.

The browser, the API and ``manage.py export_bundle`` all go through ``bundle_export_start``
(or, for the command, ``bundle_export_execute`` right away): one code path.
"""

import contextlib
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from exchange.bundles.tarstream import file_sha256
from exchange.bundles.writer import write_bundle
from exchange.models import ExportJob
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_claim, job_fail, job_finish, job_heartbeat, job_send
from hilbench_annotate.models import Project, Task
from hilbench_annotate.services.tasks import event_record, tag_names_clean
from hilbench_annotate.vocabulary import Domain, TaskStatus
from review.services import task_transition

SELECTION_KEYS = ("tasks", "states", "domain", "tags")


def export_selection_clean(selection: dict[str, Any]) -> dict[str, Any]:
    """The selection as stored: task ids (ints), states, domain, tags; unknown keys refused."""
    unknown = set(selection) - set(SELECTION_KEYS)
    if unknown:
        raise DomainError(f"Unknown selection keys {sorted(unknown)}; use {SELECTION_KEYS}.")
    clean: dict[str, Any] = {}
    tasks = selection.get("tasks") or []
    try:
        clean["tasks"] = sorted({int(t) for t in tasks})
    except (TypeError, ValueError):
        raise DomainError("Task ids must be numbers.") from None
    states = selection.get("states") or []
    bad = [s for s in states if s not in TaskStatus.values]
    if bad:
        raise DomainError(f"Unknown states {bad}; use {TaskStatus.values}.")
    clean["states"] = sorted(set(states))
    domain = selection.get("domain") or ""
    if domain and domain not in Domain.values:
        raise DomainError(f"Unknown domain {domain!r}; use {Domain.values}.")
    clean["domain"] = domain
    clean["tags"] = tag_names_clean(selection.get("tags") or [])
    return clean


def export_selection_tasks(*, project: Project, selection: dict[str, Any]):
    """The project's tasks the selection names (every filter given must match)."""
    tasks = Task.objects.filter(project=project)
    if selection.get("tasks"):
        tasks = tasks.filter(pk__in=selection["tasks"])
    if selection.get("states"):
        tasks = tasks.filter(status__in=selection["states"])
    if selection.get("domain"):
        tasks = tasks.filter(domain=selection["domain"])
    if selection.get("tags"):
        # Any of the tags; distinct, as a task may carry several of them.
        tasks = tasks.filter(tags__name__in=selection["tags"]).distinct()
    return tasks


def bundle_export_create(
    *,
    project: Project,
    actor,
    selection: dict,
    draft: bool = False,
    reveal_reviewers: bool = False,
    allow_internet: bool = False,
) -> ExportJob:
    """Record an export job. Caller checked that ``actor`` is a lead of ``project``."""
    selection = export_selection_clean(selection)
    total = export_selection_tasks(project=project, selection=selection).count()
    if not total:
        raise DomainError("The selection names no task of this project.")
    job = ExportJob.objects.create(
        project=project,
        created_by=actor,
        selection=selection,
        draft=draft,
        reveal_reviewers=reveal_reviewers,
        allow_internet=allow_internet,
        total=total,
    )
    event_record(project_id=project.pk, task_id=None, actor=actor, kind="export_queued", job=job.pk)
    return job


def bundle_export_start(
    *,
    project: Project,
    actor,
    selection: dict,
    draft: bool = False,
    reveal_reviewers: bool = False,
    allow_internet: bool = False,
) -> ExportJob:
    """Record the job and schedule the worker once this transaction commits."""
    job = bundle_export_create(
        project=project,
        actor=actor,
        selection=selection,
        draft=draft,
        reveal_reviewers=reveal_reviewers,
        allow_internet=allow_internet,
    )
    job_send(job)
    return job


def bundle_export_execute(*, job_id: int, out: Path | None = None) -> ExportJob | None:
    """Claim the job (queued, or running with a dead worker) and write its bundle.

    ``out`` is where the command wants the file; the browser's jobs write under
    BUNDLE_STORE. A redelivered message for a running or finished job does nothing.
    """
    if not job_claim(ExportJob, job_id):
        return None
    job = ExportJob.objects.select_related("project", "created_by").get(pk=job_id)
    relative = (
        f"{timezone.now():%Y%m%d}-{uuid.uuid4().hex[:12]}/{job.project.slug}-export-{job.pk}.tar.gz"
    )
    target = Path(out) if out else settings.BUNDLE_STORE / relative
    task_ids = list(
        export_selection_tasks(project=job.project, selection=job.selection).values_list(
            "pk", flat=True
        )
    )

    def progress(done: int, total: int) -> None:
        job_heartbeat(ExportJob, job_id, done=done, total=total)

    try:
        report = write_bundle(
            task_ids=task_ids,
            out=target,
            draft=job.draft,
            reveal_reviewers=job.reveal_reviewers,
            allow_internet=job.allow_internet,
            project=job.project,
            selection=job.selection,
            progress=progress,
        )
    except DomainError as exc:
        job_fail(ExportJob, job_id, str(exc))
        return ExportJob.objects.get(pk=job_id)
    if not report["exported"]:
        target.unlink(missing_ok=True)
        job_fail(
            ExportJob,
            job_id,
            "No selected task is validated (approved with every gate green); "
            "export a draft bundle to include them anyway.\n"
            + "\n".join(f"task {s['task']}: {s['reason']}" for s in report["skipped"][:50]),
        )
        return ExportJob.objects.get(pk=job_id)
    finished = timezone.now()
    with transaction.atomic():
        job_finish(
            ExportJob,
            job_id,
            file_path="" if out else relative,
            size_bytes=target.stat().st_size,
            sha256=file_sha256(target),
            report=report,
            expires_at=None if out else finished + timedelta(hours=settings.BUNDLE_KEEP_HOURS),
        )
        _mark_exported(job, report)
        event_record(
            project_id=job.project_id,
            task_id=None,
            actor=job.created_by,
            kind="export_finished",
            job=job_id,
            exported=len(report["exported"]),
            skipped=len(report["skipped"]),
            draft=job.draft,
        )
    return ExportJob.objects.get(pk=job_id)


def _mark_exported(job: ExportJob, report: dict) -> None:
    """Approved tasks in a (non-draft) bundle move to *exported*, as the workflow says."""
    if job.draft:
        return
    ids = [e["task"] for e in report["exported"] if e["status"] == TaskStatus.APPROVED]
    for task in Task.objects.filter(pk__in=ids, status=TaskStatus.APPROVED):
        task_transition(task=task, action="export", actor=job.created_by, export=job.pk)


def export_jobs_expire(*, now=None) -> int:
    """Delete bundle files past their time; the jobs stay, marked expired."""
    now = now or timezone.now()
    count = 0
    for job in ExportJob.objects.filter(status=ExportJob.Status.SUCCEEDED, expires_at__lt=now):
        if job.path is not None:
            job.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # the folder may hold another file
                job.path.parent.rmdir()
        count += ExportJob.objects.filter(pk=job.pk, status=ExportJob.Status.SUCCEEDED).update(
            status=ExportJob.Status.EXPIRED
        )
    return count
