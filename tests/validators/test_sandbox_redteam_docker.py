"""The red-team attacks (a)–(g) of ``test_sandbox_redteam.py`` against the docker backend
(``SANDBOX_BACKEND = "docker"``): task code in a container of the local ``python:3.11-slim``
(built from Debian packages by ``make containers`` where no registry is reachable; CI runs
these, a machine without an engine skips them saying why). Each attempt is contained, and the
app's data is unchanged (``app_data`` checks it afterwards)."""

import os
import subprocess
import sys
import time

import pytest

from validators.sandbox import DockerSandbox, Mount, SandboxLimits, run_folder

from .conftest import docker_or_skip
from .test_sandbox_redteam import (
    BOMB,
    FILL_LIMITS,
    FILLER,
    WRITER,
    _filled,
    _network_attempts,
    _probe,
    _write_attempts,
    listener,  # noqa: F401 - a fixture
    victim,  # noqa: F401 - a fixture
)

pytestmark = pytest.mark.containers


@pytest.fixture(autouse=True)
def _engine():
    docker_or_skip()


def attack(command: str, mounts=(), **limits):
    with run_folder() as folder:
        tree = folder / "tree"
        tree.mkdir()
        (tree / "marker.txt").write_text("repository file\n")
        result = DockerSandbox("python:3.11-slim").run(
            command=command,
            tree=tree,
            mounts=mounts,
            limits=SandboxLimits(**{"wall_s": 60, **limits}),
        )
        assert (tree / "marker.txt").read_text() == "repository file\n"
        assert sorted(p.name for p in tree.iterdir()) == ["marker.txt"]
    assert result.backend == "docker"
    return result


def test_a_reading_the_apps_database_var_folder_or_secrets(app_data):
    database, var = app_data["database"], app_data["var"]
    result = attack(
        f"cat {database}; ls {var}; ls {database.parent}; cat /proc/1/environ; env; echo tried"
    )
    assert "tried" in result.output
    assert app_data["secret"] not in result.output
    assert "No such file or directory" in result.output


def test_b_listing_or_signalling_other_processes(app_data, victim):  # noqa: F811
    result = attack(f"ls /proc | grep -c '^[0-9]'; kill -9 {victim.pid}; echo kill=$?")
    assert "kill=1" in result.output or "No such process" in result.output, result.output
    # The count's line: kill's complaint on stderr may come before it in the output.
    visible = int(next(line for line in result.output.splitlines() if line.strip().isdigit()))
    assert visible < 10, f"the run sees {visible} processes"
    time.sleep(0.2)
    assert victim.poll() is None, "a process outside the container was killed"


def test_c_writing_outside_its_repository_copy(app_data):
    expected = {
        "/owned": "EROFS",
        "/usr/owned": "EROFS",
        "/etc/owned": "EROFS",
        "/etc/passwd": "EROFS",
        "/env/owned": "EROFS",
        "/.source/marker.txt": "EROFS",
        "/testbed/marker.txt": "WRITTEN",
        "/tmp/owned": "WRITTEN",
        "/dev/shm/owned": "WRITTEN",
    }
    with run_folder() as environment:
        (environment / "venv").mkdir()
        result = attack(
            f"python3 -c '{WRITER}' {' '.join(expected)}", mounts=[Mount(environment, "/env")]
        )
        assert sorted(p.name for p in environment.iterdir()) == ["venv"]
    attempts = _write_attempts(result.output, list(expected))
    # /etc/passwd is the image's (read-only root): EROFS or, as uid 1000, EACCES.
    assert attempts.pop("/etc/passwd") in ("EROFS", "EACCES"), result.output
    assert attempts == {k: v for k, v in expected.items() if k != "/etc/passwd"}, result.output


def test_d_reaching_any_address(app_data, listener):  # noqa: F811
    result = attack(f'python3 -c "import socket\n{_probe(listener)}"')
    assert _network_attempts(result.output) == (0, 3), result.output
    assert result.network_isolated


def test_e_fork_bomb(app_data):
    start = time.monotonic()
    result = attack(BOMB, wall_s=20, processes=64)
    assert time.monotonic() - start < 60
    assert result.processes_exceeded and result.stopped == "process limit", result.output
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True).returncode == 0


def test_f_filling_the_disk(app_data):
    free_before = os.statvfs("/").f_bavail
    targets = ["/filled", "/dev/shm/filled", "/tmp/filled", "/testbed/filled"]
    quoted = " ".join(f"'{target}'" for target in targets)
    result = attack(f"python3 -c '{FILLER}' {quoted}", **FILL_LIMITS)
    filled = _filled(result.output)
    assert filled["/filled"][0] in ("EROFS", "EACCES"), result.output
    for path, limit in (
        ("/tmp/filled", FILL_LIMITS["tmp_mb"]),
        ("/testbed/filled", FILL_LIMITS["disk_mb"]),
    ):
        why, megabytes = filled[path]
        assert why == "ENOSPC" and limit - 2 <= megabytes <= limit, (path, filled[path])
    assert filled["/dev/shm/filled"][0] == "ENOSPC", result.output
    freed = (free_before - os.statvfs("/").f_bavail) * os.statvfs("/").f_frsize
    assert freed < 50 << 20, "the run wrote to this machine's disk"


def test_f_a_full_tmpfs_is_said_to_be_the_disk_limit(app_data):
    result = attack("dd if=/dev/zero of=/testbed/big bs=1M count=400", disk_mb=16)
    assert "No space left on device" in result.output, result.output
    assert result.disk_exceeded and result.stopped == "disk limit"


def test_g_running_past_its_time_limit(app_data):
    start = time.monotonic()
    result = attack("sleep 600", wall_s=3)
    assert result.timed_out and time.monotonic() - start < 40
