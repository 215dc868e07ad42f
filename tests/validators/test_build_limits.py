"""Issue 24, items 3 and 8, through the real build job on the local sandbox: a build whose
install nests a folder 1,200 levels deep ends (never left running), leaves no folder, and
stops no later build; whatever stops a build fails its row; the reaper finishes a build
whose worker died; and a build's writes, all its folders together, stay within the disk
limit — what did not fit never reaches the host."""

import logging
import os
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from hilbench_annotate.celery import app
from hilbench_annotate.jobs import jobs_reap
from hilbench_annotate.toolkit.trees import remove_tree
from validators import environments
from validators.environments import (
    environment_build_execute,
    environment_build_start,
    environments_root,
    ready_environment,
)
from validators.models import EnvironmentBuild
from validators.sandbox import BwrapSandbox, Mount, SandboxLimits, run_folder

from .gitutil import git
from .test_deep_trees import DEPTH, deep_folder
from .test_swe_checks import ENVIRONMENT_SPEC, mirror_of, swe_environment

pytestmark = pytest.mark.django_db

DEEP_INSTALL = (
    f"i=0; while [ $i -lt {DEPTH} ]; do mkdir d && cd d || exit 1; i=$((i+1)); done; "
    "echo bottom > leaf.txt"
)


def _repository(tmp_path, name="repo"):
    work = tmp_path / name
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    return work


def _env(tmp_path, install, name="repo"):
    work = _repository(tmp_path, name)
    return swe_environment(
        mirror_of(work, tmp_path / f"{name}.git"),
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        fail_to_pass=["tests/test_x.py::test_x"],
        test_command="python -m pytest -rA tests",
        environment_spec={**ENVIRONMENT_SPEC, "install": install},
    )


def _build(env, *, force=False) -> EnvironmentBuild:
    build = environment_build_start(swe_environment=env, actor=None, force=force)
    environment_build_execute(build_id=build.pk)
    build.refresh_from_db()
    return build


def _partial_builds(key: str) -> list:
    return list(environments_root().glob(f".build-{key}-*"))


def _size_mb(*folders) -> float:
    total = 0
    for folder in folders:
        for directory, _dirs, files in os.walk(folder):
            for name in files:
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total / (1 << 20)


@pytest.mark.slow
def test_a_folder_1200_deep_stops_neither_its_build_nor_a_later_one(app_data, tmp_path):
    deep = _env(tmp_path, [DEEP_INSTALL], "deep")
    build = _build(deep)
    assert build.status in ("succeeded", "failed"), (build.status, build.error)
    assert _partial_builds(build.key) == []
    if build.status == "succeeded":  # the version published, then retired by a rebuild
        old = ready_environment(build.key).path
        assert ("/".join(["d"] * DEPTH) + "/leaf.txt") in ready_environment(build.key).manifest[
            "generated"
        ]
        again = _build(deep, force=True)
        assert again.status == "succeeded", again.error
        environments._sweep_retired()
        assert not old.exists(), "the retired deep version was not swept"
    # A deep folder a dead worker's build left is swept at the start of the next build.
    stale = environments_root() / ".build-stale-deep"
    deep_folder(stale)
    past = time.time() - 10 * 3600
    os.utime(stale, (past, past))
    later = _build(_env(tmp_path, ["echo ok > done.txt"], "later"))
    assert later.status == "succeeded", later.error
    assert not stale.exists(), "the sweep left the deep folder"
    # The deep environment goes too: left in the var folder, it stops every tool that walks
    # the project with recursion (setuptools' package discovery among them).
    (environments_root() / build.key).unlink(missing_ok=True)
    for version in environments_root().glob(f"{environments.VERSION}{build.key}-*"):
        remove_tree(version)


def test_the_sweep_logs_and_skips_what_it_cannot_remove(monkeypatch, caplog, settings):
    # A sandbox root of this worker's own: the run's shared one is swept by the builds of
    # the other worker too, which would remove the stale folders before this sweep sees them.
    settings.SANDBOX_ROOT = settings.VAR_DIR / "sandbox-sweep"
    root = environments_root()
    past = time.time() - 10 * 3600
    stuck, gone = root / ".build-stuck-1", root / ".build-gone-1"
    for path in (stuck, gone):
        (path / "x").mkdir(parents=True, exist_ok=True)
        os.utime(path, (past, past))
    real = environments.remove_tree

    def remove_tree(path):
        if path == stuck:
            raise OSError(13, f"{path} not removed: Permission denied")
        real(path)

    monkeypatch.setattr(environments, "remove_tree", remove_tree)
    with caplog.at_level(logging.WARNING, logger="validators.environments"):
        environments._sweep_partial_builds()
    assert not gone.exists() and stuck.exists()
    assert "left in place" in caplog.text and str(stuck) in caplog.text
    real(stuck)


def test_any_error_in_a_build_fails_its_row_and_removes_its_folder(tmp_path, monkeypatch):
    def broken(testbed, tracked):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(environments, "_generated_files", broken)
    build = _build(_env(tmp_path, ["echo hi > gen.txt"], "broken"))
    assert build.status == "failed"
    assert "step 'finish'" in build.error and "RecursionError" in build.error, build.error
    assert build.finished_at is not None
    assert _partial_builds(build.key) == []


