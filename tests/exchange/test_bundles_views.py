"""The export page and API: leads only, progress polled with htmx until 286, a download link
that expires."""

import hashlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from exchange.models import ExportJob
from exchange.services.exports import bundle_export_execute, export_jobs_expire

from .bundle_helpers import seed_demo, sql_task, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings, tmp_path):
    return seed_demo(settings, tmp_path)


def test_a_lead_exports_from_the_page_follows_progress_and_downloads(client, demo):
    client.force_login(user("lead"))
    page = client.get(reverse("export-list"))
    assert page.status_code == 200 and b"Start export" in page.content
    task = sql_task(demo)
    response = client.post(
        reverse("export-list"),
        {"project": demo.pk, "tasks": str(task.pk), "draft": "on", "domain": "sql"},
    )
    job = ExportJob.objects.get()
    assert response.status_code == 302 and response.url == reverse("export-detail", args=[job.pk])
    assert job.selection == {"tasks": [task.pk], "states": [], "domain": "sql", "tags": []}
    assert job.draft

    polling = client.get(reverse("export-detail", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert polling.status_code == 200 and b"hx-trigger" in polling.content
    assert b"<html" not in polling.content

    bundle_export_execute(job_id=job.pk)
    done = client.get(reverse("export-detail", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert done.status_code == 286 and b"Download the bundle" in done.content
    # Each task of the bundle with its harness runs (the oracle scores 1, the no-op 0).
    assert b"<code>sql_0</code>" in done.content and b"oracle 1, no-op 0" in done.content
    download = client.get(reverse("export-download", args=[job.pk]))
    assert download.status_code == 200
    body = b"".join(download.streaming_content)
    job.refresh_from_db()
    assert len(body) == job.size_bytes and body[:2] == b"\x1f\x8b"

    # Past its keeping time the file is deleted and the link says so.
    ExportJob.objects.filter(pk=job.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert export_jobs_expire() == 1
    assert not job.path.exists()
    assert client.get(reverse("export-download", args=[job.pk])).status_code == 410


def test_only_leads_may_export_or_see_exports(client, demo):
    client.force_login(user("author"))
    assert b"Only project leads export" in client.get(reverse("export-list")).content
    assert client.post(reverse("export-list"), {"project": demo.pk}).status_code == 403
    job = ExportJob.objects.create(project=demo, created_by=user("lead"), total=1)
    assert client.get(reverse("export-detail", args=[job.pk])).status_code == 404
    assert client.get(reverse("export-download", args=[job.pk])).status_code == 404


def test_export_api_starts_a_job_for_leads_only(api, demo):
    api.force_authenticate(user("author"))
    assert api.post("/api/exports/", {"project": demo.pk}, format="json").status_code == 403
    api.force_authenticate(user("lead"))
    response = api.post(
        "/api/exports/", {"project": demo.pk, "domain": "sql", "draft": True}, format="json"
    )
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    assert response.json()["total"] == 6
    bundle_export_execute(job_id=job_id)
    with CaptureQueriesContext(connection) as queries:
        detail = api.get(f"/api/exports/{job_id}/").json()
    assert detail["status"] == "succeeded"
    # Read from the job's summary: the report, which lists every task written, is not read.
    assert not [q for q in queries.captured_queries if '"report"' in q["sql"]]
    assert detail["report"]["exported_count"] == 6 and detail["report"]["skipped_count"] == 0
    assert ExportJob.objects.get(pk=job_id).summary == detail["report"]
    assert detail["download"] == f"/api/exports/{job_id}/download"
    # The token that started it downloads it: the bytes the page's link gives.
    download = api.get(detail["download"])
    assert download.status_code == 200 and download["Content-Type"] == "application/gzip"
    bundle = b"".join(download.streaming_content)
    assert hashlib.sha256(bundle).hexdigest() == detail["sha256"]
    assert len(bundle) == detail["size_bytes"]
    api.force_authenticate(user("author"))
    assert api.get(detail["download"]).status_code == 404
    api.force_authenticate(user("lead"))
    assert len(detail["report"]["exported"]) == 6
    bad = api.post("/api/exports/", {"project": demo.pk, "tasks": [999999]}, format="json")
    assert bad.status_code == 400 and "no task" in bad.content.decode()


def test_a_lead_may_let_the_tasks_reach_the_internet(client, demo):
    import json
    import tomllib

    from .bundle_helpers import members

    client.force_login(user("lead"))
    task = sql_task(demo)
    base = {"project": demo.pk, "tasks": str(task.pk), "draft": "on"}
    for allow in (False, True):
        client.post(reverse("export-list"), {**base, **({"allow_internet": "on"} if allow else {})})
        job = ExportJob.objects.order_by("-pk").first()
        assert job.allow_internet is allow
        files = members(bundle_export_execute(job_id=job.pk).path)
        assert json.loads(files["manifest.json"])["allow_internet"] is allow
        for mode in ("baseline", "full_info", "ask_human"):
            toml = tomllib.loads(files[f"sql_0/{mode}/task.toml"].decode())
            assert toml["environment"]["allow_internet"] is allow


def test_the_page_of_a_large_export_draws_a_bounded_table(client, demo):
    """An export of tens of thousands of tasks: the page shows the first 200 written and
    left out, and says the bundle's manifest lists every one (it drew a row per task)."""
    lead = user("lead")
    task = sql_task(demo)
    entry = {"folder": "sql_0", "task": task.pk, "title": "Q", "validated": False,
             "reason": "draft", "oracle": "oracle 1, no-op 0"}  # fmt: skip
    skipped = {"task": task.pk, "title": "Q", "reason": "left out: why"}
    job = ExportJob.objects.create(
        project=demo, created_by=lead, total=500, status=ExportJob.Status.SUCCEEDED,
        report={"exported": [entry] * 250, "skipped": [skipped] * 201, "files": 9},
    )  # fmt: skip
    client.force_login(lead)
    page = client.get(reverse("export-detail", args=[job.pk])).content.decode()
    assert "<strong>250</strong> tasks exported, 201 left out" in page
    assert page.count("<code>sql_0</code>") == 200
    assert "The first 200 of 250 tasks" in page and "The first 200 of 201" in page
    assert page.count("left out: why") == 200
    small = ExportJob.objects.create(
        project=demo, created_by=lead, total=2, status=ExportJob.Status.SUCCEEDED,
        report={"exported": [entry] * 2, "skipped": [], "files": 9},
    )  # fmt: skip
    page = client.get(reverse("export-detail", args=[small.pk])).content.decode()
    assert page.count("<code>sql_0</code>") == 2 and "The first 200" not in page
