"""Issue 45, items 3-4 acceptance: a worker killed during a Harbor run; the run finishes on
another worker within five minutes, with exactly the passes asked for.

Real Celery workers (solo pool) on the test's broker and database, real Harbor
(``.venv-harbor``) in real containers. The reference oracle runs the demo's blocked SQL task
in two modes, two passes each, one trial at a time (Harbor's order: every mode's first try,
then every mode's second). Once a trial is stored the first worker dies as a dead machine's
does: the worker, its Harbor guard, Harbor and Harbor's Docker calls are stopped at once and
SIGKILLed, so nothing tears a trial down or writes a result for it; the trial Harbor was
running is half made (its folder, no result). A standby worker runs the beat, whose reaper
reads the heartbeat: once it is ``HILBENCH_EVALUATION_STALE_S`` old, the run is sent again
and the standby takes it over. It asks Harbor for the tries never made, each pair's own
number (one ``-k`` for every pair gave a pair missing one pass two trials: 17 trials for 12
passes), and its guard removes the containers the dead Harbor left. Every (task, mode) has
exactly two finished trials, each a pass.
"""

import contextlib
import json
import os
import re
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from evaluation.models import EvaluationRun, ExcludedTry, TaskPass
from evaluation.services import harbor_run_start
from hilbench_annotate.jobs import Job

from ..conftest import start_worker
from ..exchange.bundle_helpers import seed_demo, sql_task, user
from ..exchange.test_harbor_runs import run_containers
from ..exchange.test_harbor_trials import _harbor_or_skip

pytestmark = pytest.mark.django_db(transaction=True)
MODES = ["baseline", "full_info"]
PASSES = 2
STALE_S = 12  # the test's stale time: twelve missed beats (one a second); the reaper every 2 s
LIMIT_S = 300  # the acceptance: finished within five minutes of the kill


def _env(settings) -> dict[str, str]:
    return {
        "HILBENCH_HARBOR_RUNS_DIR": str(settings.HARBOR_RUNS_DIR),
        "HILBENCH_HARBOR_CONCURRENCY": "1",  # one trial at a time: the kill finds one half made
        "HILBENCH_HARBOR_POLL_S": "1",
        "HILBENCH_EVALUATION_STALE_S": str(STALE_S),
        "HILBENCH_JOB_HEARTBEAT_S": "1",
        "HILBENCH_REAP_INTERVAL_S": "2",
    }


def _wait(predicate, timeout: float, what: str, *, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{tail}"
        time.sleep(0.3)


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _tree(pid: int) -> set[int]:
    children, found, todo = _children(), set(), [pid]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo += children.get(current, [])
    return found


def _kill_machine(pid: int) -> set[int]:
    """The worker and every process under it (Harbor's guard, bubblewrap, Harbor, its
    ``docker`` calls) die as a machine's do: all stopped first, so none sees another die
    and cleans up (the guard's parent-death signal, Harbor's SIGTERM teardown), then
    SIGKILLed. The containers live in Docker's daemon, not under the worker: they stay."""
    stopped: set[int] = set()
    while (tree := _tree(pid)) - stopped:
        for each in tree - stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGSTOP)
            stopped.add(each)
    for each in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(each, signal.SIGKILL)
    return stopped


def _trials(jobs: Path) -> tuple[Counter, list[str]]:
    """Finished trials per mode under Harbor's jobs folder, and the half-made ones (a trial
    folder without a result)."""
    finished, half = Counter(), []
    for config in jobs.glob("*/*/config.json"):
        trial = config.parent
        result = trial / "result.json"
        if not result.is_file():
            half.append(trial.name)
            continue
        data = json.loads(result.read_text())
        assert data.get("finished_at"), trial
        # Its task is a link of the dataset, "<task folder>__<mode>" (remade for each run).
        finished[Path(data["task_id"]["path"]).name.rsplit("__", 1)[-1]] += 1
    return finished, half


