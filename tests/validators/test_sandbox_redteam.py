"""Task code that attacks the machine it runs on: each attempt is contained and reported, and the
app's data is unchanged. The attacks come as a test command, as a test file of the repository
(run through the SWE check) and as an install step of an environment build."""

import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from validators.sandbox import BwrapSandbox, SandboxLimits, run_folder
from validators.swe import check_swe_tests

from .gitutil import git
from .test_swe_checks import ENVIRONMENT_SPEC, mirror_of, swe_environment

SECRET = "hilbench-redteam-secret-7f3a"


@pytest.fixture
def app_data(settings, tmp_path, monkeypatch):
    """What the app keeps: a database file, a var folder and a secret in its environment."""
    var = settings.VAR_DIR
    target = settings.UPLOAD_STORE / "app-data.sqlite3"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"password hashes and resolutions: {SECRET}")
    monkeypatch.setenv("HILBENCH_REDTEAM_SECRET", SECRET)
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    yield {"database": target, "var": var}
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before, "the app's data changed"


def attack(command: str, **limits):
    with run_folder() as folder:
        tree = folder / "tree"
        tree.mkdir()
        (tree / "marker.txt").write_text("repository file\n")
        result = BwrapSandbox().run(
            command=command, tree=tree, limits=SandboxLimits(**{"wall_s": 30, **limits})
        )
        assert (tree / "marker.txt").read_text() == "repository file\n"
        assert sorted(p.name for p in tree.iterdir()) == ["marker.txt"]
    return result


def test_a_reading_the_apps_database_var_folder_or_secrets(app_data):
    database, var = app_data["database"], app_data["var"]
    parent = os.getpid()
    result = attack(
        f"cat {database}; ls {var}; ls {database.parent}; cat /proc/{parent}/environ; "
        f"cat /proc/1/environ; env; echo tried"
    )
    assert "tried" in result.output
    assert SECRET not in result.output
    assert "No such file or directory" in result.output


def test_b_listing_or_signalling_other_processes():
    victim = subprocess.Popen(["sleep", "60"])
    try:
        result = attack(
            f"ls /proc | grep -c '^[0-9]'; kill -9 {victim.pid}; echo kill=$?; "
            f"ps -e 2>/dev/null | grep -c sleep; echo done"
        )
        assert "kill=1" in result.output or "No such process" in result.output
        visible = int(result.output.splitlines()[0])
        assert visible < 10, f"the run sees {visible} processes"
        time.sleep(0.2)
        assert victim.poll() is None, "a process outside the sandbox was killed"
    finally:
        victim.kill()
        victim.wait()


def test_c_writing_outside_its_repository_copy(app_data):
    database = app_data["database"]
    result = attack(
        f"echo x > {database}; echo x > /usr/owned; echo x > /etc/owned; echo x > /owned; "
        "mkdir -p /env/x; echo x > /.source/owned; echo x > marker.txt && echo wrote-copy"
    )
    assert "wrote-copy" in result.output  # its own copy is writable
    assert "Read-only file system" in result.output or "Permission denied" in result.output
    assert not Path("/usr/owned").exists() and not Path("/etc/owned").exists()


def test_d_reaching_any_address():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = (
            "import socket\n"
            f"for host, port in (('127.0.0.1', {port}), ('10.255.255.53', 53), ('1.1.1.1', 443)):\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=2); print('reached', host)\n"
            "    except OSError as exc: print('refused', host, exc.errno)\n"
        )
        result = attack(f'python3 -c "{probe}"')
    assert "reached" not in result.output, result.output
    assert result.output.count("refused") == 3 and result.network_isolated


def test_e_fork_bomb():
    start = time.monotonic()
    result = attack(
        "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", wall_s=20, processes=64
    )
    assert time.monotonic() - start < 30
    assert "Resource temporarily unavailable" in result.output or "fork" in result.output
    # The machine still forks: this very check runs a process.
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True).returncode == 0


def test_f_filling_the_disk():
    free_before = os.statvfs("/").f_bavail
    result = attack(
        "dd if=/dev/zero of=big bs=1M count=4000 2>&1 | grep -o 'No space left on device'; "
        "dd if=/dev/zero of=/tmp/big bs=1M count=4000 2>&1 | grep -o 'No space left on device'",
        disk_mb=64,
        tmp_mb=64,
    )
    assert result.output.count("No space left on device") == 2, result.output
    freed = (free_before - os.statvfs("/").f_bavail) * os.statvfs("/").f_frsize
    assert freed < 50 << 20, "the run wrote to this machine's disk"


def test_g_running_past_its_time_limit():
    start = time.monotonic()
    result = attack("sleep 600", wall_s=2)
    assert result.timed_out and time.monotonic() - start < 10


def _hostile_repository(tmp_path: Path, test_body: str):
    work = tmp_path / "hostile"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_evil.py").write_text(
        "import os, subprocess\n\ndef test_evil():\n" + test_body
    )
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    return work


@pytest.mark.django_db
def test_a_test_file_of_the_repository_cannot_reach_the_app(tmp_path, app_data):
    """The attack of the hostile-import report, as a test file: read the database, the
    worker's environment and the repository store; print what it found."""
    database = app_data["database"]
    body = (
        f"    for path in ({str(database)!r}, '/proc/{os.getpid()}/environ', "
        f"{str(app_data['var'])!r}):\n"
        "        try:\n"
        "            print('FOUND' + ':', open(path, 'rb').read()[:200])\n"
        "        except OSError as exc:\n"
        "            print('REFUSED' + ':', path, exc.strerror)\n"
        "    assert False\n"
    )
    work = _hostile_repository(tmp_path, body)
    env = swe_environment(
        mirror_of(work, tmp_path / "hostile.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        fail_to_pass=["tests/test_evil.py::test_evil"],
        test_command="python -m pytest -rA -s tests",
    )
    before, after = check_swe_tests(env)
    for result in (before, after):
        assert SECRET not in result.details["output"]
        assert "FOUND:" not in result.details["output"]
        assert result.details["output"].count("REFUSED:") == 3
        assert result.details["network_isolated"]


@pytest.mark.django_db
def test_an_install_step_cannot_reach_the_app_either(tmp_path, app_data):
    """Builds run the repository's install scripts: the same walls, only the network open."""
    from validators.environments import environment_for

    work = _hostile_repository(tmp_path, "    pass\n")
    env = swe_environment(
        mirror_of(work, tmp_path / "hostile.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        fail_to_pass=["tests/test_evil.py::test_evil"],
        test_command="python -m pytest -rA tests",
        environment_spec={
            **ENVIRONMENT_SPEC,
            "install": [f"cat {app_data['database']} || echo REFUSED-DB; env | grep -c REDTEAM"],
        },
    )
    built, failed = environment_for(env)
    log = (failed.error if failed else "") + (
        env.task.environment_builds.order_by("-id").first().log
    )
    assert SECRET not in log and "REFUSED-DB" in log
