"""Celery tasks: fetch by id, call a service. Results live in our models (``jobs.py``)."""

from celery import shared_task

from hilbench_annotate.jobs import JobTask
from validators.environments import environment_build_execute
from validators.services import validation_run_execute


# acks_late because the service is idempotent: a job whose worker died is delivered again
# and finishes the run without duplicating results.
@shared_task(name="validators.run", base=JobTask, acks_late=True)
def validation_run_job(*, run_id: int) -> None:
    validation_run_execute(run_id=run_id)


@shared_task(name="validators.build_environment", base=JobTask, acks_late=True)
def environment_build_job(*, build_id: int) -> None:
    environment_build_execute(build_id=build_id)
