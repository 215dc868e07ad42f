"""A real Celery worker process runs a job the browser started.

Embedded mode: the worker shares the SQLite test database file and a broker file of its
own. CI mode: the PostgreSQL test database and a Redis database of its own.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse

from hilbench_annotate.celery import app as celery_app
from hilbench_annotate.models import ImportJob, Task

from .core.test_views import _bird_upload_files, _upload

ROOT = Path(__file__).resolve().parents[1]


def _worker_env(broker: str) -> dict[str, str]:
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        # Worker and web share the stores, as they do on a deployment (shared volume).
        "HILBENCH_UPLOAD_STORE": str(settings.UPLOAD_STORE),
        "HILBENCH_DATABASE_STORE": str(settings.DATABASE_STORE),
        "HILBENCH_REPOSITORY_STORE": str(settings.REPOSITORY_STORE),
    }
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["HILBENCH_SQLITE_PATH"] = str(db["NAME"])
    else:
        user = f"{db['USER']}@" if db.get("USER") else ""
        host = f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
        env["DATABASE_URL"] = f"postgres://{user}{host}/{db['NAME']}"
    return env


@pytest.fixture
def worker_broker(tmp_path, monkeypatch):
    if settings.EMBEDDED_BROKER:
        broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}"
    else:
        broker = settings.CELERY_BROKER_URL.rsplit("/", 1)[0] + "/15"
    previous = celery_app.conf.broker_url
    # Celery reads CELERY_BROKER_URL from the environment before its own config.
    monkeypatch.setenv("CELERY_BROKER_URL", broker)
    _use_broker(broker)
    yield broker
    monkeypatch.undo()
    _use_broker(previous)


def _use_broker(url: str) -> None:
    """Point this process's producer at ``url``; Celery caches its pools, so drop them."""
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url


@pytest.mark.django_db(transaction=True)
def test_real_worker_process_runs_a_browser_import(client, worker_broker, demo_data, tmp_path):
    from .factories import MembershipFactory, ProjectFactory, UserFactory

    project = ProjectFactory()
    author = UserFactory(username="worker-author")
    MembershipFactory(project=project, user=author, role="author")
    questions, databases = _bird_upload_files(demo_data)
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 - closed in finally
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "hilbench_annotate",
            "worker",
            "--pool=solo",
            "--loglevel=info",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=_worker_env(worker_broker),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        client.force_login(author)
        client.post(
            reverse("import-list"),
            {
                "kind": "bird",
                "project": project.pk,
                "questions": _upload("dev.json", questions),
                "databases": _upload("dbs.zip", databases),
            },
        )
        job = ImportJob.objects.get()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.is_finished:
                break
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        log.close()
    output = (tmp_path / "worker.log").read_text()
    assert job.status == "succeeded", f"{job.status}: {job.error}\n{output[-3000:]}"
    assert Task.objects.filter(project=project).count() == 6
    # The worker says which database and broker it uses.
    assert "HiL-Bench Annotate mode:" in output
