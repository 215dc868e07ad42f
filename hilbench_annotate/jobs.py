"""One kit for every long job: imports, exports, validation runs, model runs, studies…

A job is a row in our database (a subclass of the abstract ``Job``) whose status says whether
it is queued, running or finished; the broker only carries a message saying "run row N". A
message can be lost — Redis restarted without persistence, a send failed while it was down —
and a worker can die mid-job. The database, not the broker, is the truth:

- ``job_send`` schedules the job's Celery task once the caller's transaction commits;
- the task (base ``JobTask``, named ``<entity>_job``) calls the service (``<entity>_execute``),
  which first ``job_claim``s the row with one conditional update, so a job sent twice runs
  once; it reports progress with ``job_heartbeat`` and ends with ``job_finish``;
- a crash marks the row failed (``JobTask.on_failure`` → ``job_fail``), never left "running";
- the beat's ``jobs_reap`` re-sends every job still queued after ``JOB_REDISPATCH_S`` and every
  running job whose worker stopped reporting, and gives up after ``JOB_MAX_ATTEMPTS``.

Apps register their kinds of job in ``AppConfig.ready`` (``register``).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from celery import Task as CeleryTask
from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connection, models, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from hilbench_annotate.celery import app as celery_app

_log = logging.getLogger(__name__)

ERROR_LIMIT = 4000


class Job(models.Model):
    """What every long job has: a status the worker claims, progress, its error, a heartbeat
    the reaper reads, which worker holds it and how many times it was taken."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    FINISHED: tuple[str, ...] = (Status.SUCCEEDED, Status.FAILED)
    # The status a crash, or the reaper giving up, leaves.
    CRASHED: str = Status.FAILED

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the worker running it"
    )
    worker = models.CharField(max_length=200, blank=True, help_text="Host of the last claim")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker claimed it")

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


@dataclass(frozen=True)
class JobKind:
    model: str  # "app_label.ModelName"
    task: str  # the Celery task's name
    id_kwarg: str  # its keyword argument carrying the row id
    stale_setting: str  # seconds without a heartbeat after which the worker counts as dead
    noun: str  # what the job is called in messages ("import", "validation run")

    @property
    def model_class(self) -> type[Job]:
        return apps.get_model(self.model)

    @property
    def stale_after(self) -> timedelta:
        return timedelta(seconds=getattr(settings, self.stale_setting))


KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> None:
    KINDS[kind.model] = kind


def kind_of(model: type[Job]) -> JobKind:
    return KINDS[model._meta.label]


def _kind_of_task(name: str) -> JobKind:
    return next(kind for kind in KINDS.values() if kind.task == name)


_TASK_MODULES_LOCK = threading.Lock()


def _task(kind: JobKind):
    """The kind's Celery task, its app's tasks module imported first (in a web process too).

    Celery's autodiscovery returns at once, importing nothing, to a thread that calls it while
    another thread is inside it (its ``_RACE_PROTECTION`` flag), so the threads of a web server
    sending their first jobs at the same time take turns here.
    """
    if kind.task not in celery_app.tasks:
        with _TASK_MODULES_LOCK:
            celery_app.loader.import_default_modules()
    return celery_app.tasks[kind.task]


def job_send(job: Job) -> None:
    """Send the job's task once the caller's transaction commits.

    ``robust``: with the broker down the job is still stored (queued) and the request still
    succeeds; the reaper sends it once the broker is back.
    """
    kind = kind_of(type(job))
    pk = job.pk
    transaction.on_commit(lambda: _task(kind).delay(**{kind.id_kwarg: pk}), robust=True)


def job_claim(model: type[Job], pk: int) -> bool:
    """queued → running, or take over a running job whose worker went silent: one conditional
    update, so a job delivered twice runs once. False: finished, or another worker holds it."""
    now = timezone.now()
    silent = now - kind_of(model).stale_after
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, heartbeat_at__lt=silent)
    return bool(
        model.objects.filter(claimable, pk=pk).update(
            status=Job.Status.RUNNING,
            started_at=Coalesce(F("started_at"), Value(now)),
            heartbeat_at=now,
            worker=socket.gethostname()[:200],
            attempts=F("attempts") + 1,
        )
    )


def job_claim_all(model: type[Job], pks: list[int]) -> None:
    """Claim queued jobs this process will run itself, one after the other (an export's
    chunks when the command writes it): all of them at once, so the reaper — which re-sends
    a job queued too long — leaves them to it. Keep them alive with ``job_heartbeat_while``."""
    now = timezone.now()
    model.objects.filter(pk__in=pks, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        worker=socket.gethostname()[:200],
        attempts=F("attempts") + 1,
    )


# A request that waits for a job (``job_wait``, the API's ``?wait=``) holds a thread of a web
# process: at most this long, then the client asks again.
JOB_WAIT_MAX_S = 30.0
JOB_WAIT_STEP_S = 0.05


