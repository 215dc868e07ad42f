"""The SWE test-run check on real repositories — the demo instance and tiny hostile ones —
in their built environments, in the sandbox."""

import json
import time
from pathlib import Path

import pytest

from exchange.demo.swe_demo import ENVIRONMENT_SPEC
from hilbench_annotate.models import Repository, SweEnvironment
from tests.factories import TaskFactory
from validators.results import ERROR, FAILED, PASSED, SKIPPED
from validators.sandbox import SandboxLimits
from validators.swe import BEFORE_CHECK, GOLD_CHECK, check_swe_tests

from .gitutil import git

pytestmark = pytest.mark.django_db


def mirror_of(work: Path, dest: Path) -> Path:
    git(dest.parent, "clone", "-q", "--mirror", str(work), str(dest))
    return dest


def swe_environment(mirror: Path, **fields) -> SweEnvironment:
    """A real task's SweEnvironment over ``mirror`` (any field may be given)."""
    repository = Repository.objects.create(
        name=f"tests/{mirror.stem}-{Repository.objects.count()}",
        origin=str(mirror),
        storage_path=str(mirror),  # absolute: REPOSITORY_STORE / it is the mirror itself
    )
    task = TaskFactory(swe=True)
    env = task.swe_environment
    env.repository = repository
    env.repo_name = repository.name
    for name, value in {"environment_spec": ENVIRONMENT_SPEC, **fields}.items():
        setattr(env, name, value)
    env.save()
    return env


def by_name(results):
    assert [r.name for r in results] == [BEFORE_CHECK, GOLD_CHECK]
    return {r.name: r for r in results}


@pytest.fixture
def demo_env(demo_data, tmp_path):
    """The demo SWE instance as a task over a fresh bare mirror."""
    instance = json.loads(Path(demo_data["swe"]["instances"]).read_text())[0]
    mirror = mirror_of(Path(demo_data["swe"]["repo"]), tmp_path / "mirror.git")
    return swe_environment(
        mirror,
        base_commit=instance["base_commit"],
        setup_patch="",
        test_patch=instance["test_patch"],
        gold_patch=instance["patch"],
        fail_to_pass=list(instance["FAIL_TO_PASS"]),
        pass_to_pass=list(instance["PASS_TO_PASS"]),
        test_command=instance["test_cmd"],
    )


def test_demo_instance_passes_both_checks(demo_env):
    results = by_name(check_swe_tests(demo_env))
    before, after = results[BEFORE_CHECK], results[GOLD_CHECK]
    assert before.outcome == PASSED, before.message
    assert after.outcome == PASSED, after.message
    assert set(before.details["statuses"].values()) <= {"FAILED", "ERROR"}
    assert before.details["pass_to_pass_not_passing"] == []
    assert "short test summary info" in after.details["output"]


def test_fail_to_pass_test_that_already_passes_is_named(demo_env):
    already_passing = demo_env.pass_to_pass[0]
    demo_env.fail_to_pass = [*demo_env.fail_to_pass, already_passing]
    before = by_name(check_swe_tests(demo_env))[BEFORE_CHECK]
    assert before.outcome == FAILED
    assert already_passing in before.message
    assert before.details["passing"] == [already_passing]


def test_pass_to_pass_test_failing_before_the_fix_is_named(demo_env):
    failing_before = demo_env.fail_to_pass[0]
    demo_env.pass_to_pass = [*demo_env.pass_to_pass, failing_before]
    before = by_name(check_swe_tests(demo_env))[BEFORE_CHECK]
    assert before.outcome == FAILED
    assert "PASS_TO_PASS test(s) do not pass" in before.message
    assert failing_before in before.message


def test_unknown_test_id_is_reported_missing(demo_env):
    demo_env.fail_to_pass = [*demo_env.fail_to_pass, "tests/test_money.py::test_nonexistent"]
    results = by_name(check_swe_tests(demo_env))
    for result in results.values():
        assert result.outcome == FAILED
        assert "not in the run's" in result.message
        assert "tests/test_money.py::test_nonexistent" in result.message


def test_empty_gold_patch_leaves_fail_to_pass_failing(demo_env):
    demo_env.gold_patch = ""
    results = by_name(check_swe_tests(demo_env))
    assert results[BEFORE_CHECK].outcome == PASSED
    after = results[GOLD_CHECK]
    assert after.outcome == FAILED
    assert "do not pass" in after.message
    assert sorted(after.details["failing"]) == sorted(demo_env.fail_to_pass)
    for test_id in demo_env.fail_to_pass:
        assert test_id in after.message


