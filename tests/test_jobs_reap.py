"""The reaper re-sends jobs the broker lost: queued too long, or running with a silent
worker; a job delivered twice still runs once."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import EvaluationRun, TaskPass
from evaluation.services import results_import_start
from hilbench_annotate.celery import app
from hilbench_annotate.jobs import jobs_reap


@pytest.fixture
def eager():
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def lost_run(project, lead, author, tmp_path):
    return _queued_import_run(project, lead, author, tmp_path)


def _queued_import_run(project, lead, author, tmp_path):
    from exchange.demo.blocked_task import DEMO_BLOCKERS
    from hilbench_annotate import services as core
    from tests.factories import TaskFactory

    task = TaskFactory(project=project, author=author)
    core.blocker_create(task=task, actor=author, expected_version=task.version, **DEMO_BLOCKERS[0])
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"task": task.pk, "mode": "baseline", "pass": 1, "resolved": True}))
    # Queued, and its message never reaches a worker (on_commit never fires in this test).
    (run,) = results_import_start(project=project, actor=lead, path=path, model_name="m")
    return run


def test_a_queued_job_is_resent_only_once_it_is_overdue(lost_run, eager, settings):
    settings.JOB_REDISPATCH_S = 300
    assert jobs_reap()["evaluation.EvaluationRun"] == 0
    EvaluationRun.objects.filter(pk=lost_run.pk).update(
        created_at=timezone.now() - timedelta(seconds=301)
    )
    assert jobs_reap()["evaluation.EvaluationRun"] == 1
    lost_run.refresh_from_db()
    assert lost_run.status == "succeeded", lost_run.error
    assert TaskPass.objects.filter(run=lost_run).count() == 1
    # Finished: nothing more to send, and a late duplicate delivery does nothing.
    assert jobs_reap()["evaluation.EvaluationRun"] == 0
    from evaluation.services import evaluation_run_execute

    evaluation_run_execute(run_id=lost_run.pk)
    assert TaskPass.objects.filter(run=lost_run).count() == 1


def test_a_running_job_with_a_silent_worker_is_taken_over(lost_run, eager, settings):
    settings.EVALUATION_STALE_S = 1800
    now = timezone.now()
    # A worker claimed it, then died: still "running", its heartbeat old.
    EvaluationRun.objects.filter(pk=lost_run.pk).update(
        status="running", heartbeat_at=now - timedelta(seconds=60)
    )
    assert jobs_reap()["evaluation.EvaluationRun"] == 0  # still fresh: leave it alone
    EvaluationRun.objects.filter(pk=lost_run.pk).update(heartbeat_at=now - timedelta(hours=1))
    assert jobs_reap()["evaluation.EvaluationRun"] == 1
    lost_run.refresh_from_db()
    assert lost_run.status == "succeeded", lost_run.error
    assert TaskPass.objects.filter(run=lost_run).count() == 1


def test_every_long_job_kind_is_registered_with_a_job_task():
    from celery import Task as CeleryTask

    from hilbench_annotate.jobs import KINDS, JobTask

    assert set(KINDS) >= {
        "exchange.ImportJob",
        "exchange.ExportJob",
        "validators.ValidationRun",
        "evaluation.EvaluationRun",
        "evaluation.SupportStudy",
        "evaluation.LabellingRun",
    }
    app.loader.import_default_modules()
    for kind in KINDS.values():
        task = app.tasks[kind.task]
        assert isinstance(task, CeleryTask) and isinstance(task, JobTask), kind.task
        assert task.acks_late, kind.task


@pytest.mark.django_db(transaction=True)
def test_a_run_beats_while_its_worker_is_busy_so_its_stale_time_can_be_short(
    project, lead, author, tmp_path, settings, monkeypatch
):
    """Issue 45, item 3: a run's heartbeat came only with each stored pass, so its stale time
    had to be half an hour and a killed worker's Harbor run waited that long. It now beats
    from a thread the whole time its worker lives: through one step far longer than the
    beat (a slow export or model call, a sleep here), the heartbeat stays fresh."""
    import time

    from evaluation.services import runs

    settings.JOB_HEARTBEAT_S = 0.2
    run = _queued_import_run(project, lead, author, tmp_path)
    seen = []
    real = runs.imported_run_store

    def slow_store(run):
        for _ in range(8):  # 1.6 s in one step, no pass stored meanwhile
            time.sleep(0.2)
            seen.append(EvaluationRun.objects.get(pk=run.pk).heartbeat_at)
        real(run)

    monkeypatch.setattr(runs, "imported_run_store", slow_store)
    runs.evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert len(set(seen)) >= 4  # beaten again and again while the step ran
    assert settings.EVALUATION_STALE_S <= 300  # taken over within minutes of a worker's death
