"""A worker killed in the middle of a validation run: another worker finishes the run, and
every check has exactly one result."""

import os
import signal
import time
from pathlib import Path

import pytest
from django.conf import settings

from hilbench_annotate.jobs import jobs_reap
from validators.models import ValidationRun
from validators.services import validation_run_start

from .conftest import slow_swe_task, start_worker

STALE_S = 4


def _start_worker(broker, log_path):
    env = {"HILBENCH_VALIDATION_STALE_S": str(STALE_S), "HILBENCH_VISIBILITY_TIMEOUT_S": "5"}
    return start_worker(broker, log_path, env=env)


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killed_worker_mid_run_leaves_one_result_per_check(worker_broker, demo_data, tmp_path):

    settings.VALIDATION_STALE_S = STALE_S
    task = slow_swe_task(demo_data, username="kill-author", sleep_s=3)
    author = task.author

    log = tmp_path / "workers.log"
    first = _start_worker(worker_broker, log)
    try:
        run = validation_run_start(task=task, actor=author, checks=["spec", "swe_tests"])
        # The spec group is stored first; then the worker is inside the slow test run.
        _wait(lambda: run.results.filter(group="spec").exists(), 60, "the first results")
        time.sleep(1)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        run.refresh_from_db()
        assert run.status == "running"  # left behind by the dead worker

        second = _start_worker(worker_broker, log)
        try:
            time.sleep(STALE_S + 1)
            jobs_reap()  # what beat does every minute
            _wait(
                lambda: ValidationRun.objects.get(pk=run.pk).is_finished, 120, "the run to finish"
            )
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    run.refresh_from_db()
    names = list(run.results.values_list("check_name", flat=True))
    assert run.status == "passed", (run.status, run.log, log.read_text()[-3000:])
    assert len(names) == len(set(names)) == 5, names
    assert run.attempts >= 2


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killed_worker_mid_build_leaves_no_half_built_environment(
    worker_broker, demo_data, tmp_path
):
    """The build is taken over by another worker and built again from the start; the
    half-written folder of the dead one never becomes the environment, and the dead
    worker's sandbox does not outlive it."""
    from hilbench_annotate.models import SweEnvironment
    from validators.environments import (
        environment_build_start,
        environment_key,
        ready_environment,
    )
    from validators.models import EnvironmentBuild

    settings.ENVIRONMENT_STALE_S = STALE_S
    task = slow_swe_task(demo_data, username="build-kill-author", sleep_s=0)
    marker = f"kill-build-{time.time_ns()}"  # a key of its own: never built before
    env = SweEnvironment.objects.get(task=task)
    env.environment_spec = {
        **env.environment_spec,
        "install": [f"echo {marker}; sleep 6; echo installed > .installed"],
    }
    env.save()
    key = environment_key(env)
    log = tmp_path / "workers.log"
    extra = {"HILBENCH_ENVIRONMENT_STALE_S": str(STALE_S), "HILBENCH_VISIBILITY_TIMEOUT_S": "5"}
    first = start_worker(worker_broker, log, env=extra)
    try:
        build = environment_build_start(swe_environment=env, actor=task.author)
        _wait(
            lambda: EnvironmentBuild.objects.get(pk=build.pk).step == "install",
            120,
            "the install step",
        )
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        time.sleep(1)
        assert ready_environment(key) is None  # nothing half-built is usable
        sleeping = [
            p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).endswith("sleep 6")
        ]
        assert not sleeping, "the dead worker's build kept running"
        second = start_worker(worker_broker, log, env=extra)
        try:
            time.sleep(STALE_S + 1)
            jobs_reap()
            _wait(lambda: EnvironmentBuild.objects.get(pk=build.pk).is_finished, 180, "the build")
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    build.refresh_from_db()
    assert build.status == "succeeded", (build.error, log.read_text()[-3000:])
    assert build.attempts >= 2
    ready = ready_environment(key)
    assert ready is not None and (ready.testbed / ".installed").read_text() == "installed\n"


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""
