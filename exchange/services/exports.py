"""Bundle exports: a lead selects tasks, a worker writes the bundle, the file expires.

The browser, the API and ``manage.py export_bundle`` all go through ``bundle_export_start``
(or, for the command, ``bundle_export_execute`` right away): one code path.
"""

import contextlib
import re
import shutil
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from exchange.bundles.judge_choice import llm_judge_clean
from exchange.bundles.writer import (
    ExportOptions,
    bundle_assemble,
    chunk_check,
    chunk_write,
    export_folders,
    export_order,
    skipped_entries,
    written_gather,
)
from exchange.bundles.writer import chunks as writer_chunks
from exchange.models import REPORT_HEAD, ExportChunk, ExportJob, export_report_summary
from exchange.selectors import export_entries, export_written
from hilbench_annotate.access import access_project
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.jobs import (
    job_claim,
    job_claim_all,
    job_fail,
    job_finish,
    job_heartbeat,
    job_heartbeat_while,
    job_send,
)
from hilbench_annotate.models import Project, Task
from hilbench_annotate.services import revisions_close
from hilbench_annotate.services.tasks import event_record, tag_names_clean
from hilbench_annotate.vocabulary import Domain, Role, TaskStatus
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
    llm_judge: dict | None = None,
    harbor_run=None,
) -> ExportJob:
    """Record an export job, made by ``actor``, a lead of ``project`` (a project ``actor``
    cannot see is absent, 404; one they see but do not lead an ``AccessDenied``, 403).
    ``llm_judge``: ``{endpoint, model}`` a lead gave for the release's LLM judge, or None.
    ``harbor_run``: the Harbor run exporting its own tasks, which the lists name as maker."""
    if actor is None:
        raise AccessDenied("An export needs the project lead who makes it.")
    access_project(actor, project.pk, roles=(Role.LEAD,))
    selection = export_selection_clean(selection)
    judge = llm_judge_clean(**(llm_judge or {}))
    tasks = export_selection_tasks(project=project, selection=selection)
    total = tasks.count()
    if not total:
        raise DomainError("The selection names no task of this project.")
    # The bundle records each task's revision number: no autosave folds into it afterwards.
    revisions_close(task_ids=tasks.values("pk"))
    job = ExportJob.objects.create(
        project=project,
        created_by=actor,
        selection=selection,
        draft=draft,
        reveal_reviewers=reveal_reviewers,
        allow_internet=allow_internet,
        llm_judge={"endpoint": judge.endpoint, "model": judge.model} if judge else {},
        total=total,
        harbor_run=harbor_run,
    )
    event_record(project_id=project.pk, task_id=None, actor=actor, kind="export_queued", job=job.pk)
    return job


@transaction.atomic
def bundle_export_start(
    *,
    project: Project,
    actor,
    selection: dict,
    draft: bool = False,
    reveal_reviewers: bool = False,
    allow_internet: bool = False,
    llm_judge: dict | None = None,
) -> ExportJob:
    """Record the job and schedule the worker once this transaction commits."""
    job = bundle_export_create(
        project=project,
        actor=actor,
        selection=selection,
        draft=draft,
        reveal_reviewers=reveal_reviewers,
        allow_internet=allow_internet,
        llm_judge=llm_judge,
    )
    job_send(job)
    return job


def _work_dir(job_id: int) -> Path:
    return settings.BUNDLE_STORE / "work" / f"export-{int(job_id)}"


def _target(job: ExportJob) -> Path:
    return Path(job.out_path) if job.out_path else settings.BUNDLE_STORE / job.file_path


