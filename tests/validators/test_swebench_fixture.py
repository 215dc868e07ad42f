"""The twin of test_swebench_instances.py on the project's own SWE-bench fixture
(fixtures/swebench: the ``textkit`` repository and its two real bugs), so that a fresh clone
without ../shared proves the same path end to end: the records imported with their
environment specification, the environment built in the local sandbox, FAIL_TO_PASS failing
before the gold patch and FAIL_TO_PASS with PASS_TO_PASS passing with it (no network while
tests run), and the history leakage check passing on the repository an agent would get — the
same ``check_swe_tests`` and ``history_leakage`` group the real instances go through."""

import json
import re
import tempfile
from pathlib import Path

import pytest

from exchange.importers import import_swebench
from hilbench_annotate.envspec import spec_clean
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_snapshot
from tests.conftest import FIXTURES
from validators.environments import environment_for
from validators.leakage import RULES
from validators.registry import run_group
from validators.results import PASSED
from validators.swe import BEFORE_CHECK, GOLD_CHECK, check_swe_tests

pytestmark = pytest.mark.django_db

SWEBENCH = FIXTURES / "swebench"
# What textkit's tests need, as fixtures/make_bundle.py gives it: the machine's Python 3.11
# and pytest (pinned, as the demo instance's; pip finds it where the machine's pip looks).
PYTEST = "pytest==8.3.3"
ENVIRONMENT = {"language": "python", "python": "3.11", "packages": [PYTEST],
               "log_parser": "pytest"}  # fmt: skip
# pip's words when no index answered (a machine offline), not when one lacks the pin.
_NO_INDEX = re.compile(r"Failed to establish a new connection|Network is unreachable")
TEST_FILES = {
    "fixture__textkit-1": "tests/test_wrap.py",
    "fixture__textkit-2": "tests/test_slug.py",
}


@pytest.fixture
def imported(project, author, tmp_path, settings):
    """Both fixture records (SWE-bench's fields and SWE-Bench Pro's), each carrying the
    environment specification as a hand-written record or our own export does, imported
    from the fixture's git bundle; built and run in the local sandbox, whatever the machine
    is configured with."""
    settings.SANDBOX_BACKEND = "local"
    records = [json.loads(line) for line in (SWEBENCH / "instances.jsonl").open()]
    path = tmp_path / "instances.jsonl"
    path.write_text(
        "".join(json.dumps({**r, "environment_spec": ENVIRONMENT}) + "\n" for r in records)
    )
    report = import_swebench(
        project=project, instances=path, repo=str(SWEBENCH / "textkit.bundle"), actor=author
    )
    assert report.created == list(TEST_FILES)
    return project


def _built_or_skip(env) -> None:
    """Build the environment (what ``check_swe_tests`` would, and it reuses it). Its only
    download is pytest: where no package index answers, the test is skipped saying so; any
    other build failure is the test's failure."""
    _built, failed = environment_for(env)
    if (
        failed is not None
        and failed.step == "packages"
        and f"No matching distribution found for {PYTEST}" in failed.log
        and _NO_INDEX.search(failed.log)
    ):
        pytest.skip(f"no package index answers: the environment's build fetches {PYTEST}")
    assert failed is None, failed.error


@pytest.mark.parametrize("instance", list(TEST_FILES))
def test_a_fixture_instance_is_proven_in_its_own_environment(imported, instance):
    env = Task.objects.get(project=imported, source_id=instance).swe_environment
    assert env.environment_spec == spec_clean(ENVIRONMENT)
    assert env.test_command == f"python -m pytest -rA {TEST_FILES[instance]}"
    _built_or_skip(env)

    before, after = check_swe_tests(env)

    assert before.name == BEFORE_CHECK and before.outcome == PASSED, before.message
    assert after.name == GOLD_CHECK and after.outcome == PASSED, after.message
    assert before.details["backend"] == after.details["backend"] == "local"
    assert before.details["network_isolated"] and after.details["network_isolated"]
    # The bug is real: its tests ran and failed before the gold patch; the others passed.
    assert {before.details["statuses"][t] for t in env.fail_to_pass} <= {"FAILED", "ERROR"}
    assert before.details["pass_to_pass_not_passing"] == []
    assert set(after.details["statuses"]) == {*env.fail_to_pass, *env.pass_to_pass}
    assert set(after.details["statuses"].values()) == {"PASSED"}


def test_the_fixture_instances_pass_the_history_leakage_check(imported):
    """textkit's history holds the upstream fix of ``truncate`` (a commit after
    fixture__textkit-1's base): the repository an agent gets must hold none of it."""
    tasks = Task.objects.filter(project=imported).order_by("source_id")
    assert tasks.count() == len(TEST_FILES)
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            results = run_group("history_leakage", task, task_snapshot(task), Path(tmp))
        assert [r.name for r in results] == list(RULES), task.source_id
        assert [r for r in results if r.outcome != PASSED] == [], task.source_id
