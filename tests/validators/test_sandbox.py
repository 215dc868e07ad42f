"""The sandbox runs real subprocesses here: limits, kills and isolation are observed, not mocked.
The hostile attempts of a task's code are in test_sandbox_redteam.py."""

import os
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.patches import PatchRefused
from validators.sandbox import (
    BwrapSandbox,
    DockerSandbox,
    SandboxError,
    SandboxLimits,
    SandboxUnavailable,
    apply_patches,
    cgroups,
    checkout,
    get_sandbox,
    probe,
    run_folder,
)
from validators.sandbox.docker import container_output

from .conftest import docker_or_skip
from .gitutil import git


def run(command: str, tree: Path | None = None, **limits) -> object:
    return BwrapSandbox().run(command=command, tree=tree, limits=SandboxLimits(**limits))


@pytest.fixture
def tree():
    """A folder under the sandbox root (the only place runs may be shown)."""
    with run_folder() as folder:
        (folder / "tree").mkdir()
        yield folder / "tree"


# --- local sandbox -----------------------------------------------------------------------------


def test_the_local_sandbox_isolates_on_this_machine():
    ok, reason = probe()
    assert ok, reason
    assert "bubblewrap" in reason


def test_wall_timeout_ends_the_run_and_everything_it_started(tmp_path):
    start = time.monotonic()
    result = run('sleep 1000 & python3 -c "while True: pass"', wall_s=2)
    assert result.timed_out and time.monotonic() - start < 5
    assert result.exit_code is not None and result.exit_code != 0
    # The PID namespace went with bwrap: nothing of the run is left on the machine.
    assert not _processes_of(result.details["uid"], "sleep 1000")


