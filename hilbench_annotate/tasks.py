"""Celery tasks of the core: the reaper that re-sends lost jobs of every kind (``jobs.py``)."""

from celery import shared_task

from hilbench_annotate.jobs import jobs_reap


@shared_task(name="jobs.reap")
def jobs_reap_task() -> None:
    jobs_reap()
