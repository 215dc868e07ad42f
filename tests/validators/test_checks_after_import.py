"""Issue 45, item 1's acceptance, through ``manage.py validate``: every check group of a task
runs straight after the task was imported from ../shared's real data, with nothing prepared
by hand — a Spider question with its database, a BIRD mini-dev question whose database is not
published, and one pytest SWE-bench instance whose environment nobody built. Each gives a
result and none says "The check crashed"; the SWE check builds the environment it needs
and says so, linking the build."""

import json
import shutil
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exchange.importers import import_bird, import_swebench
from hilbench_annotate.models import Task
from tests.conftest import shared_path
from validators.models import EnvironmentBuild, ValidationRun
from validators.registry import groups_for

from .conftest import docker_or_skip

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]

# pytest 5.4 (SWE-bench pins Python 3.9): one instance, the build takes minutes.
SWE_INSTANCE = "pytest-dev__pytest-7432"


def spider_question(*, project, actor, limit: int = 1) -> None:
    """The first Spider question (a BIRD-format file with its SQLite databases)."""
    data = shared_path("data", "spider-bird")
    import_bird(
        project=project,
        questions=data / "dev.json",
        databases=data / "dev_databases",
        limit=limit,
        actor=actor,
    )


def minidev_question(*, project, actor, limit: int = 1) -> None:
    """The first BIRD mini-dev question, imported as published: descriptions, no database."""
    data = shared_path("data", "bird-minidev")
    import_bird(
        project=project,
        questions=data / "mini_dev_sqlite.json",
        databases=data / "database_description",
        limit=limit,
        skip_missing_databases=True,
        actor=actor,
    )


def swe_instance(*, project, actor, folder) -> None:
    """One real pytest SWE-bench instance, with the repository's git bundle."""
    data = shared_path("data", "swe-bench")
    records = [json.loads(line) for line in (data / "pytest-instances.jsonl").open()]
    instances = folder / "instances.jsonl"
    instances.write_text(
        "".join(json.dumps(r) + "\n" for r in records if r["instance_id"] == SWE_INSTANCE)
    )
    import_swebench(
        project=project,
        instances=instances,
        repo=str(data / "pytest-dev__pytest.bundle"),
        actor=actor,
    )


def sandbox_or_skip(python: str = "3.9") -> None:
    """Skip, naming what is missing, unless the configured sandbox can build and run an
    environment of Python ``python``: the docker engine and its base image, or the local
    sandbox (bubblewrap) and that interpreter on this machine."""
    from django.conf import settings

    from validators import interpreters
    from validators.sandbox import probe

    if settings.SANDBOX_BACKEND == "docker":
        docker_or_skip(f"python:{python}-slim")
        return
    isolates, why = probe()
    if not isolates:
        pytest.skip(f"the local sandbox cannot isolate task code here: {why}")
    if python not in interpreters.available_versions():
        pytest.skip(f"no pyenv Python {python} here: the instance's environment needs it")


@pytest.fixture
def nothing_built(settings):
    """A sandbox root of its own: no environment another test built is there to reuse."""
    settings.SANDBOX_ROOT = settings.VAR_DIR / f"sandbox-fresh-{uuid.uuid4().hex[:8]}"
    yield
    shutil.rmtree(settings.SANDBOX_ROOT, ignore_errors=True)


def validate(task, capsys) -> tuple[str, ValidationRun]:
    """``manage.py validate <id> --here`` with the task's default (structural) checks; a run
    that fails a check exits 1, which is an answer too."""
    try:
        call_command("validate", str(task.pk), "--here")
    except CommandError as exc:
        assert exc.returncode == 1, exc  # a check failed: not a refusal to run
    out = capsys.readouterr().out
    return out, ValidationRun.objects.filter(task=task).latest("id")


