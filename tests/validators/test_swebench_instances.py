"""Real SWE-bench instances of pytest (../shared/data/swe-bench) proven end to end, as a user
would: imported with their environments filled from SWE-bench's data, built in the sandbox,
FAIL_TO_PASS failing before the gold patch and passing with it, PASS_TO_PASS passing both
times, no network while tests run. bench/swebench.py runs all 17 (table in docs/quality.md);
the suite runs two: an ordinary one and one whose bug crashes pytest itself."""

import json

import pytest

from exchange.importers import import_swebench
from hilbench_annotate.models import Task
from tests.conftest import shared_path
from validators.swe import BEFORE_CHECK, GOLD_CHECK, check_swe_tests

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]
INSTANCES = ("pytest-dev__pytest-7432", "pytest-dev__pytest-7168")


@pytest.fixture(scope="module")
def selection(tmp_path_factory):
    data = shared_path("data", "swe-bench")
    records = [json.loads(line) for line in (data / "pytest-instances.jsonl").open()]
    path = tmp_path_factory.mktemp("swebench") / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records if r["instance_id"] in INSTANCES))
    return path, data / "pytest-dev__pytest.bundle"


@pytest.mark.slow
@pytest.mark.parametrize("instance", INSTANCES)
def test_a_real_instance_is_proven_in_its_own_environment(selection, project, author, instance):
    instances, bundle = selection
    import_swebench(project=project, instances=instances, repo=str(bundle), actor=author)
    env = Task.objects.get(project=project, source_id=instance).swe_environment
    assert env.environment_spec["python"] == "3.9"  # SWE-bench's pin for pytest 5.4
    assert env.environment_spec["install"] == ["python -m pip install -e ."]
    assert env.test_command.startswith("pytest -rA testing/")
    before, after = check_swe_tests(env)
    assert before.name == BEFORE_CHECK and before.outcome == "passed", before.message
    assert after.name == GOLD_CHECK and after.outcome == "passed", after.message
    assert before.details["network_isolated"] and after.details["network_isolated"]


@pytest.mark.slow
def test_every_real_instance_shipped_clean_passes_the_leakage_check(project, author):
    """All 17 pytest instances, sanitized as shipped: every rule passes. In 7 of them the gold
    patch adds lines the base tree already holds elsewhere (``import platform``, ``except
    OSError:``…) — visible to the agent anyway, so not distinctive; they used to fail."""
    import tempfile
    from pathlib import Path

    from hilbench_annotate.services import task_snapshot
    from validators.registry import run_group

    data = shared_path("data", "swe-bench")
    import_swebench(
        project=project,
        instances=data / "pytest-instances.jsonl",
        repo=str(data / "pytest-dev__pytest.bundle"),
        actor=author,
    )
    visible_anyway = {}
    for task in Task.objects.filter(project=project).order_by("source_id"):
        with tempfile.TemporaryDirectory() as tmp:
            results = run_group("history_leakage", task, task_snapshot(task), Path(tmp))
        assert len(results) == 7
        assert [r for r in results if r.outcome != "passed"] == [], task.source_id
        text = next(r for r in results if r.name == "no_forbidden_text")
        if text.details["texts_in_head_tree"]:
            visible_anyway[task.source_id] = text.details["texts_in_head_tree"]
    assert Task.objects.filter(project=project).count() == 17
    assert len(visible_anyway) >= 5
    assert "import platform" in visible_anyway["pytest-dev__pytest-5692"]


@pytest.mark.slow
def test_a_real_pylint_instance_builds_from_its_requirement_files(project, author, tmp_path):
    """pylint-dev/pylint: SWE-bench's ``packages: requirements.txt`` — the repository's
    ``requirements_test.txt`` (with the files its ``-r`` lines name) read at the instance's
    ``environment_setup_commit``, installed in the sandbox; its tests read by
    ``parse_log_pytest_options`` (a PASS_TO_PASS id with a path parameter). bench/swebench.py
    runs all 6."""
    data = shared_path("data", "swe-bench")
    records = [json.loads(line) for line in (data / "pylint-instances.jsonl").open()]
    [record] = [r for r in records if r["instance_id"] == "pylint-dev__pylint-7080"]
    instances = tmp_path / "pylint.jsonl"
    instances.write_text(json.dumps(record) + "\n")
    report = import_swebench(
        project=project,
        instances=instances,
        repo=str(data / "pylint-dev__pylint.bundle"),
        actor=author,
    )
    assert report.notes == []
    env = Task.objects.get(project=project, source_id=record["instance_id"]).swe_environment
    spec = env.environment_spec
    assert spec["requirement_files"] == ["requirements_test.txt"]
    assert spec["requirements_commit"] == record["environment_setup_commit"]
    assert spec["log_parser"] == "pytest_options"
    before, after = check_swe_tests(env)
    assert before.outcome == "passed", before.message
    assert after.outcome == "passed", after.message
    assert before.details["network_isolated"] and after.details["network_isolated"]
    # The environment may be one an earlier run built (environments outlive a test database):
    # what it installed is in its manifest and its requirements folder.
    from validators.environments import environment_key, ready_environment

    built = ready_environment(environment_key(env))
    assert built.manifest["requirements"]["path"] == "requirements_test.txt"
    assert built.manifest["requirements"]["commit"] == record["environment_setup_commit"]
    assert built.manifest["requirements"]["included"] == [
        "requirements_test_pre_commit.txt",
        "requirements_test_min.txt",
    ]
    installed = (built.path / "requirements" / "requirements.txt").read_text()
    assert "types-setuptools" in installed  # SWE-bench's replacement for types-pkg_resources
    assert "-e ." not in installed