def _processes_of(uid: int, needle: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    if needle in cmdline:
                        found.append(cmdline)
            except OSError:
                continue
    return found


def test_children_left_behind_by_a_finished_run_are_killed():
    result = run("sleep 1000 & echo done")
    assert result.exit_code == 0 and not result.timed_out and "done" in result.output
    time.sleep(0.2)
    assert not _processes_of(result.details["uid"], "sleep 1000")


def test_unbounded_allocation_is_stopped():
    start = time.monotonic()
    result = run("python3 -c \"x=[]\nwhile True: x.append(' '*10**7)\"", wall_s=60, memory_mb=256)
    assert time.monotonic() - start < 30
    assert not result.timed_out and result.exit_code != 0
    assert result.memory_exceeded, result.output


def test_cpu_limit_stops_a_busy_loop():
    result = run('python3 -c "while True: pass"', wall_s=30, cpu_s=1)
    assert not result.timed_out and result.cpu_exceeded and result.duration_s < 15


def test_cgroups_a_killed_worker_left_are_swept_and_live_ones_kept():
    where, why = cgroups.layout()
    if where is None:
        pytest.skip(f"runs get no cgroup on this machine: {why}")
    left, live = (cgroups.RunCgroup(where, memory_bytes=64 << 20, processes=8) for _ in "ab")
    for fd in left.procs:  # as a worker killed mid-run leaves it: nobody holds it
        os.close(fd)
    left.procs = []
    stale = time.time() - cgroups.STALE_S - 10
    for folder in left.folders:
        os.utime(folder, (stale, stale))
    try:
        cgroups.sweep(where)
        assert not any(folder.exists() for folder in left.folders)
        assert all(folder.exists() for folder in live.folders)
    finally:
        live.remove()
        left.remove()


def test_output_is_capped_keeping_head_and_tail():
    result = run(
        "python3 -c \"print('HEAD'); print('x' * 10**7); print('TAIL')\"", output_bytes=1000
    )
    assert result.exit_code == 0 and result.truncated
    assert result.output.startswith("HEAD\n") and result.output.rstrip().endswith("TAIL")
    assert "bytes of output omitted" in result.output and len(result.output) < 1200


def test_the_environment_is_only_what_the_run_is_given(monkeypatch):
    monkeypatch.setenv("HILBENCH_TEST_SECRET", "s3cr3t-value")
    result = BwrapSandbox().run(command="env", limits=SandboxLimits(), env={"EXTRA_VAR": "given"})
    assert result.exit_code == 0
    assert "s3cr3t-value" not in result.output and "DJANGO_SETTINGS_MODULE" not in result.output
    assert "HOME=/tmp" in result.output and "EXTRA_VAR=given" in result.output


def test_the_tree_is_a_private_copy(tree):
    (tree / "hello.txt").write_text("from the host\n")
    result = run("cat hello.txt; echo changed > hello.txt; echo new > made.txt; pwd", tree)
    assert result.exit_code == 0, result.output
    assert "from the host" in result.output and "/testbed" in result.output
    assert (tree / "hello.txt").read_text() == "from the host\n"
    assert not (tree / "made.txt").exists()


def test_nothing_outside_the_sandbox_root_is_shown(tmp_path):
    with pytest.raises(SandboxError, match="is not under the sandbox root"):
        run("true", tmp_path)


def test_the_app_is_not_in_the_sandbox():
    result = run(f"ls {Path(__file__).resolve().parent}; ls /root /work /home; id -u")
    assert "No such file or directory" in result.output
    assert result.output.strip().endswith("1000")


def test_a_build_keeps_what_it_writes_and_may_use_the_network(tree):
    from validators.environments import _own

    _own(tree, for_sandbox=True)
    result = BwrapSandbox().run(
        command="echo built > artefact.txt",
        tree=tree,
        persist_tree=True,
        network=True,
        limits=SandboxLimits(),
    )
    assert result.exit_code == 0 and not result.network_isolated
    assert (tree / "artefact.txt").read_text() == "built\n"


def test_get_sandbox_follows_settings_and_never_falls_back(settings, tmp_path):
    settings.SANDBOX_BACKEND = "local"
    assert get_sandbox().name == "local"
    settings.SANDBOX_BACKEND = "docker"
    if not DockerSandbox.available()[0]:
        with pytest.raises(SandboxUnavailable, match="docker sandbox is not available"):
            get_sandbox()
    with pytest.raises(DomainError):
        get_sandbox("nonsense")


def test_a_closed_sandbox_root_is_said_plainly(settings, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the sandbox drops to another user only when the worker is root")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    settings.SANDBOX_ROOT = closed / "sandbox"
    with pytest.raises(SandboxUnavailable, match="is closed to other users"):
        run("true")


# --- docker sandbox ----------------------------------------------------------------------------


@pytest.mark.containers
def test_docker_sandbox_runs_and_limits(tree):
    """Against the engine of this machine and its local python:3.11-slim (built from Debian
    packages by scripts/containers.sh where no registry is reachable: nothing is pulled)."""
    docker_or_skip()
    tmp_path = tree
    (tmp_path / "hello.txt").write_text("from the host\n")
    sandbox = DockerSandbox("python:3.11-slim")
    result = sandbox.run(
        tree=tmp_path,
        command="cat hello.txt; echo out > made.txt; exit 3",
        limits=SandboxLimits(),
    )
    assert result.backend == "docker"
    assert result.exit_code == 3
    assert "from the host" in result.output
    assert not (tmp_path / "made.txt").exists()  # the tree is a copy
    start = time.monotonic()
    stuck = sandbox.run(tree=tmp_path, command="sleep 1000", limits=SandboxLimits(wall_s=3))
    assert stuck.timed_out and time.monotonic() - start < 30
    no_net = sandbox.run(
        tree=tmp_path,
        command="python -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)\"",
        limits=SandboxLimits(wall_s=30),
    )
    assert no_net.exit_code != 0


def test_the_docker_contract_is_the_local_one():
    """Checked without an engine: the options every container is started with."""
    options = DockerSandbox.container_options(
        limits=SandboxLimits(memory_mb=512, processes=64, disk_mb=100),
        tree=Path("/srv/tree"),
        mounts=[],
        network=False,
    )
    assert options["network_disabled"] and options["read_only"]
    assert options["cap_drop"] == ["ALL"] and options["security_opt"] == ["no-new-privileges"]
    assert options["user"] == "1000:1000" and options["pids_limit"] == 64
    # Memory for the processes and for what the tmpfs hold (/testbed, /tmp 512, /dev/shm 64).
    assert options["mem_limit"] == f"{512 + 100 + 512 + 64}m" and options["shm_size"] == "64m"
    assert options["tmpfs"]["/testbed"].startswith("size=100m")
    assert [m["ReadOnly"] for m in options["mounts"]] == [True]


class _StreamingContainer:
    """Stands in for the docker SDK's Container (no engine here): 128 MiB of logs, which it
    gives only as a stream, the way the SDK does with ``stream=True``."""

    def logs(self, *, stdout, stderr, stream, follow):
        assert stdout and stderr and stream and not follow, "the logs must be streamed"
        yield b"HEAD\n"
        for _ in range(2048):
            yield b"x" * 65536
        yield b"TAIL\n"


def test_docker_logs_are_streamed_through_the_cap_never_held_whole():
    tracemalloc.start()
    try:
        output, truncated = container_output(_StreamingContainer(), 1000)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert truncated and output.startswith("HEAD\n") and output.endswith("TAIL\n")
    assert f"{2048 * 65536 + 10 - 1000} bytes of output omitted" in output
    assert peak < 4 << 20, f"{peak} bytes held for 128 MiB of logs"


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


def test_the_docker_environment_is_the_local_build_as_image_layers():
    """Checked without an engine: the Dockerfile a docker-backend build generates."""
    from validators.environment_images import dockerfile

    spec = {
        "language": "python",
        "python": "3.9",
        "packages": ["attrs==23.1.0", "py==1.11.0"],
        "pre_install": ["sed -i 's/a/b/' tox.ini"],
        "install": ["python -m pip install -e ."],
        "env": {"SETUPTOOLS_SCM_PRETEND_VERSION": "5.4"},
    }
    text = dockerfile(spec, base_image="python:3.9-slim")
    lines = text.splitlines()
    assert lines[0] == "FROM python:3.9-slim"
    assert 'ENV SETUPTOOLS_SCM_PRETEND_VERSION="5.4"' in lines
    runs = [line for line in lines if line.startswith("RUN ")]
    assert runs[1:4] == [
        "RUN python -m pip install attrs==23.1.0 py==1.11.0",
        "RUN sed -i 's/a/b/' tox.ini",
        "RUN python -m pip install -e .",
    ]
    assert lines[-1] == "USER 1000" and "COPY testbed /testbed" in lines
