"""Helpers the run services share: a task's current revision, a project's tasks by id,
task references in imported files, browser uploads on disk, and finishing a run."""

from __future__ import annotations

import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_finish
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.selectors import revision_current
from hilbench_annotate.services.tasks import event_record

from ..models import EvaluationRun, Mode

MAX_PASSES = 10


def current_revision(task: Task) -> Revision:
    revision = revision_current(task=task)
    if revision is None:
        raise DomainError(f"Task {task.pk} has no revision to evaluate.")
    return revision


def project_tasks(project: Project, task_ids: list[int], *, domain: str | None) -> list[Task]:
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


def evaluation_run_finish(run: EvaluationRun) -> None:
    """Mark a built-in or imported run succeeded and record the event."""
    job_finish(EvaluationRun, run.pk, pending={})
    event_record(
        project_id=run.project_id,
        task_id=None,
        actor=run.created_by,
        kind="evaluation_run_finished",
        run=run.pk,
    )


def task_resolver(project: Project):
    """Map a task reference in an imported file (source id or primary key) to a task id."""
    by_source = dict(Task.objects.filter(project=project).values_list("source_id", "pk"))
    ids = set(by_source.values())

    def resolve(reference: str) -> int | None:
        if reference in by_source:
            return by_source[reference]
        if reference.isdigit() and int(reference) in ids:
            return int(reference)
        return None

    return resolve


@contextmanager
def stored_upload(upload):
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


def run_modes_clean(modes: list[str], passes: int) -> list[str]:
    """A run's modes in their known order, each once; DomainError for an unknown mode or a
    number of passes out of range."""
    bad = [m for m in modes if m not in Mode.values]
    if bad or not modes:
        raise DomainError(f"Modes must be among {', '.join(Mode.values)}.")
    if not 1 <= passes <= MAX_PASSES:
        raise DomainError(f"Passes per mode must be between 1 and {MAX_PASSES}.")
    return [m for m in Mode.values if m in modes]
