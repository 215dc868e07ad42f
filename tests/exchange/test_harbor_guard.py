"""exchange/harbor_guard.py: what stands between a worker and its ``harbor run``. Real
processes: a stand-in worker that starts the guard and is SIGKILLed, a stand-in Harbor that
ignores SIGINT (as a Harbor stuck in its teardown would), and, where the engine is up, a real
container labelled as Docker Compose labels a trial's."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from exchange.services.harbor_runs import GUARD

# A Harbor stand-in: writes its pid, ignores SIGINT and SIGTERM, starts a grandchild (as
# Harbor starts docker compose) and sleeps.
STUCK = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
    time.sleep(600)
    """
)
# A worker stand-in: starts the guard over the stuck Harbor, says so, sleeps.
WORKER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    guard = subprocess.Popen(
        [sys.executable, "-I", sys.argv[1], "--folder", sys.argv[2], "--grace", "2",
         "--parent", str(os.getpid()), "--", sys.executable, "-c", sys.argv[3], sys.argv[4]],
        start_new_session=True,
    )
    time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose (its parent has not reaped it yet).
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def _wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_a_killed_worker_takes_a_stuck_harbor_and_its_children_with_it(tmp_path):
    pids = tmp_path / "pids"
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(GUARD), str(tmp_path), STUCK, str(pids)],
        start_new_session=True,
    )
    try:
        assert _wait_for(lambda: pids.exists() and pids.read_text(), 20), "Harbor never started"
        harbor, grandchild = map(int, pids.read_text().split())
        time.sleep(1)
        assert _alive(harbor) and _alive(grandchild)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        # SIGINT is ignored; after the 2 s grace the guard SIGKILLs Harbor's whole group.
        assert _wait_for(lambda: not _alive(harbor) and not _alive(grandchild), 30), (
            "the stand-in Harbor outlived its worker"
        )
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)


def test_a_cancel_is_a_sigint_to_the_guard_and_its_exit_says_so(tmp_path):
    pids = tmp_path / "pids"
    guard = subprocess.Popen(
        [sys.executable, "-I", str(GUARD), "--folder", str(tmp_path), "--grace", "1",
         "--parent", str(os.getpid()), "--", sys.executable, "-c", STUCK, str(pids)],
        start_new_session=True,
    )  # fmt: skip
    assert _wait_for(lambda: pids.exists() and pids.read_text(), 20)
    harbor, grandchild = map(int, pids.read_text().split())
    os.killpg(guard.pid, signal.SIGINT)
    assert guard.wait(timeout=30) == 128 + signal.SIGINT
    assert _wait_for(lambda: not _alive(harbor) and not _alive(grandchild), 10)


def test_harbors_own_exit_code_comes_through(tmp_path):
    done = subprocess.run(
        [sys.executable, "-I", str(GUARD), "--folder", str(tmp_path), "--",
         sys.executable, "-c", "raise SystemExit(3)"],
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 3


def _engine() -> bool:
    if not shutil.which("docker"):
        return False
    info = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
    images = subprocess.run(
        ["docker", "image", "inspect", "hilbench/bookworm:latest"], capture_output=True, timeout=30
    )
    return info.returncode == 0 and images.returncode == 0


@pytest.mark.containers
def test_the_runs_containers_are_removed_and_no_other(tmp_path):
    """A container left by a hard-killed Harbor (labelled as Compose labels a trial's, with
    a working directory under the run's folder) goes; one of another folder stays."""
    if not _engine():
        if os.environ.get("HILBENCH_REQUIRE_CONTAINERS"):
            pytest.fail("no Docker engine or base image, though HILBENCH_REQUIRE_CONTAINERS is set")
        pytest.skip("no Docker engine with the local base image (`make containers` builds it)")
    run = tmp_path / "runs" / "7"
    other = tmp_path / "runs" / "70"
    ids = {}
    for name, top in (("ours", run), ("theirs", other)):
        folder = top / "bundle" / "sql_0" / "baseline" / "environment"
        folder.mkdir(parents=True)
        project = f"hilbench-guard-{name}-{os.getpid()}"
        ids[name] = subprocess.run(
            ["docker", "run", "-d", "--network", "none",
             "--label", f"com.docker.compose.project={project}",
             "--label", f"com.docker.compose.project.working_dir={folder}",
             "hilbench/bookworm:latest", "sleep", "600"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(GUARD), "--folder", str(run), "--",
             sys.executable, "-c", "pass"],
            timeout=180,
        )  # fmt: skip
        assert done.returncode == 0
        listed = subprocess.run(
            ["docker", "ps", "-a", "-q", "--no-trunc"], capture_output=True, text=True, timeout=30
        ).stdout.split()
        assert ids["ours"] not in listed
        assert ids["theirs"] in listed
    finally:
        subprocess.run(["docker", "rm", "-f", *ids.values()], capture_output=True, timeout=60)
