"""``GET /api/exports/<id>/?wait=`` and ``/api/imports/<id>/?wait=``: a client follows a job
with one request instead of polling. The answer comes as soon as the job finishes (a worker's
commit, here another thread's), or when the wait is over with the job as it is; a bad value is
a 400 naming it, and waiting never lets anyone see a job they could not."""

import threading
import time

import pytest
from django.db import connection

from exchange.models import ExportJob, ImportJob
from hilbench_annotate.jobs import JOB_WAIT_MAX_S, job_wait
from hilbench_annotate.vocabulary import Role

from ..factories import MembershipFactory, ProjectFactory, UserFactory

# Another thread commits the job's end: the test's rows must be committed too.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world():
    project = ProjectFactory()
    lead = UserFactory(username="wait-lead")
    MembershipFactory(project=project, user=lead, role=Role.LEAD)
    outsider = UserFactory(username="wait-outsider")
    MembershipFactory(user=outsider, role=Role.LEAD)  # a lead of another project
    export = ExportJob.objects.create(project=project, created_by=lead, total=3)
    imported = ImportJob.objects.create(
        project=project, created_by=lead, kind=ImportJob.Kind.BIRD, upload_dir="x"
    )
    return project, lead, outsider, export, imported


def _finish_later(model, pk: int, after: float) -> threading.Thread:
    def finish():
        time.sleep(after)
        model.objects.filter(pk=pk).update(status=model.Status.SUCCEEDED, done=3)
        connection.close()  # this thread's own connection

    thread = threading.Thread(target=finish)
    thread.start()
    return thread


@pytest.mark.parametrize("kind", ["exports", "imports"])
def test_the_answer_comes_when_the_job_finishes_not_when_the_wait_ends(api, world, kind):
    _, lead, _, export, imported = world
    job = export if kind == "exports" else imported
    api.force_authenticate(lead)
    thread = _finish_later(type(job), job.pk, after=0.5)
    started = time.monotonic()
    response = api.get(f"/api/{kind}/{job.pk}/", {"wait": 20})
    took = time.monotonic() - started
    thread.join()
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "succeeded" and response.json()["done"] == 3
    assert 0.4 < took < 10, took  # answered at the job's end, long before the 20 s


def test_a_job_still_running_is_answered_as_it_is_once_the_wait_is_over(api, world):
    _, lead, _, export, _ = world
    api.force_authenticate(lead)
    started = time.monotonic()
    response = api.get(f"/api/exports/{export.pk}/", {"wait": 0.3})
    assert time.monotonic() - started >= 0.3
    assert response.status_code == 200 and response.json()["status"] == "queued"
    # Without ``wait`` (or with 0), the answer is at once, as before.
    started = time.monotonic()
    assert api.get(f"/api/exports/{export.pk}/").json()["status"] == "queued"
    assert api.get(f"/api/exports/{export.pk}/", {"wait": 0}).json()["status"] == "queued"
    assert time.monotonic() - started < 0.3


@pytest.mark.parametrize("value", ["-1", str(JOB_WAIT_MAX_S + 1), "soon", "nan"])
def test_a_bad_wait_is_a_400_naming_it(api, world, value):
    _, lead, _, export, _ = world
    api.force_authenticate(lead)
    response = api.get(f"/api/exports/{export.pk}/", {"wait": value})
    assert response.status_code == 400, response.content
    assert "wait" in response.json()


def test_waiting_shows_no_job_its_caller_may_not_see(api, world):
    _, _, outsider, export, imported = world
    api.force_authenticate(outsider)
    started = time.monotonic()
    assert api.get(f"/api/exports/{export.pk}/", {"wait": 5}).status_code == 404
    assert api.get(f"/api/imports/{imported.pk}/", {"wait": 5}).status_code == 404
    assert time.monotonic() - started < 2  # refused before any wait


def test_job_wait_is_bounded_and_sees_a_deleted_job_as_done(world):
    _, _, _, export, _ = world
    started = time.monotonic()
    assert not job_wait(export, 0.2)
    assert 0.2 <= time.monotonic() - started < 2
    ExportJob.objects.filter(pk=export.pk).delete()
    assert job_wait(export, 5)  # gone: nothing more to wait for