def assert_a_result_and_no_crash(task, out: str, run: ValidationRun) -> dict[str, tuple]:
    assert "crashed" not in out, out
    assert run.is_finished, run.status
    results = {r.check_name: (r.group, r.outcome, r.message) for r in run.results.all()}
    assert {group for group, *_ in results.values()} == set(groups_for(task.domain)), results
    errors = {name: m for name, (_g, outcome, m) in results.items() if outcome == "error"}
    assert not errors, errors
    for name, (group, outcome, _message) in results.items():
        assert f"{outcome:8} {group} · {name}:" in out, out
    return results


@pytest.mark.parametrize("kind", ["spider", "bird-minidev"])
def test_the_checks_of_a_sql_question_straight_after_import(project, author, kind, capsys):
    (spider_question if kind == "spider" else minidev_question)(project=project, actor=author)
    task = Task.objects.get(project=project)
    out, run = validate(task, capsys)
    results = assert_a_result_and_no_crash(task, out, run)
    if kind == "spider":
        assert results["gold_sql_runs"][1] == "passed", results["gold_sql_runs"]
        assert results["golden_output_matches"][1] == "passed"
    else:  # no database published: the checks that need one say so, the rest run
        assert results["gold_sql_runs"][1:] == (
            "skipped",
            "Not checked: the task has no database; attach one.",
        )
        assert results["gold_sql_parses"][1] == "passed"


@pytest.mark.slow
def test_the_checks_of_a_swe_instance_never_built_build_it_and_say_so(
    project, author, nothing_built, tmp_path, capsys
):
    sandbox_or_skip("3.9")
    swe_instance(project=project, actor=author, folder=tmp_path)
    task = Task.objects.get(project=project, source_id=SWE_INSTANCE)
    assert not EnvironmentBuild.objects.exists()

    out, run = validate(task, capsys)

    results = assert_a_result_and_no_crash(task, out, run)
    build = EnvironmentBuild.objects.get()  # the check built it, recorded against the task
    assert build.task_id == task.pk and build.status == "succeeded", build.error
    before = run.results.get(check_name="fail_to_pass_fail_before")
    after = run.results.get(check_name="tests_pass_with_gold")
    assert before.outcome == after.outcome == "passed", (before.message, after.message)
    assert before.message.startswith("All 1 FAIL_TO_PASS tests fail on the base commit")
    assert before.message.endswith(
        f" The environment was not built yet: this check built it first (build {build.pk}, "
        f"{build.duration_s:.0f} s)."
    ), before.message
    assert before.details["build"] == after.details["build"] == build.pk
    assert results["patches_apply"][1] == "passed"

    # Run again: the environment is there now, reused, and nothing says it was built.
    out, run = validate(task, capsys)
    assert_a_result_and_no_crash(task, out, run)
    assert EnvironmentBuild.objects.count() == 1
    again = run.results.get(check_name="fail_to_pass_fail_before")
    assert "built it first" not in again.message and "build" not in again.details


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_shows_signs_of_life_while_a_check_blocks(project, author):
    """A check that builds an environment first blocks for minutes: the run beats meanwhile,
    so the reaper (a run silent for VALIDATION_STALE_S) never hands it to a second worker."""
    import time

    from validators.registry import GROUPS, CheckResult, register_group
    from validators.services import validation_run_execute, validation_run_start

    seen = {}

    def blocking(task, snapshot, workdir):
        run = ValidationRun.objects.get(task=task)
        time.sleep(12)  # longer than a beat (10 s)
        seen["claimed"] = run.heartbeat_at
        seen["later"] = ValidationRun.objects.get(pk=run.pk).heartbeat_at
        return [CheckResult("blocking", "passed", "Blocked for 12 s.")]

    spider_question(project=project, actor=author)
    task = Task.objects.get(project=project)
    register_group("blocking_h3", blocking, domain="sql", structural=False)
    try:
        run = validation_run_start(task=task, actor=author, checks=["blocking_h3"])
        validation_run_execute(run_id=run.pk)
    finally:
        GROUPS.pop("blocking_h3")
    assert (seen["later"] - seen["claimed"]).total_seconds() >= 5, seen
