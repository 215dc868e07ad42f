"""Faults, and the recovery from each: nothing lost, nothing done twice.

- A worker killed in the middle of a job: ``tests/test_worker_kill.py`` (another worker
  finishes the validation run; one result per check).
- Redis restarted (no persistence) while jobs are queued and running: the broker forgets
  them, the beat reaper sends them again from the database, each runs once.
- The database connection of the web process dropped in the middle of a save, or while it
  sat idle between two saves: the save is refused whole (503, a clear message) and the
  retry stores it; every accepted save is one revision, numbers without gap or repeat.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest
from django.conf import settings
from django.db import connection, transaction

from exchange.importers import import_bird
from hilbench_annotate.models import Revision, Task, TaskEvent
from validators.models import ValidationRun
from validators.services import validation_run_start

from .conftest import (
    _use_broker,
    free_port,
    slow_swe_task,
    start_web,
    start_worker,
    worker_env,
)
from .factories import MembershipFactory, ProjectFactory, UserFactory


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# --- Redis restart --------------------------------------------------------------------------


class PrivateRedis:
    """A redis-server of the test's own, as CI runs it: no RDB, no AOF — a restart forgets
    every queued and every unacknowledged message."""

    def __init__(self, directory) -> None:
        self.port = free_port()
        self.directory = directory
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait(self.answers, 10, "redis-server to answer")

    def answers(self) -> bool:
        import redis

        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.RedisError:
            return False

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()  # a crash, not a clean shutdown
            self.proc.wait(timeout=10)

    def queued(self) -> int:
        """Messages waiting in Redis: the default queue plus the unacknowledged ones."""
        import redis

        client = redis.Redis(port=self.port)
        return client.llen("celery") + client.hlen("unacked")


@pytest.fixture
def private_redis(tmp_path, monkeypatch):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path)
    previous = settings.CELERY_BROKER_URL
    monkeypatch.setenv("CELERY_BROKER_URL", server.url)
    _use_broker(server.url)
    yield server
    monkeypatch.undo()
    _use_broker(previous)
    server.kill()


STALE_S = 4


def _start_worker(broker: str, tmp_path, log_path) -> subprocess.Popen:
    """One worker with beat inside it, reaping every second (a run is stale after 4 s)."""
    env = {
        "HILBENCH_VALIDATION_STALE_S": str(STALE_S),
        "HILBENCH_JOB_REDISPATCH_S": str(STALE_S),
        "HILBENCH_REAP_INTERVAL_S": "1",
    }
    return start_worker(broker, log_path, env=env, beat_schedule=tmp_path / "beat-schedule")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_redis_restart_loses_no_job_and_runs_none_twice(private_redis, demo_data, tmp_path):
    """What "queued" means: a run is queued when its row is committed with status queued;
    the Redis message only wakes a worker. Redis without persistence forgets the waiting
    and the unacknowledged messages when it restarts, so the beat reaper sends again every
    run queued longer than JOB_REDISPATCH_S (and every running run whose heartbeat is older
    than VALIDATION_STALE_S); the claim is a conditional update and results are unique per
    (run, check), so a job sent twice runs once. A run started while Redis is down is stored
    all the same (the send after commit is robust) and reaches the worker the same way."""
    task = slow_swe_task(demo_data, username="redis-author", sleep_s=1)
    author = task.author

    log = tmp_path / "worker.log"
    worker = _start_worker(private_redis.url, tmp_path, log)
    try:
        with transaction.atomic():
            runs = [
                validation_run_start(task=task, actor=author, checks=["spec", "swe_tests"])
                for _ in range(4)
            ]
        ids = [r.pk for r in runs]
        _wait(
            lambda: ValidationRun.objects.filter(pk__in=ids, status="running").exists(),
            60,
            "a run to start",
        )
        waiting = ValidationRun.objects.filter(pk__in=ids, status="queued").count()
        assert waiting >= 1, "every run started before the restart; nothing was queued"

        private_redis.kill()
        # Started while Redis is down: stored, the request does not fail.
        started = time.monotonic()
        ids.append(validation_run_start(task=task, actor=author, checks=["spec"]).pk)
        send_s = time.monotonic() - started
        private_redis.start()
        assert private_redis.queued() == 0  # the restart forgot every message

        _wait(
            lambda: (
                not ValidationRun.objects.filter(pk__in=ids)
                .exclude(status__in=ValidationRun.FINISHED)
                .exists()
            ),
            180,
            "every run to finish",
        )
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
    output = log.read_text()
    for run in ValidationRun.objects.filter(pk__in=ids):
        names = list(run.results.values_list("check_name", flat=True))
        assert run.status == "passed", (run.pk, run.status, run.log, output[-3000:])
        assert len(names) == len(set(names)), (run.pk, names)
        assert len(names) == (5 if "swe_tests" in run.checks else 3), (run.pk, names)
        finished = TaskEvent.objects.filter(kind="validation_finished", data__run=run.pk)
        assert finished.count() == 1, (run.pk, finished.count())
    assert waiting + 1 <= len(ids)
    assert send_s < 30, f"starting a run with Redis down took {send_s:.1f} s"
    # The reaper did the recovering (beat ran inside the worker).
    assert "jobs.reap" in output


# --- database connection dropped during a save ----------------------------------------------

APP_NAME = "hilbench-faults-web"


def _admin_connection():
    """A connection of the test's own to terminate the web server's backends."""
    import psycopg

    db = connection.settings_dict
    return psycopg.connect(
        dbname=db["NAME"],
        user=db.get("USER") or None,
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        password=db.get("PASSWORD") or None,
        autocommit=True,
    )


def _start_web(tmp_path) -> tuple[subprocess.Popen, str]:
    env = worker_env(settings.CELERY_BROKER_URL)
    env["PGAPPNAME"] = APP_NAME  # so the test can find the server's connections
    return start_web(tmp_path, env)


@pytest.mark.django_db(transaction=True)
def test_database_connection_dropped_during_a_save(client, demo_data, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("drops the web server's PostgreSQL connection (pg_terminate_backend)")
    import requests

    project = ProjectFactory()
    author = UserFactory(username="db-fault-author")
    MembershipFactory(project=project, user=author, role="author")
    import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=demo_data["sql"]["databases"],
        actor=author,
        limit=1,
    )
    task = Task.objects.get(project=project)
    first_revision = task.revisions.count()
    client.force_login(author)  # a session in the database, used by the browser below
    http = requests.Session()
    csrf = "faults" * 5 + "ab"  # a 32-character CSRF secret, sent as cookie and header
    http.cookies.set("sessionid", client.cookies["sessionid"].value)
    http.cookies.set("csrftoken", csrf)
    admin = _admin_connection()
    web, base = _start_web(tmp_path)
    state = {"version": task.version, "refused": 0, "accepted": []}

    def save(text: str) -> None:
        """What the page does: post the form; on 503 post it again, unchanged."""
        for _ in range(5):
            response = http.post(
                f"{base}/tasks/{task.pk}/edit/save/",
                data={
                    "expected_version": state["version"],
                    "spec.question": text,
                    "spec.evidence": "",
                },
                headers={"X-CSRFToken": csrf, "HX-Request": "true"},
                timeout=60,
            )
            if response.status_code == 503:
                assert "connection to the database was lost" in response.text
                assert "Nothing of this save was stored" in response.text
                state["refused"] += 1
                continue
            assert response.status_code == 200, (response.status_code, response.text[:500])
            revision = int(re.search(r"revision (\d+)", response.text).group(1))
            state["version"] = int(
                re.search(r'name="expected_version" value="(\d+)"', response.text).group(1)
            )
            state["accepted"].append((text, revision))
            return
        raise AssertionError("the save never got through")

    def kill_mid_save(text: str) -> None:
        """Hold the revision table, let the save block on its INSERT (the task row already
        updated in its transaction), terminate that backend, then let go."""
        lock = _admin_connection()
        lock.autocommit = False
        lock.execute(f'LOCK TABLE "{Revision._meta.db_table}" IN SHARE MODE')
        saving = threading.Thread(target=save, args=(text,))
        saving.start()
        pid = None
        deadline = time.monotonic() + 30
        while pid is None and time.monotonic() < deadline:
            row = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
                "AND wait_event_type = 'Lock' AND query ILIKE %s",
                (APP_NAME, f'INSERT INTO "{Revision._meta.db_table}"%'),
            ).fetchone()
            pid = row[0] if row else None
            time.sleep(0.05)
        assert pid, "the save never reached its revision insert"
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        lock.rollback()
        lock.close()
        saving.join(timeout=60)

    def kill_idle_connections() -> int:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (APP_NAME,),
        ).fetchall()
        return len(rows)

    try:
        for i in range(8):
            text = f"Which loans count, edit {i}?"
            if i in (2, 5):
                kill_mid_save(text)
            elif i in (3, 6):
                assert kill_idle_connections() >= 1
                refused = state["refused"]
                save(text)
                # Health checks replace the dropped kept connection: no refusal at all.
                assert state["refused"] == refused
            else:
                save(text)
    finally:
        web.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            web.wait(timeout=30)
        admin.close()

    assert state["refused"] == 2, (state, (tmp_path / "web.log").read_text()[-3000:])
    assert [text for text, _ in state["accepted"]] == [
        f"Which loans count, edit {i}?" for i in range(8)
    ]
    revisions = list(task.revisions.order_by("number").values_list("number", "snapshot"))
    numbers = [n for n, _ in revisions]
    assert numbers == list(range(1, len(numbers) + 1))  # no gap, no repeat
    assert len(numbers) == first_revision + 8
    stored = [s["blocked_spec"]["question"] for _, s in revisions[first_revision:]]
    assert stored == [text for text, _ in state["accepted"]]  # each save once, in order
    assert [n for _, n in state["accepted"]] == numbers[first_revision:]
    task.refresh_from_db()
    assert task.blocked_spec["question"] == "Which loans count, edit 7?"
    assert revisions[-1][1]["version"] == task.version
