"""Task code that attacks the machine it runs on: each attempt is contained and reported, and the
app's data is unchanged (every test takes ``app_data``, which checks it afterwards). The
attacks (a)–(g) come as a test command straight to the sandbox, and again as a repository's
test file or test command through the real SWE check (``check_swe_tests``), whose result must
say what stopped them; (a) also as an install step of an environment build."""

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from validators.results import FAILED, PASSED
from validators.sandbox import BwrapSandbox, Mount, SandboxLimits, run_folder
from validators.swe import check_swe_tests

from .gitutil import git
from .test_swe_checks import ENVIRONMENT_SPEC, mirror_of, swe_environment

HOST_CHECKS = ("/usr/owned", "/etc/owned", "/owned", "/dev/owned")  # never on this machine


def attack(command: str, mounts=(), **limits):
    with run_folder() as folder:
        tree = folder / "tree"
        tree.mkdir()
        (tree / "marker.txt").write_text("repository file\n")
        result = BwrapSandbox().run(
            command=command,
            tree=tree,
            mounts=mounts,
            limits=SandboxLimits(**{"wall_s": 30, **limits}),
        )
        assert (tree / "marker.txt").read_text() == "repository file\n"
        assert sorted(p.name for p in tree.iterdir()) == ["marker.txt"]
    return result


def _hostile_repository(tmp_path: Path, test_body: str):
    work = tmp_path / "hostile"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_evil.py").write_text(
        "import errno, os, socket, subprocess\n\ndef test_evil():\n" + test_body
    )
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    return work


