"""Celery tasks: fetch by id, call a service. Results live in our models."""

from celery import Task, shared_task


class _MarkError(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from validators.services import validation_run_fail

        validation_run_fail(run_id=kwargs["run_id"], error=f"The run crashed: {exc!r}")


# acks_late because the service is idempotent: a job whose worker died is delivered again
# and finishes the run without duplicating results.
@shared_task(name="validators.run", base=_MarkError, acks_late=True)
def validation_run_execute(*, run_id: int) -> None:
    from validators.services import validation_run_execute_service

    validation_run_execute_service(run_id=run_id)


@shared_task(name="validators.reap")
def validation_runs_reap_task() -> None:
    from validators.services import validation_runs_reap

    validation_runs_reap()
