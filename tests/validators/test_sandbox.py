"""The sandbox runs real subprocesses here: limits, kills and isolation are observed, not mocked."""

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.patches import PatchRefused
from validators.sandbox import (
    DockerSandbox,
    LocalSandbox,
    SandboxLimits,
    apply_patches,
    checkout,
    get_sandbox,
    network_isolation,
    parse_pytest_results,
)

from .gitutil import git


def run(command: str, workdir: Path, **limits) -> object:
    return LocalSandbox().run(workdir=workdir, command=command, limits=SandboxLimits(**limits))


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it (it no longer runs)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _wait_dead(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _dead(pid):
            return True
        time.sleep(0.05)
    return _dead(pid)


# --- local sandbox -----------------------------------------------------------------------------


def test_wall_timeout_kills_the_whole_process_group(tmp_path):
    start = time.monotonic()
    result = run(
        'sleep 1000 & echo $! > child.pid; python -c "while True: pass"', tmp_path, wall_s=2
    )
    elapsed = time.monotonic() - start
    assert result.timed_out
    assert elapsed < 5
    assert result.exit_code is not None and result.exit_code != 0
    child = int((tmp_path / "child.pid").read_text())
    assert _wait_dead(child), "the background child outlived the timed-out run"


def test_children_left_behind_by_a_finished_run_are_killed(tmp_path):
    result = run("sleep 1000 & echo $! > child.pid; echo done", tmp_path, wall_s=20)
    assert result.exit_code == 0 and not result.timed_out
    assert "done" in result.output
    assert _wait_dead(int((tmp_path / "child.pid").read_text()))


def test_unbounded_allocation_is_stopped(tmp_path):
    start = time.monotonic()
    result = run(
        "python -c \"x=[]\nwhile True: x.append(' '*10**7)\"", tmp_path, wall_s=60, memory_mb=256
    )
    assert time.monotonic() - start < 30
    assert not result.timed_out
    assert result.exit_code != 0
    assert result.memory_exceeded, result.output


def test_cpu_limit_stops_a_busy_loop(tmp_path):
    result = run('python -c "while True: pass"', tmp_path, wall_s=30, cpu_s=1)
    assert not result.timed_out
    assert result.cpu_exceeded
    assert result.duration_s < 15


def test_output_is_truncated_keeping_head_and_tail(tmp_path):
    result = run(
        "python -c \"print('HEAD'); print('x' * 100000); print('TAIL')\"",
        tmp_path,
        output_bytes=1000,
    )
    assert result.exit_code == 0
    assert result.truncated
    assert result.output.startswith("HEAD\n")
    assert result.output.rstrip().endswith("TAIL")
    assert "bytes of output omitted" in result.output
    assert len(result.output) < 1200


def test_environment_is_minimal(tmp_path, monkeypatch):
    monkeypatch.setenv("HILBENCH_TEST_SECRET", "s3cr3t-value")
    result = LocalSandbox().run(
        workdir=tmp_path, command="env", limits=SandboxLimits(), env={"EXTRA_VAR": "given"}
    )
    assert result.exit_code == 0
    assert "s3cr3t-value" not in result.output
    assert "HILBENCH_TEST_SECRET" not in result.output
    assert "DJANGO_SETTINGS_MODULE" not in result.output
    assert f"HOME={tmp_path.resolve()}" in result.output
    assert "EXTRA_VAR=given" in result.output


def test_python_is_the_servers_interpreter(tmp_path):
    result = run('python -c "import sys, pytest; print(sys.prefix)"', tmp_path)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == sys.prefix


def test_no_network_inside_the_sandbox(tmp_path):
    prefix, reason = network_isolation()
    if not prefix:
        pytest.skip(reason)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = (
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); "
            "print('connected')"
        )
        outside = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=10
        )
        assert outside.returncode == 0 and "connected" in outside.stdout
        inside = run(f'python -c "{code}"', tmp_path, wall_s=20)
    assert inside.network_isolated
    assert inside.exit_code != 0
    assert "connected" not in inside.output
    assert "network namespace" in inside.details["network"]


def test_get_sandbox_follows_settings(settings):
    settings.SANDBOX_BACKEND = "local"
    assert get_sandbox().name == "local"
    settings.SANDBOX_BACKEND = "docker"
    assert get_sandbox().name == "docker"
    with pytest.raises(DomainError):
        get_sandbox("nonsense")


# --- docker sandbox ----------------------------------------------------------------------------


def _docker_or_skip():
    available, reason = DockerSandbox.available()
    if not available:
        pytest.skip(reason)


def test_docker_sandbox_runs_and_limits(tmp_path):
    _docker_or_skip()
    (tmp_path / "hello.txt").write_text("from the host\n")
    sandbox = DockerSandbox("python:3.11-slim")
    result = sandbox.run(
        workdir=tmp_path,
        command="cat hello.txt; echo out > made.txt; exit 3",
        limits=SandboxLimits(),
    )
    assert result.backend == "docker"
    assert result.exit_code == 3
    assert "from the host" in result.output
    assert (tmp_path / "made.txt").read_text() == "out\n"
    start = time.monotonic()
    stuck = sandbox.run(workdir=tmp_path, command="sleep 1000", limits=SandboxLimits(wall_s=3))
    assert stuck.timed_out and time.monotonic() - start < 30
    no_net = sandbox.run(
        workdir=tmp_path,
        command="python -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)\"",
        limits=SandboxLimits(wall_s=30),
    )
    assert no_net.exit_code != 0