def bundle_export_execute(
    *, job_id: int, out: Path | None = None, fan_out: bool = False
) -> ExportJob | None:
    """Claim the job (queued, or running with a dead worker) and export it.

    The export runs in steps over chunks of tasks (``bundles.writer``), each an
    ``ExportChunk`` row: with ``fan_out`` (the Celery task) every chunk is sent to the
    workers and the last one of a step starts the next; without it (the command, and the
    tests) the same steps run here, one after the other, and the job is finished on return.
    ``out`` is where the command wants the file; the browser's jobs write under
    BUNDLE_STORE. A redelivered message for a running or finished job does nothing; a job
    taken over from a dead worker goes on from its chunks.
    """
    if not job_claim(ExportJob, job_id):
        return None
    job = ExportJob.objects.get(pk=job_id)
    if job.phase:
        _resume(job, fan_out=fan_out)
        return ExportJob.objects.get(pk=job_id)
    relative = (
        f"{timezone.now():%Y%m%d}-{uuid.uuid4().hex[:12]}/{job.project.slug}-export-{job.pk}.tar.gz"
    )
    ordered = export_order(
        export_selection_tasks(project=job.project, selection=job.selection).values_list(
            "pk", flat=True
        )
    )
    shutil.rmtree(_work_dir(job_id), ignore_errors=True)
    with transaction.atomic():
        ExportJob.objects.filter(pk=job_id).update(
            file_path="" if out else relative,
            out_path=str(out) if out else "",
            total=len(ordered),
            done=0,
        )
        if job.draft:
            chunks = _write_chunks(job, {}, ordered)
        else:
            ExportJob.objects.filter(pk=job_id).update(phase=ExportChunk.Phase.CHECK)
            chunks = [
                ExportChunk.objects.create(
                    export=job,
                    phase=ExportChunk.Phase.CHECK,
                    number=number,
                    tasks=part,
                    created_by_id=job.created_by_id,
                )
                for number, part in enumerate(writer_chunks(ordered))
            ]
    _dispatch(chunks, fan_out=fan_out)
    return ExportJob.objects.get(pk=job_id)


def _write_chunks(job: ExportJob, checked: dict, ordered: list[int]) -> list[ExportChunk]:
    """The write step's chunks (caller is in a transaction): the tasks to write, each with
    its folder; an empty export still has one (empty) chunk, so the bundle is assembled."""
    ExportJob.objects.filter(pk=job.pk).update(phase=ExportChunk.Phase.WRITE)
    folders = export_folders(ordered)
    parts = writer_chunks(ordered) or [[]]
    return [
        ExportChunk.objects.create(
            export=job,
            phase=ExportChunk.Phase.WRITE,
            number=number,
            tasks=[[pk, folders[pk]] for pk in part],
            result={"checked": {str(pk): checked[str(pk)] for pk in part}} if checked else {},
            created_by_id=job.created_by_id,
        )
        for number, part in enumerate(parts)
    ]


def _dispatch(chunks: list[ExportChunk], *, fan_out: bool) -> None:
    if fan_out:
        for chunk in chunks:
            job_send(chunk)
        return
    # Here, one after the other: claimed at once and kept alive, so no worker takes a chunk
    # that waits its turn (the reaper re-sends jobs queued too long).
    ids = [chunk.pk for chunk in chunks]
    job_claim_all(ExportChunk, ids)
    with job_heartbeat_while(ExportChunk, ids):
        for pk in ids:
            export_chunk_execute(chunk_id=pk, fan_out=False, claimed=True)


def _resume(job: ExportJob, *, fan_out: bool) -> None:
    """A job taken over from a dead worker: a failed chunk fails it; otherwise its
    unfinished chunks are sent again (a chunk runs once however often it is sent) and, if
    none is left, the next step starts."""
    chunks = list(job.chunks.filter(phase=job.phase))
    failed = next((c for c in chunks if c.status == ExportChunk.Status.FAILED), None)
    if failed is not None:
        job_fail(ExportJob, job.pk, failed.error or f"{failed} failed")
        return
    unfinished = [c for c in chunks if not c.is_finished]
    if unfinished:
        if fan_out:
            _dispatch(unfinished, fan_out=True)
        else:  # each one this process can claim (queued, or its worker silent)
            for chunk in unfinished:
                export_chunk_execute(chunk_id=chunk.pk, fan_out=False)
        return
    _advance(job.pk, job.phase, fan_out=fan_out)


