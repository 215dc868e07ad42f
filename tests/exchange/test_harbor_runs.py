"""Issue 29: agent runs the app drives in Harbor, in real containers.

A lead's run (``harbor_run_start``) is a job: the worker exports the tasks, runs Harbor over
them, imports each trial as it finishes. The reference agents (scripted, no model) run on the
demo's blocked SQL and SWE tasks and on a blocked task built from a pytest SWE-bench
instance: the oracle scores 1 and the no-op 0 in every mode, asking every trigger gives
Ask-F1 1, the spammer resolves nothing; the benchmark report flags nothing. A worker killed
mid-run loses no finished trial, and the run, taken over, completes without duplicates.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from evaluation.models import EvaluationRun, TaskPass
from evaluation.selectors import reference_report
from evaluation.services import evaluation_run_execute, harbor_run_start
from hilbench_annotate.jobs import Job

from .bundle_helpers import plant_pytest_7432, plant_swe, seed_demo, sql_task, user
from .test_harbor_trials import _harbor_or_skip

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.containers]
MODES = ["baseline", "ask_human", "full_info"]


@pytest.fixture
def harbor_settings(settings, tmp_path):
    settings.HARBOR_RUNS_DIR = tmp_path / "harbor-runs"
    settings.HARBOR_CONCURRENCY = 6  # trials mostly wait: six overlap on 2 cores
    settings.HARBOR_POLL_S = 1
    return settings


def _run(project, agent, tasks, passes=1):
    run = harbor_run_start(
        project=project, actor=user("lead"), agent=agent, task_ids=[t.pk for t in tasks],
        modes=MODES, passes=passes,
    )  # fmt: skip
    evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Job.Status.SUCCEEDED, run.error
    return run


def test_the_reference_agents_on_the_demo_tasks(harbor_settings, tmp_path):
    _harbor_or_skip()
    project = seed_demo(harbor_settings, tmp_path)
    tasks = [sql_task(project), plant_swe(project, tmp_path)]
    for agent in ("oracle", "no-op", "asks-every-trigger", "spammer"):
        run = _run(project, agent, tasks)
        passes = list(TaskPass.objects.filter(run=run))
        assert len(passes) == run.total == 6 and run.done == 6
        assert all(p.detail["trial"] for p in passes)
        expected = agent in ("oracle", "asks-every-trigger")
        assert {p.resolved for p in passes} == {expected}, agent
    report = {row["task_id"]: row for row in reference_report(project=project)}
    for task in tasks:
        row = report[task.pk]
        assert row["flags"] == [], row
        agents = row["agents"]
        assert agents["oracle"]["rewards"] == dict.fromkeys(MODES, 1.0)
        assert agents["no-op"]["rewards"] == dict.fromkeys(MODES, 0.0)
        # They never ask: Ask-F1 is not applicable, not 0 (issue 45, item 6).
        assert agents["oracle"]["ask_f1"] is None and agents["oracle"]["asks_nothing"]
        blockers = task.blockers.count()
        assert agents["asks-every-trigger"]["ask_f1"] == 1.0
        assert agents["asks-every-trigger"]["resolutions"] == blockers
        assert agents["spammer"]["resolutions"] == 0 and agents["spammer"]["questions"] == 6
    # Reference agents never count as models: the leaderboard and the gate do not see them.
    from evaluation.selectors import project_passes

    assert project_passes(project=project) == []
    from django.test import Client

    client = Client()
    client.force_login(user("lead"))
    page = client.get(f"/projects/{project.pk}/evaluation/").content.decode()
    assert "asks nothing: Ask-F1 not applicable" in page and "0 resolved of 0 asked" not in page


@pytest.mark.shared_data
def test_the_reference_agents_on_a_blocked_swebench_task(project, author, lead, harbor_settings):
    _harbor_or_skip()
    task = plant_pytest_7432(project, author, harbor_settings.HARBOR_RUNS_DIR.parent)
    for agent, resolved in (("oracle", True), ("no-op", False), ("asks-every-trigger", True),
                            ("spammer", False)):  # fmt: skip
        run = harbor_run_start(project=project, actor=lead, agent=agent, task_ids=[task.pk],
                               modes=MODES, passes=1)  # fmt: skip
        evaluation_run_execute(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == Job.Status.SUCCEEDED, run.error
        assert {p.resolved for p in run.task_passes.all()} == {resolved}, agent
    [row] = reference_report(project=project)
    assert row["flags"] == [] and row["agents"]["asks-every-trigger"]["ask_f1"] == 1.0


WORKER = """
import os, sys
sys.path.insert(0, {root!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
import django
django.setup()
from django.conf import settings
settings.HARBOR_RUNS_DIR = __import__("pathlib").Path({runs!r})
settings.HARBOR_POLL_S = 1
from evaluation.services import evaluation_run_execute
evaluation_run_execute(run_id={run})
"""


def test_a_worker_killed_mid_run_keeps_its_trials_and_the_run_completes(harbor_settings, tmp_path):
    """A real worker process runs the job; it is killed (SIGKILL) once a trial is stored.
    Harbor goes with it. The run, taken over as the reaper would once its heartbeat is old,
    keeps the stored passes, imports what finished meanwhile, runs only what is missing."""
    _harbor_or_skip()
    from django.conf import settings

    from tests.conftest import ROOT, worker_env

    project = seed_demo(harbor_settings, tmp_path)
    task = sql_task(project)
    run = harbor_run_start(project=project, actor=user("lead"), agent="oracle",
                           task_ids=[task.pk], modes=MODES, passes=2)  # fmt: skip
    env = {**worker_env(settings.CELERY_BROKER_URL), "HILBENCH_VAR_DIR": str(settings.VAR_DIR)}
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER.format(root=str(ROOT), runs=str(settings.HARBOR_RUNS_DIR),
                                             run=run.pk)],
        env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while not TaskPass.objects.filter(run=run).exists():
        assert worker.poll() is None, "the worker ended before storing a pass"
        assert time.monotonic() < deadline
        time.sleep(1)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    before = set(TaskPass.objects.filter(run=run).values_list("pk", flat=True))
    assert before
    # Harbor goes with its worker: its guard, told by a parent-death signal, stops it (SIGINT,
    # SIGKILL after its grace) and removes whatever containers of the run are left.
    folder = settings.HARBOR_RUNS_DIR / str(run.pk)
    deadline = time.monotonic() + 240
    while subprocess.run(["pgrep", "-f", str(folder)], capture_output=True).stdout:
        assert time.monotonic() < deadline, "Harbor outlived its worker"
        time.sleep(2)
    assert run_containers(folder) == []
    # The reaper's take-over: the heartbeat is old, the job is claimable again.
    EvaluationRun.objects.filter(pk=run.pk).update(heartbeat_at=run.created_at.replace(year=2000))
    evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Job.Status.SUCCEEDED, run.error
    passes = list(TaskPass.objects.filter(run=run).values_list("pk", "task_id", "mode", "index",
                                                                "detail"))  # fmt: skip
    assert len(passes) == run.total == 6 == run.done
    assert {(t, m, i) for _, t, m, i, _ in passes} == {
        (task.pk, m, i) for m in MODES for i in (1, 2)
    }
    trials = [d["trial"] for *_, d in passes]
    assert len(set(trials)) == 6  # one pass per trial, none twice
    assert before <= {pk for pk, *_ in passes}  # what the killed worker stored is kept


def run_containers(folder) -> list[str]:
    """Containers (running or not) Compose made for a task folder under ``folder``."""
    listing = subprocess.run(
        ["docker", "ps", "-a", "--format",
         '{{.Names}}\t{{.Label "com.docker.compose.project.working_dir"}}'],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    root = str(folder.resolve())
    return [n for n, _, where in (line.partition("\t") for line in listing.splitlines())
            if where.startswith(root)]  # fmt: skip


def test_cancel_stops_the_trials_and_keeps_the_finished_ones(harbor_settings, tmp_path):
    """A lead cancels a running run once a trial is stored: the worker stops Harbor, the run
    ends as cancelled with what finished kept, and no container of the run is left."""
    _harbor_or_skip()
    import threading

    from django.db import connection

    from evaluation.services import evaluation_run_cancel

    project = seed_demo(harbor_settings, tmp_path)
    task = sql_task(project)
    harbor_settings.HARBOR_CONCURRENCY = 1  # one trial at a time: the cancel finds some to stop
    run = harbor_run_start(project=project, actor=user("lead"), agent="oracle",
                           task_ids=[task.pk], modes=MODES, passes=2)  # fmt: skip
    errors = []

    def execute():
        try:
            evaluation_run_execute(run_id=run.pk)
        except Exception as error:  # noqa: BLE001 - reported to the test below
            errors.append(error)
        finally:
            connection.close()

    worker = threading.Thread(target=execute)
    worker.start()
    deadline = time.monotonic() + 600
    while not TaskPass.objects.filter(run=run).exists():
        assert worker.is_alive(), errors or "the run ended before storing a pass"
        assert time.monotonic() < deadline
        time.sleep(1)
    started = time.monotonic()
    evaluation_run_cancel(run=run, actor=user("lead"))
    worker.join(timeout=400)
    assert not worker.is_alive() and not errors, errors
    run.refresh_from_db()
    assert run.status == Job.Status.FAILED and run.error.startswith("Cancelled"), run.error
    kept = TaskPass.objects.filter(run=run).count()
    assert 1 <= kept < 6
    assert time.monotonic() - started < 300
    assert run_containers(harbor_settings.HARBOR_RUNS_DIR / str(run.pk)) == []


def standin_tasks(tasks) -> list[dict]:
    """What the stand-in model knows of each task: its question, its gold query, and the
    first trigger question of its first blocker (or a question of its own)."""
    out = []
    for task in tasks:
        blocker = task.blockers.order_by("pk").first()
        question = (
            blocker.trigger_questions.order_by("pk").first().text
            if blocker
            else "Which table holds the answer?"
        )
        marker = (task.blocked_spec or task.original_spec)["question"][:60]
        out.append({"marker": marker, "gold": task.sql_environment.gold_sql, "question": question})
    return out


def test_terminus_2_runs_with_a_stand_in_model_on_loopback(harbor_settings, tmp_path):
    """Harbor's terminus-2 (no download at run time: it drives the task's terminal through
    tmux, which the bundle's image carries) against a real OpenAI-compatible server the test
    starts: it solves the demo task in full_info, asks one question in ask_human (resolving
    a blocker) and solves it, guesses wrong in baseline. The trajectory comes back."""
    _harbor_or_skip()
    from evaluation.models import ModelEndpoint

    from .standin_model import StandinModel

    project = seed_demo(harbor_settings, tmp_path)
    task = sql_task(project)
    # The relay dials the endpoint under the operator's policy: a loopback model is allowed
    # only when the operator names its host.
    harbor_settings.MODEL_ENDPOINT_HOSTS = ["127.0.0.1"]
    with StandinModel(standin_tasks([task])) as model:
        endpoint = ModelEndpoint.objects.create(
            project=project, name="stand-in", base_url=model.base_url, model="standin",
            created_by=user("lead"),
        )  # fmt: skip
        run = harbor_run_start(project=project, actor=user("lead"), agent="terminus-2",
                               task_ids=[task.pk], modes=MODES, passes=1,
                               endpoint=endpoint)  # fmt: skip
        evaluation_run_execute(run_id=run.pk)
        run.refresh_from_db()
        assert model.requests, "the agent never called the model"
    assert run.status == Job.Status.SUCCEEDED, run.error
    passes = {p.mode: p for p in run.task_passes.select_related("ask_human_run")}
    assert {m: p.resolved for m, p in passes.items()} == {
        "baseline": False, "ask_human": True, "full_info": True,
    }  # fmt: skip
    calls = list(passes["ask_human"].ask_human_run.calls.values_list("blocker_key", flat=True))
    assert calls == [task.blockers.order_by("pk").first().key]
    steps = passes["full_info"].trajectory.steps
    assert any("submit_sql" in json.dumps(step) for step in steps), steps
    # Asked for no asciinema recording (nothing reads it, and a trial cannot install it: each
    # setup spent 35-40 s on fallbacks that could only fail): each trial's setup is its tmux.
    jobs = harbor_settings.HARBOR_RUNS_DIR / str(run.pk) / "jobs"
    for config in jobs.glob("*/*/config.json"):
        agent = json.loads(config.read_text())["agent"]
        assert agent["kwargs"] == {"record_terminal_session": False}, agent
        result = json.loads((config.parent / "result.json").read_text())
        assert result["agent_setup"]["finished_at"], result["agent_setup"]
    assert len(list(jobs.glob("*/*/config.json"))) == len(MODES)


def test_a_release_swe_task_is_scored_in_a_container_of_its_own(
    project, author, lead, harbor_settings, tmp_path
):
    """A release SWE task run by the app: the release's own task.toml would grade in the
    agent's container; the run's verifier is built from the release's prebuilt image, and
    the agent's changes reach it as a patch collected from its container. The oracle scores
    1 and the no-op 0 in every mode, through the generated verifier."""
    _harbor_or_skip()
    from django.core.management import call_command

    from hilbench_annotate.models import Task

    from .bundle_helpers import release_shaped_swe, standin_release_image

    source, image = release_shaped_swe(tmp_path / "release")
    call_command("import_hilbench", str(source / "swe"), project=project.slug)
    task = Task.objects.get(project=project)
    try:
        standin_release_image(tmp_path, image)
        for agent, resolved in (("oracle", True), ("no-op", False)):
            run = harbor_run_start(project=project, actor=lead, agent=agent,
                                   task_ids=[task.pk], modes=MODES, passes=1)  # fmt: skip
            evaluation_run_execute(run_id=run.pk)
            run.refresh_from_db()
            assert run.status == Job.Status.SUCCEEDED, run.error
            assert {p.resolved for p in run.task_passes.all()} == {resolved}, agent
        folder = harbor_settings.HARBOR_RUNS_DIR / str(run.pk) / "bundle" / "swe_0" / "baseline"
        toml = (folder / "task.toml").read_text()
        assert 'environment_mode = "separate"' in toml and "allow_internet = false" in toml
        assert (folder / "tests" / "Dockerfile").read_text().splitlines()[1] == f"FROM {image}"
    finally:
        subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)
