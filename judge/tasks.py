"""Celery tasks of the judge: fetch by id, call a service."""

from celery import shared_task
from django.conf import settings

from hilbench_annotate.jobs import JobTask

from .services import judge_index_prepare
from .validation import judge_calibrate_execute


# Idempotent and cheap to repeat (the embeddings are kept once built): no retries, no job row.
@shared_task(name="judge.index_prepare", acks_late=True, ignore_result=True)
def judge_index_prepare_job(*, revision_id: int) -> None:
    judge_index_prepare(revision_id=revision_id)


def revision_prepare_hook(revision_id: int) -> None:
    """The judge's revision hook (``hilbench_annotate.revision_hooks``), run on commit: the
    index is built by a worker, so a save never waits for the model."""
    if settings.JUDGE_PREPARE_ON_SAVE:
        judge_index_prepare_job.delay(revision_id=revision_id)


@shared_task(name="judge.calibrate", base=JobTask, acks_late=True)
def calibration_job(*, job_id: int) -> None:
    judge_calibrate_execute(job_id=job_id)