def export_chunk_execute(*, chunk_id: int, fan_out: bool = True, claimed: bool = False) -> None:
    """Claim one chunk of an export (unless the caller ``claimed`` it) and take its step;
    the last chunk of a step starts the next one. A failure fails the whole export, with its
    reason."""
    if not claimed and not job_claim(ExportChunk, chunk_id):
        return
    chunk = ExportChunk.objects.select_related("export__project").get(pk=chunk_id)
    job = chunk.export
    if job.is_finished:
        job_fail(ExportChunk, chunk_id, f"export #{job.pk} had already ended")
        return
    try:
        # The export's heartbeat too: a long step must not make the export look dead.
        with job_heartbeat_while(ExportChunk, chunk_id), job_heartbeat_while(ExportJob, job.pk):
            result = _step(chunk, job)
    except DomainError as exc:
        job_fail(ExportChunk, chunk_id, str(exc))
        job_fail(ExportJob, job.pk, str(exc))
        shutil.rmtree(_work_dir(job.pk), ignore_errors=True)
        return
    except BaseException as exc:
        job_fail(ExportJob, job.pk, f"The export crashed in {chunk}: {exc!r}")
        shutil.rmtree(_work_dir(job.pk), ignore_errors=True)
        raise
    if result is None:  # the assembly: the export is finished
        return
    job_finish(ExportChunk, chunk_id, result=result)
    # Progress within the step (the page names the step): tasks checked, or written.
    job_heartbeat(ExportJob, job.pk, done=F("done") + len(chunk.tasks))
    _advance(job.pk, chunk.phase, fan_out=fan_out)


def _options(job: ExportJob) -> ExportOptions:
    return ExportOptions(
        draft=job.draft,
        reveal_reviewers=job.reveal_reviewers,
        allow_internet=job.allow_internet,
        llm_judge=llm_judge_clean(**job.llm_judge) if job.llm_judge else None,
    )


def _step(chunk: ExportChunk, job: ExportJob) -> dict | None:
    if chunk.phase == ExportChunk.Phase.CHECK:
        return {"checked": chunk_check(task_ids=chunk.tasks, options=_options(job))}
    if chunk.phase == ExportChunk.Phase.WRITE:
        written = chunk_write(
            work=_work_dir(job.pk),
            name=f"chunk-{chunk.number:05d}",
            folders=[(pk, folder) for pk, folder in chunk.tasks],
            options=_options(job),
            checked=chunk.result.get("checked") or None,
        )
        return written  # the check's verdicts it was given are not carried on
    _assemble(chunk, job)
    return None


def _advance(job_id: int, phase: str, *, fan_out: bool) -> None:
    """Start the step after ``phase`` once every chunk of it has succeeded; of the chunks
    that may see that at the same time, the one whose conditional update wins starts it."""
    following = {
        ExportChunk.Phase.CHECK: ExportChunk.Phase.WRITE,
        ExportChunk.Phase.WRITE: ExportChunk.Phase.ASSEMBLE,
    }.get(phase)
    if following is None:  # the assembly finishes the export itself
        return
    with transaction.atomic():
        chunks = ExportChunk.objects.filter(export_id=job_id, phase=phase)
        if chunks.exclude(status=ExportChunk.Status.SUCCEEDED).exists():
            return
        if not ExportJob.objects.filter(
            pk=job_id, phase=phase, status=ExportJob.Status.RUNNING
        ).update(phase=following):
            return
        job = ExportJob.objects.get(pk=job_id)
        if following == ExportChunk.Phase.WRITE:
            checked = {}
            for result in chunks.order_by("number").values_list("result", flat=True):
                checked.update(result["checked"])
            ordered = [pk for part in chunks.order_by("number").values_list("tasks", flat=True)
                       for pk in part]  # fmt: skip
            written = [pk for pk in ordered if checked[str(pk)]["write"]]
            # The tasks left out, for the report the assembly finishes.
            ExportJob.objects.filter(pk=job_id).update(
                done=len(ordered) - len(written),
                report={"skipped": skipped_entries(ordered, checked)},
            )
            next_chunks = _write_chunks(job, checked, written)
        else:
            next_chunks = [
                ExportChunk.objects.create(
                    export=job,
                    phase=ExportChunk.Phase.ASSEMBLE,
                    number=0,
                    created_by_id=job.created_by_id,
                )
            ]
    _dispatch(next_chunks, fan_out=fan_out)


