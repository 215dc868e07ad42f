"""A real Celery worker process runs a job the browser started.

Embedded mode: the worker shares the SQLite test database file and a broker file of its
own. CI mode: the PostgreSQL test database and a Redis database of its own.
"""

import os
import subprocess
import sys
import time

import pytest
from django.urls import reverse

from exchange.models import ImportJob
from hilbench_annotate.models import Task

from .conftest import ROOT, start_worker
from .core.test_views import _bird_upload_files, _upload


def test_a_worker_on_the_embedded_broker_looks_for_jobs_twenty_times_a_second(tmp_path):
    """kombu's SQLAlchemy transport looks once a second by default: each queued job waited
    up to a second, ten jobs sent at once some 4 s for the last (bench/vs_label_studio.py)."""
    probe = (
        "import django; django.setup()\n"
        "from hilbench_annotate.celery import app\n"
        "with app.connection_for_read() as connection:\n"
        "    print(type(connection.transport).__module__, connection.transport.polling_interval)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL",)}
    env.update(
        DJANGO_SETTINGS_MODULE="hilbench_annotate.settings",
        DJANGO_DEBUG="1",
        HILBENCH_VAR_DIR=str(tmp_path),
    )
    for extra, expected in (({}, "0.05"), ({"HILBENCH_BROKER_POLL_S": "0.5"}, "0.5")):
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env={**env, **extra},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[-2:] == ["kombu.transport.sqlalchemy", expected], done.stdout


@pytest.mark.django_db(transaction=True)
def test_real_worker_process_runs_a_browser_import(client, worker_broker, demo_data, tmp_path):
    from .factories import MembershipFactory, ProjectFactory, UserFactory

    project = ProjectFactory()
    author = UserFactory(username="worker-author")
    MembershipFactory(project=project, user=author, role="author")
    questions, databases = _bird_upload_files(demo_data)
    worker = start_worker(worker_broker, tmp_path / "worker.log")
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
    output = (tmp_path / "worker.log").read_text()
    assert job.status == "succeeded", f"{job.status}: {job.error}\n{output[-3000:]}"
    assert Task.objects.filter(project=project).count() == 6
    # The worker says which database and broker it uses.
    assert "HiL-Bench Annotate mode:" in output


@pytest.mark.django_db(transaction=True)
def test_real_worker_runs_a_model_run_with_concurrent_passes(
    worker_broker, demo_data, tmp_path, settings
):
    """A built-in run with an endpoint of concurrency 2: passes run on two threads of the
    worker, each with its own database connection, and every pass is stored once."""
    from evaluation.models import EvaluationRun, TaskPass
    from evaluation.services import endpoint_create, evaluation_run_start
    from exchange.importers import import_bird

    from .evaluation.conftest import ScriptedServer, tool_call
    from .factories import MembershipFactory, ProjectFactory, UserFactory

    project = ProjectFactory()
    lead = UserFactory(username="worker-lead")
    MembershipFactory(project=project, user=lead, role="lead")
    import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=demo_data["sql"]["databases"],
        actor=lead,
        limit=3,
    )
    server = ScriptedServer()
    server.script = [tool_call("submit_sql", {"query": "SELECT 1"})] * 12
    # The stand-in endpoint is on loopback: the operator allows it by name (here and in the
    # worker's environment).
    settings.MODEL_ENDPOINT_HOSTS = ["127.0.0.1"]
    endpoint = endpoint_create(
        project=project, actor=lead, name="e", base_url=server.url, model="m", concurrency=2
    )
    worker = start_worker(
        worker_broker, tmp_path / "worker.log", env={"HILBENCH_MODEL_ENDPOINT_HOSTS": "127.0.0.1"}
    )
    try:
        run = evaluation_run_start(
            project=project,
            actor=lead,
            endpoint=endpoint,
            task_ids=list(project.tasks.values_list("pk", flat=True)),
            modes=["baseline", "full_info"],
            passes=2,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.is_finished:
                break
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        server.close()
    output = (tmp_path / "worker.log").read_text()
    assert run.status == EvaluationRun.Status.SUCCEEDED, f"{run.error}\n{output[-3000:]}"
    assert run.done == run.total == 12
    assert TaskPass.objects.filter(run=run).count() == 12
    assert not TaskPass.objects.filter(run=run).exclude(error="").exists()
    assert len(server.requests) == 12


@pytest.mark.django_db(transaction=True)
def test_a_job_keeps_its_database_connection_as_a_request_does():
    """Celery's Django fixup closed every connection before and after each job: each export
    chunk paid a new PostgreSQL backend. Now a job keeps a request's lifecycle: the fixup
    leaves the connection open, and it is closed only when it is older than CONN_MAX_AGE (or
    broken), before or after a job run by a worker, never around one run eagerly."""
    from celery.fixups.django import DjangoWorkerFixup
    from celery.signals import task_postrun, task_prerun
    from django.db import connection

    from exchange.tasks import export_chunk_job
    from hilbench_annotate.celery import app

    def around_a_job(task) -> None:
        """What a worker sends before and after a job (the fixup's handlers and ours)."""
        DjangoWorkerFixup(app).on_task_prerun(sender=task)
        task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
        task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={}, retval=None)
        DjangoWorkerFixup(app).on_task_postrun(sender=task)

    connection.ensure_connection()
    kept = connection.connection
    around_a_job(export_chunk_job)
    assert connection.connection is kept
    with connection.cursor() as cursor:  # and it still answers
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)

    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
    export_chunk_job.push_request(is_eager=True)
    try:
        around_a_job(export_chunk_job)
        assert connection.connection is kept  # an eager job is its caller's: left alone
    finally:
        export_chunk_job.pop_request()
    around_a_job(export_chunk_job)
    assert connection.connection is None
