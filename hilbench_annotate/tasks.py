"""Celery tasks of the core: the reaper that re-sends lost jobs of every kind (``jobs.py``),
and the sweep of edited database copies nobody uses (``databases.py``)."""

from celery import shared_task

from hilbench_annotate.databases import edited_copies_sweep
from hilbench_annotate.jobs import jobs_reap


@shared_task(name="jobs.reap")
def jobs_reap_task() -> None:
    jobs_reap()


@shared_task(name="databases.sweep")
def edited_copies_sweep_task() -> None:
    edited_copies_sweep()