def _swe_check(tmp_path, body="    assert False\n", limits=None, **fields):
    """(before, after) of the SWE check on a repository whose one test is ``body``."""
    work = _hostile_repository(tmp_path, body)
    env = swe_environment(
        mirror_of(work, tmp_path / "hostile.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        fail_to_pass=["tests/test_evil.py::test_evil"],
        pass_to_pass=[],
        **{"test_command": "python -m pytest -rA -s tests", **fields},
    )
    return check_swe_tests(env, limits=limits)


# --- (a) reading the app's data -------------------------------------------------------------


def test_a_reading_the_apps_database_var_folder_or_secrets(app_data):
    database, var = app_data["database"], app_data["var"]
    parent = os.getpid()
    result = attack(
        f"cat {database}; ls {var}; ls {database.parent}; cat /proc/{parent}/environ; "
        f"cat /proc/1/environ; env; echo tried"
    )
    assert "tried" in result.output
    assert app_data["secret"] not in result.output
    assert "No such file or directory" in result.output


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
    for result in _swe_check(tmp_path, body):
        assert app_data["secret"] not in result.details["output"]
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
    assert app_data["secret"] not in log and "REFUSED-DB" in log


# --- (b) other processes --------------------------------------------------------------------


@pytest.fixture
def victim():
    process = subprocess.Popen(["sleep", "120"])
    yield process
    process.kill()
    process.wait()


def test_b_listing_or_signalling_other_processes(app_data, victim):
    result = attack(
        f"ls /proc | grep -c '^[0-9]'; kill -9 {victim.pid}; echo kill=$?; "
        f"ps -e 2>/dev/null | grep -c sleep; echo done"
    )
    assert "kill=1" in result.output or "No such process" in result.output
    visible = int(result.output.splitlines()[0])
    assert visible < 10, f"the run sees {visible} processes"
    time.sleep(0.2)
    assert victim.poll() is None, "a process outside the sandbox was killed"


@pytest.mark.django_db
def test_b_through_the_swe_check(tmp_path, app_data, victim):
    body = (
        "    print('VISIBLE', len([p for p in os.listdir('/proc') if p.isdigit()]))\n"
        "    try:\n"
        f"        os.kill({victim.pid}, 9)\n"
        "        print('KILL' + 'ED')\n"
        "    except OSError as exc:\n"
        "        print('KILL REFUSED:', exc.strerror)\n"
        "    assert False\n"
    )
    before, after = _swe_check(tmp_path, body)
    for result in (before, after):
        output = result.details["output"]
        assert "KILL REFUSED: No such process" in output and "KILLED" not in output
        assert int(re.search(r"VISIBLE (\d+)", output).group(1)) < 10
    assert before.outcome == PASSED  # the test fails before the gold patch, as listed
    assert after.outcome == FAILED and "tests/test_evil.py::test_evil" in after.message
    assert victim.poll() is None, "a process outside the sandbox was killed"


# --- (c) writing outside the repository copy ------------------------------------------------

WRITER = """
import errno, os, sys
for path in sys.argv[1:]:
    try:
        with open(path, "w") as handle:
            handle.write("owned")
        print(path, "WRITTEN")
    except OSError as exc:
        print(path, errno.errorcode[exc.errno])
"""


def _write_attempts(output: str, paths: list[str]) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        path, _, outcome = line.rpartition(" ")
        if path in paths:
            found[path] = outcome
    return found


def _expected_writes(database: Path) -> dict[str, str]:
    """What each write gets: the system, the root, /dev, the environment and the source tree
    are read-only; the app's database is not there at all; the run's own copy, /tmp and
    /dev/shm take it (in the run's tmpfs, gone with it)."""
    return {
        "/owned": "EROFS",
        "/usr/owned": "EROFS",
        "/etc/owned": "EROFS",
        "/etc/passwd": "EROFS",
        "/dev/owned": "EROFS",
        "/env/owned": "EROFS",
        "/.source/owned": "EROFS",
        "/.source/marker.txt": "EROFS",
        str(database): "ENOENT",
        "/testbed/marker.txt": "WRITTEN",
        "/tmp/owned": "WRITTEN",
        "/dev/shm/owned": "WRITTEN",
    }


def test_c_writing_outside_its_repository_copy(app_data):
    expected = _expected_writes(app_data["database"])
    with run_folder() as environment:
        (environment / "venv").mkdir()
        result = attack(
            f"python3 -c '{WRITER}' {' '.join(expected)}", mounts=[Mount(environment, "/env")]
        )
        assert sorted(p.name for p in environment.iterdir()) == ["venv"]
    assert _write_attempts(result.output, list(expected)) == expected, result.output
    for path in HOST_CHECKS:
        assert not Path(path).exists(), f"{path} was written on this machine"


@pytest.mark.django_db
def test_c_through_the_swe_check(tmp_path, app_data):
    """As a test file, with the task's real environment mounted at /env."""
    expected = _expected_writes(app_data["database"])
    body = (
        "    print()\n"  # pytest -s has printed the file's name on this line
        "    for path in " + repr(list(expected)) + ":\n"
        "        try:\n"
        "            open(path, 'w').write('owned')\n"
        "            print(path, 'WRITTEN')\n"
        "        except OSError as exc:\n"
        "            print(path, errno.errorcode[exc.errno])\n"
        "    assert False\n"
    )
    before, after = _swe_check(tmp_path, body)
    for result in (before, after):
        attempts = _write_attempts(result.details["output"], list(expected))
        assert attempts == expected, result.details["output"]
    assert before.outcome == PASSED and after.outcome == FAILED
    for path in HOST_CHECKS:
        assert not Path(path).exists(), f"{path} was written on this machine"


# --- (d) the network ------------------------------------------------------------------------


@pytest.fixture
def listener():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def _probe(port: int, indent: str = "") -> str:
    """A Python snippet that tries a local listener, the DNS server and the internet."""
    lines = [
        "print()",
        f"for host, port in (('127.0.0.1', {port}), ('10.255.255.53', 53), ('1.1.1.1', 443)):",
        "    try:",
        "        socket.create_connection((host, port), timeout=2); print('REACH' + 'ED', host)",
        "    except OSError as exc: print('REFUS' + 'ED', host, exc.errno)",
    ]
    return "".join(indent + line + "\n" for line in lines)


def _network_attempts(output: str) -> tuple[int, int]:
    """(connections made, connections refused) as the probe printed them."""
    reached = re.findall(r"^REACHED ", output, re.MULTILINE)
    return len(reached), len(re.findall(r"^REFUSED \S+ \d+$", output, re.MULTILINE))


def test_d_reaching_any_address(app_data, listener):
    result = attack(f'python3 -c "import socket\n{_probe(listener)}"')
    assert _network_attempts(result.output) == (0, 3), result.output
    assert result.network_isolated


@pytest.mark.django_db
def test_d_through_the_swe_check(tmp_path, app_data, listener):
    for result in _swe_check(tmp_path, _probe(listener, "    ") + "    assert False\n"):
        assert _network_attempts(result.details["output"]) == (0, 3), result.details["output"]
        assert result.details["network_isolated"]


# --- (e) a fork bomb ------------------------------------------------------------------------

BOMB = "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived"


def test_e_fork_bomb(app_data):
    start = time.monotonic()
    result = attack(BOMB, wall_s=20, processes=64)
    assert time.monotonic() - start < 30
    assert result.processes_exceeded and result.stopped == "process limit", result.output
    if "cgroup" in result.details:  # where the run has a cgroup, its pids.max refused forks
        assert result.details["cgroup"]["forks_refused"] > 0
    # The machine still forks: this very check runs a process.
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True).returncode == 0


