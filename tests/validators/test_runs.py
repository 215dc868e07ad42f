"""Validation runs: queued on commit, executed idempotently, shown live, read by the gates."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from exchange.importers import import_swebench
from exchange.management.commands.seed_demo import DEMO_BLOCKERS
from hilbench_annotate import services as core
from hilbench_annotate.gates import gate_results
from hilbench_annotate.jobs import jobs_reap
from hilbench_annotate.models import Task
from validators.models import ValidationResult, ValidationRun
from validators.services import validation_run_execute
from validators.tasks import validation_run_job

pytestmark = pytest.mark.django_db

SWE_BLOCKERS = [{**b, "type": "missing parameters", "subtype": ""} for b in DEMO_BLOCKERS]


@pytest.fixture
def swe_task(project, author, demo_data):
    import_swebench(
        project=project,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=author,
    )
    task = Task.objects.get(project=project)
    for blocker in SWE_BLOCKERS:
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    return task


def _start(client, task, checks):
    return client.post(
        reverse("validation-start", args=[task.pk]), {"checks": checks}, HTTP_HX_REQUEST="true"
    )


def test_run_is_queued_on_commit_and_the_job_fills_it_in(
    client, swe_task, author, django_capture_on_commit_callbacks
):
    client.force_login(author)
    with django_capture_on_commit_callbacks() as callbacks:
        response = _start(client, swe_task, ["spec", "swe_patches"])
    run = ValidationRun.objects.get()
    assert response.status_code == 200 and run.status == "queued" and len(callbacks) == 1
    assert run.revision == swe_task.revisions.order_by("-number").first()

    polling = client.get(
        reverse("validation-run", args=[swe_task.pk, run.pk]), HTTP_HX_REQUEST="true"
    )
    assert polling.status_code == 200 and 'hx-trigger="every 1s"' in polling.content.decode()

    validation_run_job.apply(kwargs={"run_id": run.pk})  # the worker's job, in process

    run.refresh_from_db()
    assert run.status == "passed", list(run.results.values_list("check_name", "message"))
    checks = set(run.results.values_list("check_name", flat=True))
    assert {
        "blocker_count",
        "no_resolution_in_spec",
        "full_info_has_resolutions",
        "patches_apply",
    } <= checks
    done = client.get(reverse("validation-run", args=[swe_task.pk, run.pk]), HTTP_HX_REQUEST="true")
    assert done.status_code == 286  # stop polling
    assert "Run again" in done.content.decode()


def test_redelivered_job_adds_no_results_and_stale_run_is_taken_over(swe_task, author, settings):
    run = ValidationRun.objects.create(
        task=swe_task, revision=swe_task.revisions.first(), checks=["spec"]
    )
    validation_run_execute(run_id=run.pk)
    count = ValidationResult.objects.filter(run=run).count()
    validation_run_execute(run_id=run.pk)  # a second delivery of the same job
    assert ValidationResult.objects.filter(run=run).count() == count == 3

    # A run left "running" by a worker that died: the next delivery takes it over and
    # finishes only what was missing.
    stale = ValidationRun.objects.create(
        task=swe_task,
        revision=swe_task.revisions.first(),
        checks=["spec", "swe_patches"],
        status="running",
        heartbeat_at=timezone.now() - timedelta(hours=1),
        attempts=1,
    )
    ValidationResult.objects.create(
        run=stale, group="spec", check_name="blocker_count", outcome="passed", message="3 blockers"
    )
    validation_run_execute(run_id=stale.pk)
    stale.refresh_from_db()
    assert stale.status == "passed" and stale.attempts == 2
    names = list(stale.results.values_list("check_name", flat=True))
    assert names.count("blocker_count") == 1 and "patches_apply" in names
    # "spec" counted as done, so its other checks were not re-run: one result per check.
    assert len(names) == len(set(names))


def test_a_running_run_with_a_live_worker_is_left_alone(swe_task):
    run = ValidationRun.objects.create(
        task=swe_task,
        revision=swe_task.revisions.first(),
        checks=["spec"],
        status="running",
        heartbeat_at=timezone.now(),
    )
    validation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "running" and not run.results.exists()


def test_reaper_gives_up_after_three_attempts(swe_task, settings):
    settings.VALIDATION_STALE_S = 1
    run = ValidationRun.objects.create(
        task=swe_task,
        revision=swe_task.revisions.first(),
        checks=["spec"],
        status="running",
        heartbeat_at=timezone.now() - timedelta(minutes=5),
        attempts=3,
    )
    assert jobs_reap()["validators.ValidationRun"] == 0  # not sent a fourth time
    run.refresh_from_db()
    assert run.status == "error" and "Gave up after 3 attempts" in run.error


def test_failing_check_fails_the_run_and_names_why(swe_task):
    swe_task.blockers.last().delete()  # two blockers left
    core.revision_create(task=swe_task, actor=None, reason="test")
    run = ValidationRun.objects.create(
        task=swe_task, revision=swe_task.revisions.order_by("-number").first(), checks=["spec"]
    )
    validation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.results.get(check_name="blocker_count").message == "2 blockers; a task needs 3–5"


def test_gate_reads_the_current_revision_only(swe_task):
    def gate(task):
        [(_name, green, message)] = gate_results(task, ["spec"])
        return green, message

    assert gate(swe_task)[0] is False  # never validated
    run = ValidationRun.objects.create(
        task=swe_task, revision=swe_task.revisions.order_by("-number").first(), checks=["spec"]
    )
    validation_run_execute(run_id=run.pk)
    assert gate(swe_task) == (True, f"passed in run {run.pk}")
    core.revision_create(task=swe_task, actor=None, reason="a later edit")
    green, message = gate(swe_task)
    assert green is False and "current revision" in message


def test_validate_command_exit_codes(swe_task, capsys):
    call_command("validate", str(swe_task.pk), "--here", "--checks", "spec", "swe_patches")
    assert "Run " in capsys.readouterr().out
    swe_task.blockers.last().delete()
    core.revision_create(task=swe_task, actor=None, reason="test")
    with pytest.raises(CommandError) as err:
        call_command("validate", str(swe_task.pk), "--here", "--checks", "spec")
    assert err.value.returncode == 1
    with pytest.raises(CommandError, match="Unknown checks"):
        call_command("validate", str(swe_task.pk), "--here", "--checks", "sql_ground_truth")


def _results(run) -> dict[str, tuple[str, str]]:
    return {r.check_name: (r.outcome, r.message) for r in run.results.all()}


def _run_pinned_while_the_author_saves(task, author, checks, change):
    """A run started on revision N; the author saves N+1 (``change`` applied to the
    environment) before the worker gets to it. The run's results, and those of a run on
    N+1, for comparison."""
    from authoring.services import workspace_save

    first = ValidationRun.objects.create(
        task=task, revision=task.revisions.order_by("-number").first(), checks=checks
    )
    validation_run_execute(run_id=first.pk)
    pinned = ValidationRun.objects.create(task=task, revision=first.revision, checks=checks)
    task.refresh_from_db()
    draft = core.task_snapshot(task)
    draft["environment"].update(change)
    workspace_save(task=task, actor=author, expected_version=task.version, draft=draft)
    validation_run_execute(run_id=pinned.pk)  # the worker runs it now
    later = ValidationRun.objects.create(
        task=task, revision=task.revisions.order_by("-number").first(), checks=checks
    )
    validation_run_execute(run_id=later.pk)
    assert later.revision.number == pinned.revision.number + 1
    return _results(first), _results(pinned), _results(later)


def test_a_run_checks_the_swe_revision_it_is_pinned_to(swe_task, author):
    broken = "--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-absent\n+present\n"
    first, pinned, later = _run_pinned_while_the_author_saves(
        swe_task, author, ["swe_patches"], {"setup_patch": broken}
    )
    assert first["patches_apply"][0] == "passed"
    assert later["patches_apply"][0] == "failed"  # the edit matters…
    assert pinned == first  # …and the run on the earlier revision does not see it


def test_a_run_checks_the_sql_revision_it_is_pinned_to(sql_task, author):
    first, pinned, later = _run_pinned_while_the_author_saves(
        sql_task, author, ["sql_ground_truth"], {"gold_sql": "SELECT no_such_column FROM nowhere"}
    )
    assert first["gold_sql_runs"][0] == "passed"
    assert later["gold_sql_runs"][0] != "passed"
    assert pinned == first