# --- checkout and patches ----------------------------------------------------------------------


@pytest.fixture
def mirror(tmp_path):
    """A bare mirror whose tree has export-ignore'd tests, an executable and a symlink."""
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (work / ".gitattributes").write_text("tests export-ignore\nv.txt export-subst\n")
    (work / "v.txt").write_text("$Format:%H$\n")
    (work / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (work / "run.sh").chmod(0o755)
    os.symlink("v.txt", work / "link.txt")
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    git(tmp_path, "clone", "-q", "--mirror", str(work), str(tmp_path / "mirror.git"))
    return tmp_path / "mirror.git"


def _snapshot(path: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in sorted(path.rglob("*"))}


def test_checkout_writes_the_tree_as_committed_without_touching_the_mirror(mirror, tmp_path):
    before = _snapshot(mirror)
    dest = checkout(mirror, "HEAD", tmp_path / "tree")
    assert (dest / "tests" / "test_a.py").is_file()  # export-ignore does not apply
    assert (dest / "v.txt").read_text() == "$Format:%H$\n"  # nor export-subst
    assert os.access(dest / "run.sh", os.X_OK)
    assert (dest / "link.txt").is_symlink() and os.readlink(dest / "link.txt") == "v.txt"
    assert not (dest / ".git").exists()
    assert _snapshot(mirror) == before


def test_checkout_refuses_an_unknown_commit(mirror, tmp_path):
    with pytest.raises(DomainError, match="not in the repository"):
        checkout(mirror, "0" * 40, tmp_path / "tree")


def test_apply_patches_in_order_and_names_the_refused_patch(mirror, tmp_path):
    dest = checkout(mirror, "HEAD", tmp_path / "tree")
    patch = textwrap.dedent(
        """\
        diff --git a/tests/test_a.py b/tests/test_a.py
        --- a/tests/test_a.py
        +++ b/tests/test_a.py
        @@ -1,2 +1,2 @@
         def test_a():
        -    assert True
        +    assert 1 + 1 == 2
        """
    )
    apply_patches(dest, [("setup patch", ""), ("test patch", patch)])
    assert "1 + 1" in (dest / "tests" / "test_a.py").read_text()
    with pytest.raises(PatchRefused, match="The gold patch does not apply") as caught:
        apply_patches(dest, [("gold patch", patch)])  # already applied: refused, not fuzzed
    assert caught.value.label == "gold patch"
    assert "1 + 1" in (dest / "tests" / "test_a.py").read_text()


# --- pytest output -----------------------------------------------------------------------------

SAMPLE_TESTS = """\
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_pass():
    print("FAILED test_sample.py::test_pass - printed by the test")


def test_fail():
    assert 1 == 2


def test_error(broken):
    pass


@pytest.mark.skipif(True, reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False


@pytest.mark.parametrize("value", ["a b", "c]d - e", "ok"])
def test_param(value):
    assert value == "ok"
"""

EXPECTED = {
    "test_sample.py::test_pass": "PASSED",
    "test_sample.py::test_fail": "FAILED",
    "test_sample.py::test_error": "ERROR",
    "test_sample.py::test_xfail": "SKIPPED",
    "test_sample.py::test_param[a b]": "FAILED",
    "test_sample.py::test_param[c]d - e]": "FAILED",
    "test_sample.py::test_param[ok]": "PASSED",
}


@pytest.mark.parametrize("verbose", [False, True])
def test_parse_real_pytest_output(tmp_path, verbose):
    (tmp_path / "test_sample.py").write_text(SAMPLE_TESTS)
    flags = "-rA -v" if verbose else "-rA"
    result = run(f"python -m pytest {flags} -p no:cacheprovider test_sample.py", tmp_path)
    assert result.exit_code == 1, result.output
    parsed = parse_pytest_results(result.output)
    for test_id, status in EXPECTED.items():
        assert parsed.get(test_id) == status, (test_id, parsed)
    # -rA reports a skip by location; only -v progress lines give its id.
    skip_line = SAMPLE_TESTS.splitlines().index('@pytest.mark.skipif(True, reason="not today")') + 1
    assert parsed.get(f"test_sample.py:{skip_line}") == "SKIPPED", parsed
    if verbose:
        assert parsed["test_sample.py::test_skip"] == "SKIPPED"


def test_parse_ignores_captured_output_before_the_summary():
    output = textwrap.dedent(
        """\
        ==================================== PASSES ====================================
        ___________________________________ test_x ____________________________________
        ----------------------------- Captured stdout call -----------------------------
        FAILED t.py::test_x - pretend
        =========================== short test summary info ============================
        PASSED t.py::test_x
        FAILED t.py::test_y[1-2] - AssertionError: assert [1] == [2]
        ERROR t.py::test_z - RuntimeError: boom
        ========================= 1 failed, 1 passed, 1 error in 0.05s =================
        """
    )
    assert parse_pytest_results(output) == {
        "t.py::test_x": "PASSED",
        "t.py::test_y[1-2]": "FAILED",
        "t.py::test_z": "ERROR",
    }
