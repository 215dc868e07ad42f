"""Celery tasks: fetch by id, call a service. Results live in our models (``jobs.py``)."""

from celery import shared_task

from exchange.services.exports import (
    bundle_export_execute,
    export_chunk_execute,
    export_jobs_expire,
)
from exchange.services.imports import import_execute, uploads_sweep
from hilbench_annotate.jobs import JobTask


# acks_late: the services claim their row with a conditional update, so a redelivered job
# whose worker died is taken over once and a finished one is left alone.
@shared_task(name="imports.run", base=JobTask, acks_late=True)
def import_job(*, job_id: int) -> None:
    import_execute(job_id=job_id)


@shared_task(name="bundles.export", base=JobTask, acks_late=True)
def bundle_export_job(*, job_id: int) -> None:
    bundle_export_execute(job_id=job_id, fan_out=True)


@shared_task(name="bundles.export_chunk", base=JobTask, acks_late=True)
def export_chunk_job(*, chunk_id: int) -> None:
    export_chunk_execute(chunk_id=chunk_id, fan_out=True)


@shared_task(name="bundles.expire")
def export_jobs_expire_task() -> None:
    export_jobs_expire()


@shared_task(name="uploads.sweep")
def uploads_sweep_task() -> None:
    uploads_sweep()