def test_gold_patch_that_does_not_apply_is_named(demo_env):
    demo_env.gold_patch = demo_env.test_patch  # the test patch a second time
    after = by_name(check_swe_tests(demo_env))[GOLD_CHECK]
    assert after.outcome == FAILED
    assert "gold patch" in after.message
    assert "does not apply" in after.message


def test_no_repository_is_skipped(demo_env):
    demo_env.repository = None
    results = check_swe_tests(demo_env)
    assert [r.outcome for r in results] == [SKIPPED, SKIPPED]
    assert "no repository" in results[0].message


def _tiny_env(tmp_path: Path, test_body: str) -> SweEnvironment:
    """A one-test repository whose test does ``test_body``; gold patch is a no-op."""
    work = tmp_path / "tiny"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_hostile.py").write_text(f"def test_hostile():\n    {test_body}\n")
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    mirror = mirror_of(work, tmp_path / "tiny.git")
    return swe_environment(
        mirror,
        base_commit=git(work, "rev-parse", "HEAD").strip(),
        setup_patch="",
        test_patch="",
        gold_patch="",
        fail_to_pass=["tests/test_hostile.py::test_hostile"],
        pass_to_pass=[],
        test_command="python -m pytest -rA -p no:cacheprovider tests",
    )


def test_a_test_that_loops_forever_fails_with_a_timeout(tmp_path):
    env = _tiny_env(tmp_path, "while True: pass")
    start = time.monotonic()
    results = by_name(check_swe_tests(env, limits=SandboxLimits(wall_s=3)))
    assert time.monotonic() - start < 20
    for result in results.values():
        assert result.outcome == FAILED
        assert "wall-time limit" in result.message
        assert result.details["timed_out"]


def test_a_memory_hog_fails_without_hanging(tmp_path):
    env = _tiny_env(tmp_path, "x = []\n    while True: x.append(' ' * 10**7)")
    start = time.monotonic()
    results = by_name(check_swe_tests(env, limits=SandboxLimits(wall_s=60, memory_mb=512)))
    assert time.monotonic() - start < 60
    for result in results.values():
        assert not result.details["timed_out"]
        assert result.details["memory_exceeded"]
    # pytest reported the test (it failed with MemoryError): a failing test, not a broken run.
    after = results[GOLD_CHECK]
    assert after.outcome == FAILED
    assert "do not pass" in after.message and "memory limit" in after.message, after.message


def test_an_import_error_is_the_environment_not_the_tests(tmp_path):
    env = _tiny_env(tmp_path, "pass")
    env.test_command = "python -c 'import not_installed_anywhere'"
    env.save()
    for result in check_swe_tests(env):
        assert result.outcome == ERROR
        assert result.message.startswith("The environment is broken"), result.message
        assert "ModuleNotFoundError: No module named 'not_installed_anywhere'" in result.message
        assert "not_installed_anywhere" in result.details["log_tail"]


def test_pytest_usage_error_is_named_with_its_exit_code(tmp_path):
    env = _tiny_env(tmp_path, "pass")
    env.test_command = "python -m pytest -rA --no-such-option tests"
    env.save()
    for result in check_swe_tests(env):
        assert result.outcome == ERROR
        assert "pytest exited with 4 (a usage error)" in result.message


def test_a_build_that_fails_names_its_step_and_shows_the_log(tmp_path):
    env = _tiny_env(tmp_path, "pass")
    env.environment_spec = {**ENVIRONMENT_SPEC, "install": ["echo about to fail; exit 3"]}
    env.save()
    for result in check_swe_tests(env):
        assert result.outcome == ERROR
        assert "its build failed at step 'install'" in result.message
        assert "about to fail" in result.details["log_tail"]


def test_an_unknown_parser_is_said_plainly(tmp_path):
    env = _tiny_env(tmp_path, "pass")
    env.environment_spec = {**ENVIRONMENT_SPEC, "log_parser": "parse_log_sympy"}
    env.save()
    for result in check_swe_tests(env):
        assert result.outcome == ERROR
        assert "The log parser 'parse_log_sympy' is not supported" in result.message


def test_without_an_isolating_sandbox_nothing_runs(tmp_path, settings):
    from validators.sandbox import probe

    env = _tiny_env(tmp_path, "open('/tmp/ran', 'w').write('ran')")
    settings.SANDBOX_BWRAP = str(tmp_path / "no-such-bwrap")
    settings.SANDBOX_ROOT = tmp_path.parent / "sandbox-without-bwrap"
    probe.cache_clear()
    try:
        results = check_swe_tests(env)
    finally:
        probe.cache_clear()
    for result in results:
        assert result.outcome == ERROR
        assert "Task code cannot run" in result.message
        assert "bubblewrap (bwrap) is not installed" in result.message