@pytest.mark.django_db
def test_e_through_the_swe_check(tmp_path, app_data):
    limits = SandboxLimits(wall_s=30, processes=64)
    for result in _swe_check(tmp_path, limits=limits, test_command=BOMB):
        assert result.outcome == FAILED, result.message
        assert "was stopped by the sandbox's process limit" in result.message, result.message


# --- (f) filling the disk -------------------------------------------------------------------

FILLER = """
import errno, os, sys
chunk = bytes(1 << 20)
for label in sys.argv[1:]:
    path, written, why = os.path.expandvars(label), 0, "no-error"
    fd = None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT)
        while written < (4000 << 20):
            written += os.write(fd, chunk)
    except OSError as exc:
        why = errno.errorcode[exc.errno]
    if fd is not None:
        os.close(fd)
    print("FILLED", label, why, written)
    if os.path.exists(path):
        os.unlink(path)
"""
FILL_LIMITS = {"disk_mb": 40, "tmp_mb": 24, "shm_mb": 16}


def _filled(output: str) -> dict[str, tuple[str, int]]:
    rows = re.findall(r"^FILLED (\S+) (\S+) (\d+)$", output, re.MULTILINE)
    return {path: (why, int(written) >> 20) for path, why, written in rows}


def test_f_filling_the_disk(app_data):
    """Every place a run can write stops at its own limit; the root is read-only."""
    free_before = os.statvfs("/").f_bavail
    targets = ["/filled", "/dev/shm/filled", "/tmp/filled", "$HOME/filled", "/testbed/filled"]
    quoted = " ".join(f"'{target}'" for target in targets)  # $HOME expanded by the filler
    result = attack(f"python3 -c '{FILLER}' {quoted}; echo HOME=$HOME", **FILL_LIMITS)
    filled = _filled(result.output)
    assert filled["/filled"] == ("EROFS", 0), result.output
    assert "HOME=/tmp" in result.output  # $HOME is in /tmp's tmpfs, with its limit
    for path, limit in (
        ("/dev/shm/filled", FILL_LIMITS["shm_mb"]),
        ("/tmp/filled", FILL_LIMITS["tmp_mb"]),
        ("$HOME/filled", FILL_LIMITS["tmp_mb"]),
        ("/testbed/filled", FILL_LIMITS["disk_mb"]),
    ):
        why, megabytes = filled[path]
        assert why == "ENOSPC" and limit - 2 <= megabytes <= limit, (path, filled[path])
    freed = (free_before - os.statvfs("/").f_bavail) * os.statvfs("/").f_frsize
    assert freed < 50 << 20, "the run wrote to this machine's disk"


