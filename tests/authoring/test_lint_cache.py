"""The lint gate of many tasks at once, and the findings it keeps per saved state: an
unchanged task is read from what was kept, an edited one is linted again, and a finding
about the machine rather than the task is never kept."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from authoring.models import LintResult
from hilbench_annotate import services
from hilbench_annotate.gates import gate_results, gate_results_many
from hilbench_annotate.models import Task
from tests.exchange.bundle_helpers import seed_demo, sql_task, user

pytestmark = pytest.mark.django_db
GATES = ["lint_clean", "structural", "judge_recall", "pass_rate"]


def test_a_kept_result_is_read_back_and_an_edit_lints_again(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    task = sql_task(project)
    assert gate_results(task, ["lint_clean"])[0][1] is True
    assert LintResult.objects.count() == 1
    # What was kept is what the gate reads: an error put there turns it red …
    LintResult.objects.update(
        findings=[
            {"rule": "r", "field": "f", "message": "m", "severity": "error", "fingerprint": "x"}
        ]
    )
    assert gate_results(task, ["lint_clean"])[0][1:] == (
        False,
        "1 lint error(s) neither fixed nor waived",
    )
    # … until the task changes: a new state, linted anew.
    task = Task.objects.get(pk=task.pk)
    with transaction.atomic():
        services.task_update(
            task=task,
            actor=user("author"),
            expected_version=task.version,
            blocked_spec={**task.blocked_spec, "question": task.blocked_spec["question"] + " "},
        )
    assert gate_results(Task.objects.get(pk=task.pk), ["lint_clean"])[0][1] is True
    assert LintResult.objects.count() == 2


def test_a_finding_about_the_machine_is_not_kept(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    task = sql_task(project)
    with transaction.atomic():
        services.task_touch_environment(
            task=task,
            actor=user("author"),
            expected_version=task.version,
            changes={"edit_script": "UPDATE loan SET status = 'A';"},
        )
    # The project's quota leaves no room for the edited copy its edit script needs.
    settings.PROJECT_DATABASE_QUOTA_MB = 0
    task = Task.objects.get(pk=task.pk)
    green, message = gate_results(task, ["lint_clean"])[0][1:]
    assert not green, message
    assert LintResult.objects.count() == 0


def test_many_tasks_get_the_gates_one_task_gets_in_a_fixed_number_of_queries(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    tasks = list(
        Task.objects.filter(project=project).select_related("project").order_by("domain", "pk")
    )
    one_by_one = {task.pk: gate_results(task, GATES) for task in tasks}
    assert gate_results_many(tasks, GATES) == one_by_one
    assert {green for results in one_by_one.values() for _, green, _ in results} == {
        True,
        False,
    }

    def queries(some) -> int:
        with CaptureQueriesContext(connection) as captured:
            gate_results_many(some, GATES)
        return len(captured.captured_queries)

    # A fixed number per gate and domain, whatever the number of tasks (one more when some
    # of them have check results to read: none is asked for nothing).
    sql = [task for task in tasks if task.domain == "sql"]
    assert len(sql) == 6
    assert queries(sql[:2]) <= queries(sql) <= queries(sql[:2]) + 1
