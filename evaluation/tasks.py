"""Celery tasks: fetch by id, call a service. Results live in our models (``jobs.py``)."""

from celery import shared_task

from evaluation.services import evaluation_run_execute, labelling_run_execute, support_study_execute
from hilbench_annotate.jobs import JobTask


# Idempotent: each service claims its row with a conditional update and skips what a
# previous delivery stored.
@shared_task(name="evaluation.run", base=JobTask, acks_late=True)
def evaluation_run_job(*, run_id: int) -> None:
    evaluation_run_execute(run_id=run_id)


@shared_task(name="evaluation.support", base=JobTask, acks_late=True)
def support_study_job(*, study_id: int) -> None:
    support_study_execute(study_id=study_id)


@shared_task(name="evaluation.label", base=JobTask, acks_late=True)
def labelling_run_job(*, run_id: int) -> None:
    labelling_run_execute(run_id=run_id)
