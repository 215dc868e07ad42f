"""Issue 15's audit: ways out of the sandbox through what the host does with the files task
code leaves behind — a symbolic link on a generated file's path, a manifest the build could
replace, a reward that is a link or a pipe. Each attack is run for real and the host file it
aims at is checked untouched."""

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from exchange.bundles import oracle
from validators import environments
from validators.environments import (
    environment_build_execute,
    environment_build_start,
    environment_for,
    environment_use,
    ready_environment,
)
from validators.sandbox import BwrapSandbox, Mount, SandboxLimits, overlay_generated, run_folder
from validators.swe import check_swe_tests

from .gitutil import git
from .test_swe_checks import ENVIRONMENT_SPEC, mirror_of, swe_environment

pytestmark = pytest.mark.django_db


def _repository_with_link(tmp_path: Path, outside: Path) -> Path:
    """A repository that commits ``evil`` as a symbolic link to a host folder."""
    work = tmp_path / "evilrepo"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    os.symlink(outside, work / "evil")
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    return work


def test_a_generated_file_is_not_copied_through_a_committed_symlink(tmp_path, app_data):
    """The install replaces the committed link ``evil`` with a folder and writes
    ``evil/owned.pth``; the manifest lists it as generated; each test tree has ``evil`` as the
    link again. The copy must not follow it onto the host (the worker runs as root here)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    work = _repository_with_link(tmp_path, outside)
    env = swe_environment(
        mirror_of(work, tmp_path / "evil.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        fail_to_pass=["tests/test_x.py::test_x"],
        pass_to_pass=[],
        test_command="python -m pytest -rA tests",
        environment_spec={
            **ENVIRONMENT_SPEC,
            "install": ["rm -f evil && mkdir evil && echo 'import sys' > evil/owned.pth"],
        },
    )
    built, failed = environment_for(env)
    assert failed is None and "evil/owned.pth" in built.manifest["generated"]
    results = check_swe_tests(env)
    assert list(outside.iterdir()) == [], "a generated file was written onto the host"
    for result in results:
        (refused,) = result.details["sandbox"]["generated_not_copied"]
        assert refused.startswith("evil/owned.pth: a folder on its path is a symbolic link")
        assert "hilbench: generated file not copied, evil/owned.pth" in result.details["output"]
    # The oracle runs of an export prepare their trees the same way.
    with run_folder() as work_folder:
        agent = oracle._in_shipped_tree(env, built, work_folder, "agent", "ls -la evil", [])
    assert list(outside.iterdir()) == []
    assert "generated file not copied, evil/owned.pth" in agent.output


def test_overlay_walks_neither_tree_through_a_link(tmp_path):
    """Both sides, without a sandbox: a link in the destination's path, and a link (or a
    pipe) where the environment's generated file should be."""
    root = tmp_path
    source, dest, outside = root / "source", root / "dest", root / "outside"
    for folder in (source / "pkg", source / "sub", dest, outside):
        folder.mkdir(parents=True)
    (outside / "secret.txt").write_text("host secret\n")
    (source / "pkg" / "version.py").write_text("VERSION = '1'\n")
    (source / "sub" / "deep").mkdir()
    (source / "sub" / "deep" / "gen.txt").write_text("generated\n")
    os.symlink(outside / "secret.txt", source / "leak.txt")
    os.symlink(outside, source / "linked")
    os.mkfifo(source / "pipe")
    os.symlink(outside, dest / "sub")
    copied, refused = overlay_generated(
        source,
        ["pkg/version.py", "sub/deep/gen.txt", "leak.txt", "linked/secret.txt", "pipe"],
        dest,
    )
    assert copied == 1 and (dest / "pkg" / "version.py").read_text() == "VERSION = '1'\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing written there
    assert [r.split(":")[0] for r in refused] == [
        "sub/deep/gen.txt",
        "leak.txt",
        "linked/secret.txt",
        "pipe",
    ]
    assert not (dest / "leak.txt").exists() and not (dest / "pipe").exists()