def job_wait(job: Job, seconds: float) -> bool:
    """Wait up to ``seconds`` (at most ``JOB_WAIT_MAX_S``) for ``job`` to finish; whether it
    has (or is gone). Its status alone is read every ``JOB_WAIT_STEP_S``: a client follows a
    job with a request a half-minute rather than polling, and each look costs one read by
    primary key instead of a request (authentication, the job and its serializer)."""
    if job.is_finished:
        return True
    model = type(job)
    deadline = time.monotonic() + max(0.0, min(seconds, JOB_WAIT_MAX_S))
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(JOB_WAIT_STEP_S, left))
        status = model.objects.filter(pk=job.pk).values_list("status", flat=True).first()
        if status is None or status in model.FINISHED:
            return True
    return False


def job_heartbeat(model: type[Job], pk: int | list[int], **fields) -> None:
    """A sign of life (of one job, or of each of a list), with any progress fields
    (``done=…``) to store with it."""
    rows = model.objects.filter(pk__in=pk) if isinstance(pk, list) else model.objects.filter(pk=pk)
    rows.update(heartbeat_at=timezone.now(), **fields)


@contextlib.contextmanager
def job_heartbeat_while(model: type[Job], pk: int | list[int], *, every_s: float = 10.0):
    """Heartbeats from a thread while the caller blocks on one long step (a package install),
    or runs a list of jobs it claimed (``job_claim_all``): the jobs' stale time can then stay
    short, so a dead worker's job is taken over soon."""
    stop = threading.Event()

    def beat() -> None:
        # A database error (a write lock held past its timeout, a dropped connection) costs
        # one beat, never the rest: the thread retries soon on a fresh connection, so the
        # reaper does not hand a live job to a second worker.
        wait = every_s
        try:
            while not stop.wait(wait):
                try:
                    job_heartbeat(model, pk)
                    wait = every_s
                except DatabaseError as exc:
                    _log.warning("heartbeat of %s %s failed, retrying: %s", model.__name__, pk, exc)
                    connection.close()
                    wait = min(every_s, 1.0)
        finally:
            connection.close()  # this thread's own database connection

    thread = threading.Thread(target=beat, daemon=True, name=f"heartbeat-{pk}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every_s + 5)


def job_finish(model: type[Job], pk: int, *, status: str | None = None, **fields) -> bool:
    """Finish the job (succeeded unless ``status`` says otherwise), unless it already finished."""
    now = timezone.now()
    return bool(
        model.objects.filter(pk=pk)
        .exclude(status__in=model.FINISHED)
        .update(status=status or Job.Status.SUCCEEDED, finished_at=now, heartbeat_at=now, **fields)
    )


def job_cancel_queued(model: type[Job], pk: int, error: str) -> bool:
    """Fail a job no worker has claimed yet (a cancel before it started), in one update, so a
    worker cannot claim it in between: it claims queued jobs only. False if it was taken."""
    return bool(
        model.objects.filter(pk=pk, status=Job.Status.QUEUED).update(
            status=model.CRASHED, error=error[:ERROR_LIMIT], finished_at=timezone.now()
        )
    )


def job_fail(model: type[Job], pk: int, error: str) -> None:
    """Mark the job crashed with its reason, unless it already finished."""
    model.objects.filter(pk=pk).exclude(status__in=model.FINISHED).update(
        status=model.CRASHED, error=error[:ERROR_LIMIT], finished_at=timezone.now()
    )


class JobTask(CeleryTask):
    """The base of every job's Celery task: a crash marks the job's row failed, so nothing
    stays "running". Tasks using it are ``acks_late`` because their service is idempotent."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        kind = _kind_of_task(self.name)
        job_fail(kind.model_class, kwargs[kind.id_kwarg], f"The {kind.noun} crashed: {exc!r}")


def jobs_reap() -> dict[str, int]:
    """Re-send lost jobs of every registered kind; returns how many were re-sent, per kind.

    A job whose worker died ``JOB_MAX_ATTEMPTS`` times is failed instead of sent again.
    """
    now = timezone.now()
    queued_before = now - timedelta(seconds=settings.JOB_REDISPATCH_S)
    sent = {}
    for kind in KINDS.values():
        model = kind.model_class
        silent = now - kind.stale_after
        lost = model.objects.filter(
            Q(status=Job.Status.QUEUED, created_at__lt=queued_before)
            | Q(status=Job.Status.RUNNING, heartbeat_at__lt=silent)
            | Q(status=Job.Status.RUNNING, heartbeat_at__isnull=True, started_at__lt=silent)
        ).values_list("pk", "attempts")
        resent = 0
        for pk, attempts in list(lost[:500]):
            if attempts >= settings.JOB_MAX_ATTEMPTS:
                job_fail(model, pk, f"Gave up after {attempts} attempts: the worker kept dying.")
            else:
                _task(kind).delay(**{kind.id_kwarg: pk})
                resent += 1
        sent[kind.model] = resent
    return sent