@pytest.mark.containers
def test_a_killed_workers_harbor_run_finishes_on_another_within_five_minutes(
    settings, tmp_path, worker_broker
):
    _harbor_or_skip()
    settings.HARBOR_RUNS_DIR = tmp_path / "harbor-runs"
    project = seed_demo(settings, tmp_path)
    task = sql_task(project)
    env = _env(settings)
    first_log, second_log = tmp_path / "worker-1.log", tmp_path / "worker-2.log"
    first = start_worker(worker_broker, first_log, env=env)
    second = None
    try:
        run = harbor_run_start(project=project, actor=user("lead"), agent="oracle",
                               task_ids=[task.pk], modes=MODES, passes=PASSES)  # fmt: skip

        def current() -> EvaluationRun:
            return EvaluationRun.objects.get(pk=run.pk)

        _wait(lambda: current().status == Job.Status.RUNNING, 120, "the claim", log=first_log)
        # A standby worker with the beat: its reaper looks every 2 s and leaves a run that
        # beats alone.
        # It runs the trials left two at a time.
        standby = {**env, "HILBENCH_HARBOR_CONCURRENCY": "2"}
        second = start_worker(worker_broker, second_log, env=standby,
                              beat_schedule=tmp_path / "beat-schedule")  # fmt: skip
        _wait(lambda: TaskPass.objects.filter(run=run).exists(), 600, "a pass", log=first_log)
        killed_at = time.monotonic()
        killed = _kill_machine(first.pid)
        first.wait(timeout=10)
        assert len(killed) >= 3  # the worker, the guard, Harbor at least
        stored = set(TaskPass.objects.filter(run=run).values_list("pk", flat=True))
        assert 1 <= len(stored) < len(MODES) * PASSES
        assert current().status == Job.Status.RUNNING and current().attempts == 1

        _wait(lambda: current().attempts == 2, LIMIT_S, "the takeover", log=second_log)
        taken_at = time.monotonic()
        _wait(lambda: current().is_finished, LIMIT_S, "the run to finish", log=second_log)
        finished_at = time.monotonic()
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=60)
    run.refresh_from_db()
    assert run.status == Job.Status.SUCCEEDED, (run.error, second_log.read_text()[-3000:])
    took = {"takeover_s": taken_at - killed_at, "finish_s": finished_at - killed_at}
    print(f"\nkill -> claimed by the standby {took['takeover_s']:.1f} s, "
          f"-> finished {took['finish_s']:.1f} s")  # fmt: skip
    assert took["finish_s"] < LIMIT_S, took
    assert re.search(r"Task evaluation\.run\[[^\]]+\] succeeded", second_log.read_text())

    # Exactly the passes asked for: two finished trials per mode, each a pass, none extra.
    folder = settings.HARBOR_RUNS_DIR / str(run.pk)
    finished, half = _trials(folder / "jobs")
    assert finished == dict.fromkeys(MODES, PASSES), (finished, run.harbor.get("skipped"))
    assert len(half) <= 1, half  # at most the trial the dead Harbor was running
    passes = TaskPass.objects.filter(run=run)
    assert sorted(passes.values_list("mode", "index")) == [
        (mode, i) for mode in MODES for i in range(1, PASSES + 1)
    ]
    assert all(p.resolved for p in passes)
    assert len({p.detail["trial"] for p in passes}) == len(MODES) * PASSES
    assert stored <= set(passes.values_list("pk", flat=True))  # the dead worker's kept
    assert not ExcludedTry.objects.filter(run=run).exists()
    assert (run.done, run.total) == (4, 4)
    # Nothing of the dead Harbor's is left: the standby's guard swept its containers.
    assert run_containers(folder) == []

    # With the defaults a dead worker's run is taken over within five minutes too: it is
    # stale EVALUATION_STALE_S after its last beat at the latest (it beats every
    # JOB_HEARTBEAT_S while its worker lives), the reaper sees it within one interval, and
    # the standby claims it as fast as here (what the takeover took beyond the test's stale
    # time, its 2 s reaper interval included).
    from django.conf import settings as defaults

    reap_s = defaults.CELERY_BEAT_SCHEDULE["reap-lost-jobs"]["schedule"]
    assert defaults.JOB_HEARTBEAT_S * 4 <= defaults.EVALUATION_STALE_S
    worst = defaults.EVALUATION_STALE_S + reap_s + max(0.0, took["takeover_s"] - STALE_S)
    print(f"with the defaults: taken over within {worst:.0f} s, finished within "
          f"{worst + finished_at - taken_at:.0f} s of the kill")  # fmt: skip
    assert worst < LIMIT_S, (defaults.EVALUATION_STALE_S, reap_s, took)


# What Harbor writes for a trial it stopped itself: a worker dies alone (killed, out of
# memory) and its guard, told by a parent-death signal, stops Harbor (SIGINT): each trial
# still running ends in asyncio's cancellation, with a result.json and no reward.
CANCELLED = {"exception_type": "CancelledError", "exception_message": ""}


@pytest.mark.django_db
def test_a_trial_harbor_stopped_when_its_worker_died_is_no_try(sql_task, lead, settings, tmp_path):
    """The run taken over asks for it again: it is neither a pass nor a try left out. Stored
    as an infra error (before), it counted as made, and the pair ended a pass short of what
    was asked, the leaderboard saying 'infra error (CancelledError)'."""
    from evaluation.services.common import task_resolver
    from evaluation.tries import trial_outcome
    from exchange.services import harbor_runs

    from .test_harbor_tries import bundle_task, jobs_folder

    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    run = harbor_run_start(project=sql_task.project, actor=lead, agent="oracle",
                           task_ids=[sql_task.pk], modes=["baseline"], passes=2)  # fmt: skip
    folder = harbor_runs.run_folder(run)
    task_folder = bundle_task(folder / "bundle", sql_task)
    jobs = jobs_folder(folder, task_folder, [
        ("sql_0__baseline__a", "baseline", 1.0, None),
        ("sql_0__baseline__b", "baseline", None, CANCELLED),
    ])  # fmt: skip
    harbor_runs._collect(run, jobs, task_resolver(sql_task.project))
    assert not ExcludedTry.objects.filter(run=run).exists()
    _, made = harbor_runs._stored(run)
    assert made == {(sql_task.pk, "baseline"): 1}  # one try made, one still to make
    why = run.harbor["skipped"]["sql_0__baseline__b"]
    assert why.startswith("stopped by CancelledError") and "not a try" in why
    assert not trial_outcome({"verifier_result": None, "exception_info": CANCELLED}).is_try