@pytest.mark.django_db
def test_f_through_the_swe_check(tmp_path, app_data):
    command = (
        "dd if=/dev/zero of=big bs=1M count=4000; dd if=/dev/zero of=/tmp/big bs=1M count=4000"
    )
    limits = SandboxLimits(wall_s=60, **FILL_LIMITS)
    for result in _swe_check(tmp_path, limits=limits, test_command=command):
        assert result.outcome == FAILED
        assert "was stopped by the sandbox's disk limit" in result.message, result.message
        assert "No space left on device" in result.details["output"]


# --- (g) running past the time limit --------------------------------------------------------


def test_g_running_past_its_time_limit(app_data):
    start = time.monotonic()
    result = attack("sleep 600", wall_s=2)
    assert result.timed_out and time.monotonic() - start < 10


@pytest.mark.django_db
def test_g_through_the_swe_check(tmp_path, app_data):
    start = time.monotonic()
    results = _swe_check(tmp_path, limits=SandboxLimits(wall_s=2), test_command="sleep 600")
    assert time.monotonic() - start < 60
    for result in results:
        assert result.outcome == FAILED
        assert "was stopped by the sandbox's wall-time limit" in result.message, result.message


# --- beyond (a)–(g): memory held by many processes, a nested user namespace ------------------

HOLDERS = """
import os, time
children = []
for i in range(4):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            block = b"\\1" * (300 << 20)  # every page written, so every page is charged
        except MemoryError:
            os._exit(3)
        os.write(w, b"x")
        time.sleep(30)
        os._exit(0)
    os.close(w)
    children.append((pid, r))
wrote = [os.read(r, 1) == b"x" for pid, r in children]
alive = [os.waitpid(pid, os.WNOHANG) == (0, 0) for pid, r in children]
print("HELD-AT-ONCE", sum(w and a for w, a in zip(wrote, alive)))
for pid, r in children:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
try:
    big = b"\\1" * (500 << 20)
    print("ONE PROCESS HELD 500 MB")
except MemoryError:
    print("ONE PROCESS REFUSED 500 MB")
"""


def test_memory_held_by_many_processes_stops_at_the_limit_the_run_claims(app_data):
    """The auditor's four children of 300 MB each under memory_mb=400. The run's details say
    what its memory limit covers; whichever it says must hold: with a cgroup, the processes
    together cannot hold more than the total it names; per process, one cannot pass 400 MB."""
    result = attack(
        f"python3 -c '{HOLDERS}'", memory_mb=400, disk_mb=16, tmp_mb=16, shm_mb=16, wall_s=60
    )
    limits = result.details["limits"]
    assert "ONE PROCESS REFUSED 500 MB" in result.output, result.output
    held = int(re.search(r"HELD-AT-ONCE (\d+)", result.output).group(1))
    if limits["memory_scope"] == "run":
        assert held * 300 <= limits["memory_mb_total"] == 400 + 3 * 16, result.output
        assert result.memory_exceeded and result.details["cgroup"]["oom_kills"] > 0
    else:
        assert limits["memory_scope"] == "process" and "per process only" in limits["memory"]


def test_no_nested_user_namespace(app_data):
    """``unshare -U -r`` would make the run root in a namespace of its own."""
    assert Path("/usr/bin/unshare").exists()
    result = attack("unshare -U -r id; echo rc=$?")
    assert "uid=0" not in result.output and "rc=1" in result.output, result.output
    # The kernel's answer when the namespace may make no more user namespaces.
    assert "unshare failed: No space left on device" in result.output


def test_i_mount_sources_do_not_tell_the_author_where_the_server_keeps_things(app_data):
    """Issue 24, item 9: ``/proc/self/mountinfo`` names every bind mount's host path; what a
    run prints (the check output an author reads) names none of this machine's folders."""
    result = attack("cat /proc/self/mountinfo; ls -la /proc/self/fd; pwd -P")
    assert result.exit_code == 0, result.output
    assert " /testbed " in result.output and "<sandbox-root>" in result.output
    for folder in (settings.SANDBOX_ROOT, settings.VAR_DIR, settings.BASE_DIR):
        assert str(folder) not in result.output, result.output