def test_an_install_step_cannot_point_the_manifest_at_a_host_file(tmp_path, app_data):
    """``ln -s <host file> /env/manifest.json`` in an install step: the host writes the
    manifest (and chmods it) after the build, as root."""
    victim = tmp_path / "victim.txt"
    victim.write_text("IMPORTANT APP DATA\n")
    victim.chmod(0o600)
    work = _repository_with_link(tmp_path, tmp_path / "unused")
    env = swe_environment(
        mirror_of(work, tmp_path / "evil.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        fail_to_pass=["tests/test_x.py::test_x"],
        test_command="python -m pytest -rA tests",
        environment_spec={
            **ENVIRONMENT_SPEC,
            "install": [
                f"ln -s {victim} /env/manifest.json; echo ln=$?",
                f"ln -s {victim} /env/venv/../manifest.json; echo ln=$?",
                f"ln -s {victim} /testbed/../env/manifest.json; echo ln=$?; ls -la /env",
            ],
        },
    )
    built, failed = environment_for(env)
    assert failed is None, failed.error
    assert victim.read_text() == "IMPORTANT APP DATA\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    manifest = built.path / "manifest.json"
    assert not manifest.is_symlink() and built.manifest["ready"]
    # Not even in the sandbox's own view: /env is read-only there, only its venv is not.
    log = env.task.environment_builds.order_by("-id").first().log
    assert log.count("ln=1") == 3 and "Read-only file system" in log, log


@pytest.mark.slow
def test_a_forced_rebuild_leaves_the_version_a_running_test_uses(tmp_path):
    """A run holds its environment (``environment_use``) while a forced rebuild replaces it:
    the sandbox that has the old version mounted still finds it whole when it reads it after
    the rebuild; the old version is swept once the run is over."""
    work = _repository_with_link(tmp_path, tmp_path / "unused")
    env = swe_environment(
        mirror_of(work, tmp_path / "evil.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        environment_spec={**ENVIRONMENT_SPEC, "install": ["date +%s%N > .which"]},
    )
    outcome = {}
    with run_folder() as signals, environment_use(env) as (built, _failed):
        first = (built.testbed / ".which").read_text()
        signals.chmod(0o777)
        command = (
            "touch /signals/started; while [ ! -e /signals/go ]; do sleep 0.1; done; "
            "/env/venv/bin/python -c 'import pytest; print(\"old version whole\")'; "
            "cat /env/testbed/.which"
        )
        mounts = [*built.mounts, Mount(signals, "/signals", writable=True)]

        def run():
            outcome["result"] = BwrapSandbox().run(
                command=command, limits=SandboxLimits(wall_s=300), mounts=mounts
            )

        runner = threading.Thread(target=run)
        runner.start()
        _wait_for(signals / "started")
        rebuild = environment_build_start(swe_environment=env, actor=None, force=True)
        environment_build_execute(build_id=rebuild.pk)
        rebuild.refresh_from_db()
        assert rebuild.status == "succeeded", rebuild.error
        (signals / "go").touch()
        runner.join(timeout=120)
        result = outcome["result"]
        assert "old version whole" in result.output and first in result.output, result.output
        assert built.path.is_dir()  # still held: not swept
        environments._sweep_retired()
        assert built.path.is_dir()
    new = ready_environment(built.key)
    assert new.path != built.path and (new.testbed / ".which").read_text() != first
    environments._sweep_retired()
    assert not built.path.exists(), "the retired version was not swept once released"


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def test_a_reward_that_is_a_link_or_a_pipe_is_not_read_on_the_host(tmp_path):
    """The verifier's folder is the sandbox's to write: ``reward.txt`` may be a link to a host
    file (read as root) or a pipe (a read would block the worker for ever)."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"reason": "host secret"}')
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "reward.txt").write_text("1\n")
    os.symlink(secret, linked / "grade.json")
    assert oracle._reward(linked, "log")["reward"] is None
    piped = tmp_path / "piped"
    piped.mkdir()
    os.mkfifo(piped / "reward.txt")
    (piped / "grade.json").write_text("{}")
    done = {}
    reader = threading.Thread(target=lambda: done.update(oracle._reward(piped, "log")))
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "reading the verifier's reward blocked on a pipe"
    assert done["reward"] is None
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "reward.txt").write_text("1\n")
    (plain / "grade.json").write_text('{"reason": "ok"}')
    assert oracle._reward(plain, "log") == {"reward": 1, "reason": "ok"}