@pytest.fixture
def eager():
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_the_reaper_finishes_a_build_whose_worker_died(tmp_path, eager, settings):
    settings.ENVIRONMENT_STALE_S = 600
    build = environment_build_start(
        swe_environment=_env(tmp_path, ["echo ok > done.txt"], "reaped"), actor=None
    )
    # A worker claimed it and died (or hung past its stale time): running, silent.
    hour_ago = timezone.now() - timedelta(hours=1)
    EnvironmentBuild.objects.filter(pk=build.pk).update(
        status="running", started_at=hour_ago, heartbeat_at=hour_ago, attempts=1
    )
    assert jobs_reap()["validators.EnvironmentBuild"] == 1
    build.refresh_from_db()
    assert build.status == "succeeded", build.error
    # One that kept dying is failed with the reason instead of being sent again.
    dying = environment_build_start(
        swe_environment=_env(tmp_path, ["echo again > done.txt"], "dying"), actor=None
    )
    EnvironmentBuild.objects.filter(pk=dying.pk).update(
        status="running", heartbeat_at=hour_ago, attempts=settings.JOB_MAX_ATTEMPTS
    )
    jobs_reap()
    dying.refresh_from_db()
    assert dying.status == "failed" and "Gave up" in dying.error


# --- item 8: the disk limit of a build --------------------------------------------------


def test_a_build_writing_past_the_disk_limit_fails_and_leaves_nothing(app_data, tmp_path, settings):
    settings.SANDBOX_DISK_MB = 64
    env = _env(tmp_path, ["dd if=/dev/zero of=big bs=1M count=200"], "big")
    build = _build(env)
    assert build.status == "failed"
    assert "stopped by the disk limit" in build.error, build.error
    assert ready_environment(build.key) is None
    assert _partial_builds(build.key) == []


@pytest.mark.slow
def test_the_limit_is_one_budget_for_all_the_build_fills(app_data, tmp_path, settings):
    """40 MB into the repository and 40 MB into the venv: each fits alone, not together.
    A build within the limit still builds."""
    settings.SANDBOX_DISK_MB = 64
    small = _build(_env(tmp_path, ["dd if=/dev/zero of=small bs=1M count=8"], "small"))
    assert small.status == "succeeded", small.error
    assert _size_mb(ready_environment(small.key).path) < 64
    split = [
        "dd if=/dev/zero of=/testbed/half bs=1M count=40",
        "dd if=/dev/zero of=/env/venv/half bs=1M count=40",
    ]
    build = _build(_env(tmp_path, split, "split"))
    assert build.status == "failed"
    assert "stopped by the disk limit" in build.error and "'install'" in build.error


def test_a_step_receives_back_only_what_fit(app_data, tmp_path):
    """Straight to the sandbox: a step that ignores its full disk ends, and the host folders
    it filled hold at most the limit, whatever it tried to write."""
    with run_folder() as folder:
        tree, venv = folder / "tree", folder / "venv"
        for path in (tree, venv):
            path.mkdir()
            path.chmod(0o777)
        (tree / "kept.txt").write_text("repository file\n")
        result = BwrapSandbox().run(
            command="dd if=/dev/zero of=/testbed/a bs=1M count=50; "
            "dd if=/dev/zero of=/env/venv/b bs=1M count=50; "
            "echo sideways > /.kept/testbed/x; ls /.kept; true",
            limits=SandboxLimits(wall_s=60, disk_mb=64),
            tree=tree,
            persist_tree=True,
            mounts=[Mount(venv, "/env/venv", writable=True)],
        )
        assert result.disk_exceeded and result.stopped == "disk limit", result.output
        assert _size_mb(tree, venv) <= 64
        assert (tree / "kept.txt").read_text() == "repository file\n"
        assert not (tree / "x").exists(), "the step wrote to the host folder directly"


def test_a_step_cannot_swap_its_disk_folder_for_a_link_to_the_machine(app_data, tmp_path):
    """The step renames its ``/.disk`` folder and leaves a link to ``/usr/lib`` in its place:
    the copy back would follow it onto the host (gigabytes past the limit). The step does not
    see ``/.disk`` at all, and a link there is never copied back."""
    with run_folder() as folder:
        tree = folder / "tree"
        tree.mkdir()
        environments._own(tree, for_sandbox=True)  # as a build's folders are
        result = BwrapSandbox().run(
            command="mkdir -p /.disk/junk; mv /.disk/testbed /.disk/junk/t; "
            "ln -s /usr/lib /.disk/testbed; ls -la /.disk; true",
            limits=SandboxLimits(wall_s=60, disk_mb=16),
            tree=tree,
            persist_tree=True,
        )
        assert result.exit_code == 0, result.output
        assert _size_mb(tree) <= 16, result.output
        assert not any(p.is_symlink() for p in tree.iterdir())