def _assemble(chunk: ExportChunk, job: ExportJob) -> None:
    """Join the written chunks into the bundle and finish the export (and this chunk)."""
    work = _work_dir(job.pk)
    written = written_gather(work, export_written(job=job), head=REPORT_HEAD)
    # The check step's (a bundle not a draft), then those a part of which raised when written.
    skipped = [*job.report.get("skipped", []), *written.skipped]
    target = _target(job)
    if not written.tasks.count:
        target.unlink(missing_ok=True)
        failed = [s for s in skipped if s["reason"].startswith("left out: ")]
        message = (
            "No selected task could be written: a part of each raised.\n"
            if len(failed) == len(skipped)
            else "No selected task is validated (approved with every gate green); "
            "export a draft bundle to include them anyway.\n"
        ) + "\n".join(f"task {s['task']} ({s['title'][:80]}): {s['reason']}" for s in skipped[:50])
        job_fail(ExportChunk, chunk.pk, message)
        job_fail(ExportJob, job.pk, message)
        shutil.rmtree(work, ignore_errors=True)
        return
    archive = bundle_assemble(
        out=target,
        work=work,
        written=written,
        options=_options(job),
        project=job.project,
        selection=job.selection,
        skipped=skipped,
    )
    # The tasks written are in the write step's chunks and the bundle's manifest, not here:
    # the report of 50,000 tasks would be a JSON value of 20 MB (``selectors.export_entries``).
    report = {"skipped": skipped, "files": archive["files"], "exported_count": written.tasks.count}
    # Read before the transaction that finishes the job: a chunk's entries at a time.
    approved = _approved_written(job)
    finished = timezone.now()
    with transaction.atomic():
        job_finish(ExportChunk, chunk.pk)
        job_finish(
            ExportJob,
            job.pk,
            size_bytes=archive["size"],
            sha256=archive["sha256"],
            report=report,
            summary=export_report_summary({**report, "exported": written.head}),
            done=job.total,
            expires_at=None
            if job.out_path
            else finished + timedelta(hours=settings.BUNDLE_KEEP_HOURS),
        )
        _mark_exported(job, approved)
        event_record(
            project_id=job.project_id,
            task_id=None,
            actor=job.created_by,
            kind="export_finished",
            job=job.pk,
            exported=written.tasks.count,
            skipped=len(report["skipped"]),
            draft=job.draft,
        )
    shutil.rmtree(work, ignore_errors=True)


def _approved_written(job: ExportJob) -> list[int]:
    """The approved tasks a bundle that is not a draft carries (a draft moves none)."""
    if job.draft:
        return []
    return [e["task"] for e in export_entries(job=job) if e["status"] == TaskStatus.APPROVED]


def _mark_exported(job: ExportJob, ids: list[int]) -> None:
    """Approved tasks in a (non-draft) bundle move to *exported*, as the workflow says."""
    for task in Task.objects.filter(pk__in=ids, status=TaskStatus.APPROVED):
        task_transition(task=task, action="export", actor=job.created_by, export=job.pk)


def export_jobs_expire(*, now=None) -> int:
    """Delete bundle files past their time; the jobs stay, marked expired."""
    now = now or timezone.now()
    count = 0
    # What the steps of an export left behind when it failed or its worker died for good.
    work = settings.BUNDLE_STORE / "work"
    folders = {
        int(p.name.removeprefix("export-")): p
        for p in (work.iterdir() if work.is_dir() else ())
        if re.fullmatch(r"export-\d+", p.name)
    }
    unfinished = set(
        ExportJob.objects.filter(pk__in=list(folders))
        .exclude(status__in=ExportJob.FINISHED)
        .values_list("pk", flat=True)
    )
    for job_id, folder in folders.items():
        if job_id not in unfinished:
            shutil.rmtree(folder, ignore_errors=True)
    for job in ExportJob.objects.filter(status=ExportJob.Status.SUCCEEDED, expires_at__lt=now):
        if job.path is not None:
            job.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # the folder may hold another file
                job.path.parent.rmdir()
        count += ExportJob.objects.filter(pk=job.pk, status=ExportJob.Status.SUCCEEDED).update(
            status=ExportJob.Status.EXPIRED
        )
    return count
