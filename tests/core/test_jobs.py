"""The job kit (hilbench_annotate/jobs.py): one claim, heartbeat, finish and fail path, one task
base that marks a crashed job, and one reaper with an attempts cap, for every kind of job."""

import subprocess
import sys
from datetime import timedelta

import pytest
from celery import shared_task
from django.db import transaction
from django.utils import timezone

from exchange.models import ImportJob
from hilbench_annotate.celery import app
from hilbench_annotate.jobs import (
    KINDS,
    JobKind,
    JobTask,
    job_claim,
    job_claim_all,
    job_fail,
    job_finish,
    job_heartbeat,
    job_send,
    jobs_reap,
)
from validators.models import ValidationRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(project, author):
    return ImportJob.objects.create(project=project, kind="bird", created_by=author, upload_dir="x")


def test_a_claim_takes_a_queued_job_once(job):
    assert job_claim(ImportJob, job.pk)
    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1 and job.worker
    assert job.started_at is not None and job.heartbeat_at is not None
    assert not job_claim(ImportJob, job.pk)  # a second delivery: its worker is alive


def test_a_running_job_whose_worker_went_silent_is_taken_over(job, settings):
    settings.IMPORT_STALE_S = 60
    assert job_claim(ImportJob, job.pk)
    first_start = ImportJob.objects.get(pk=job.pk).started_at
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=2))
    assert job_claim(ImportJob, job.pk)
    job.refresh_from_db()
    assert job.attempts == 2 and job.started_at == first_start  # the first start is kept


def test_heartbeat_stores_progress_and_finish_and_fail_leave_finished_jobs_alone(job):
    job_claim(ImportJob, job.pk)
    job_heartbeat(ImportJob, job.pk, done=3, total=10)
    job.refresh_from_db()
    assert (job.done, job.total, job.percent) == (3, 10, 30)
    assert job_finish(ImportJob, job.pk, report={"created": []})
    job_fail(ImportJob, job.pk, "too late")
    assert not job_finish(ImportJob, job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded" and job.error == "" and job.finished_at is not None


def test_a_crashed_validation_run_is_an_error_not_a_failed_check(project, author):
    from tests.factories import TaskFactory

    task = TaskFactory(project=project, author=author)
    from hilbench_annotate import services as core

    revision = core.revision_create(task=task, actor=author, reason="first")
    run = ValidationRun.objects.create(task=task, revision=revision, checks=["spec"])
    job_fail(ValidationRun, run.pk, "The validation run crashed: boom")
    run.refresh_from_db()
    assert run.status == "error" and "boom" in run.error


@shared_task(name="tests.jobs.crash", base=JobTask, acks_late=True)
def _crashing_job(*, job_id: int) -> None:
    raise RuntimeError("the importer fell over")


@pytest.fixture
def crashing_kind():
    kind = JobKind("exchange.ImportJob", "tests.jobs.crash", "job_id", "IMPORT_STALE_S", "import")
    saved = KINDS["exchange.ImportJob"]
    KINDS["exchange.ImportJob"] = kind
    app.conf.task_always_eager = True
    yield kind
    app.conf.task_always_eager = False
    KINDS["exchange.ImportJob"] = saved


def test_the_task_base_marks_a_crashed_job_failed_with_its_reason(job, crashing_kind):
    result = _crashing_job.apply(kwargs={"job_id": job.pk})
    assert result.failed()
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error == "The import crashed: RuntimeError('the importer fell over')"


def test_job_send_waits_for_the_commit(job, crashing_kind, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        job_send(job)
    assert ImportJob.objects.get(pk=job.pk).status == "queued"  # nothing ran before the commit
    callbacks[0]()
    assert ImportJob.objects.get(pk=job.pk).status == "failed"  # the (crashing) task ran


def test_the_reaper_gives_up_on_a_job_whose_worker_keeps_dying(job, settings, crashing_kind):
    settings.IMPORT_STALE_S = 60
    settings.JOB_MAX_ATTEMPTS = 3
    ImportJob.objects.filter(pk=job.pk).update(
        status="running", attempts=3, heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    assert jobs_reap()["exchange.ImportJob"] == 0
    job.refresh_from_db()
    assert job.status == "failed" and job.error.startswith("Gave up after 3 attempts")


def test_the_reaper_resends_a_silent_job_below_the_cap(job, settings, crashing_kind):
    settings.IMPORT_STALE_S = 60
    ImportJob.objects.filter(pk=job.pk).update(
        status="running", attempts=1, heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    assert jobs_reap()["exchange.ImportJob"] == 1
    job.refresh_from_db()
    assert job.status == "failed" and "the importer fell over" in job.error  # it ran again


def test_threads_sending_their_first_jobs_at_once_all_find_their_tasks():
    """A web server's threads send their first jobs together (the load bench saw it): Celery's
    autodiscovery imports nothing for a thread that calls it while another is inside it, so
    without taking turns one of them found no task ('NotRegistered: validators.run')."""
    script = """
import threading, django
django.setup()
from hilbench_annotate.jobs import KINDS, _task
kinds = list(KINDS.values()) * 3
barrier = threading.Barrier(len(kinds))
errors = []
def send(kind):
    barrier.wait()
    try:
        _task(kind)
    except Exception as exc:
        errors.append(f"{kind.task}: {exc!r}")
threads = [threading.Thread(target=send, args=(k,)) for k in kinds]
[t.start() for t in threads]
[t.join() for t in threads]
print("\\n".join(errors) or "ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ok", done.stdout


def test_jobs_claimed_at_once_and_kept_alive_are_left_alone_by_the_reaper(
    project, author, settings
):
    """What an export written by the command does with its chunks: the reaper re-sends a job
    queued too long, but not one this process claimed and keeps alive."""
    settings.JOB_REDISPATCH_S = 0
    jobs = [
        ImportJob.objects.create(project=project, kind="bird", created_by=author, upload_dir="x")
        for _ in range(3)
    ]
    ids = [job.pk for job in jobs]
    app.conf.task_always_eager = True
    try:
        job_claim_all(ImportJob, ids[:2])
        job_heartbeat(ImportJob, ids[:2])
        sent = jobs_reap()
    finally:
        app.conf.task_always_eager = False
    assert sent["exchange.ImportJob"] == 1  # the third, still queued
    statuses = dict(ImportJob.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert [statuses[pk] for pk in ids[:2]] == ["running", "running"]
    assert not job_claim(ImportJob, ids[0])  # alive: nobody takes it over


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_survives_database_errors(project, author, monkeypatch):
    """Issue 45, item 4: a write lock held past its timeout (SQLite's "database is locked")
    made the thread's first failed update end it, so a live job went silent and the reaper
    could hand it to a second worker. The failures are the database's, injected here."""
    import time

    from django.db import OperationalError

    from hilbench_annotate import jobs

    job = ImportJob.objects.create(project=project, kind="bird", created_by=author, upload_dir="x")
    job_claim(ImportJob, job.pk)
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    real, calls = jobs.job_heartbeat, []

    def locked_twice(model, pk, **fields):
        calls.append(pk)
        if len(calls) <= 2:
            raise OperationalError("database is locked")
        real(model, pk, **fields)

    monkeypatch.setattr(jobs, "job_heartbeat", locked_twice)
    with jobs.job_heartbeat_while(ImportJob, job.pk, every_s=0.2):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.heartbeat_at > timezone.now() - timedelta(minutes=1):
                break
            time.sleep(0.1)
    assert len(calls) >= 3  # two failed beats, then it went on
    assert job.heartbeat_at > timezone.now() - timedelta(minutes=1)
