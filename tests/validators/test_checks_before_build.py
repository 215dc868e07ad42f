"""Issue 45, item 1: the structural checks on a SWE task straight after import, with no
environment built by hand. The check read the environment as the revision froze it, whose
shape lacked the task the build it needs is recorded against: "The check crashed:
AttributeError: 'types.SimpleNamespace' object has no attribute 'task'". The check now builds
what it needs and shows the build."""

import shutil
import uuid

import pytest
from django.core.management import call_command
from django.urls import reverse

from validators.models import EnvironmentBuild, ValidationRun
from validators.tasks import validation_run_job

from .test_runs import SWE_BLOCKERS, _start, swe_task  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_built(settings):
    """A sandbox root of its own: no environment any other test built is there to reuse."""
    settings.SANDBOX_ROOT = settings.VAR_DIR / f"sandbox-fresh-{uuid.uuid4().hex[:8]}"
    yield
    shutil.rmtree(settings.SANDBOX_ROOT, ignore_errors=True)


def test_validate_runs_the_tests_of_a_task_never_built(swe_task, capsys):  # noqa: F811
    assert not EnvironmentBuild.objects.exists()
    call_command("validate", str(swe_task.pk), "--here", "--checks", "swe_tests")
    out = capsys.readouterr().out
    assert "crashed" not in out, out
    run = ValidationRun.objects.get()
    results = {r.check_name: (r.outcome, r.message) for r in run.results.all()}
    assert results and all(outcome != "error" for outcome, _ in results.values()), results
    build = EnvironmentBuild.objects.get()  # the check built it, recorded against the task
    assert build.task_id == swe_task.pk and build.status == "succeeded", build.error


@pytest.mark.slow
def test_run_structural_checks_on_the_page_before_any_build(client, swe_task, author):  # noqa: F811
    client.force_login(author)
    response = _start(client, swe_task, ["swe_tests"])
    assert response.status_code == 200
    run = ValidationRun.objects.get()
    validation_run_job.apply(kwargs={"run_id": run.pk})  # the worker's job, in process
    run.refresh_from_db()
    messages = list(run.results.values_list("check_name", "outcome", "message"))
    assert messages and not any("crashed" in m for *_, m in messages), messages
    page = client.get(reverse("validation-run", args=[swe_task.pk, run.pk]), HTTP_HX_REQUEST="true")
    assert page.status_code in (200, 286) and "crashed" not in page.content.decode()
