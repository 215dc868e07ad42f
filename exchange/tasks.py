"""Celery tasks: fetch by id, call a service. Results live in our models."""

from celery import Task, shared_task


class _MarkFailed(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from exchange.services.imports import import_job_fail

        import_job_fail(job_id=kwargs["job_id"], error=f"The import crashed: {exc!r}")


@shared_task(name="imports.run", base=_MarkFailed, acks_late=True)
def import_job_run(*, job_id: int) -> None:
    # Idempotent: the service claims the job with a conditional update.
    from exchange.services.imports import import_job_run_service

    import_job_run_service(job_id=job_id)


class _MarkExportFailed(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from exchange.services.exports import bundle_export_fail

        bundle_export_fail(job_id=kwargs["job_id"], error=f"The export crashed: {exc!r}")


@shared_task(name="bundles.export", base=_MarkExportFailed, acks_late=True)
def export_job_run(*, job_id: int) -> None:
    # Idempotent: the service claims the job with a conditional update.
    from exchange.services.exports import bundle_export_run_service

    bundle_export_run_service(job_id=job_id)


@shared_task(name="bundles.expire")
def export_jobs_expire() -> None:
    from exchange.services.exports import export_jobs_expire as expire

    expire()
