"""The bulk import API: ``POST /api/projects/<id>/tasks/import`` with a JSON array or JSON
lines of records, stored as it streams in and imported by the worker's service, with
progress on the job; the import page's rules (every record checked first, nothing
written on a refusal, authors and leads only)."""

import json

import pytest

from exchange.importers import import_bird
from exchange.models import ImportJob
from exchange.services.imports import import_execute
from hilbench_annotate.models import Revision, Task, TaskEvent
from hilbench_annotate.toolkit.sqlconsole import amount

from ..conftest import FIXTURES

pytestmark = pytest.mark.django_db

DATABASES = FIXTURES / "bird" / "dev_databases"


def _records(count: int, db_id: str = "library", start: int = 100) -> list[dict]:
    return [
        {
            "question_id": start + i,
            "db_id": db_id,
            "question": f"How many books were lent in week {i}?",
            "evidence": f"week {i} refers to loan_week = {i}",
            "SQL": "SELECT COUNT(*) FROM loan",
            "difficulty": "simple",
        }
        for i in range(count)
    ]


@pytest.fixture
def stored(project, author, tmp_path):
    """The project already has the fixtures' library database (an earlier import)."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_records(1, start=0)))
    import_bird(project=project, questions=path, databases=DATABASES, actor=author)
    return project


def _post(api, project, body: bytes, content_type: str, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return api.generic(
        "POST",
        f"/api/projects/{project.pk}/tasks/import" + (f"?{query}" if query else ""),
        body,
        content_type=content_type,
    )


def _run(api, response) -> dict:
    """The worker's part (no worker in these tests), then the job as the API shows it."""
    assert response.status_code == 202, response.content
    import_execute(job_id=response.json()["id"])
    return api.get(response.json()["url"]).json()


def test_a_json_array_of_questions_is_imported_with_its_revisions_events_and_progress(
    api, stored, author
):
    api.force_authenticate(author)
    count = 6000
    body = json.dumps(_records(count)).encode()  # more than a megabyte: read in chunks
    assert len(body) > 1 << 20
    job = _run(api, _post(api, stored, body, "application/json"))
    assert job["status"] == "succeeded", job["error"]
    assert len(job["report"]["created"]) == count
    assert (job["done"], job["total"]) == (count, count)
    one = Task.objects.get(project=stored, source_id="library/100")
    assert one.sql_environment.database is not None  # the project's stored database
    assert Revision.objects.filter(task__project=stored).count() == count + 1
    assert Revision.objects.filter(task__project=stored, reason="imported").count() == count + 1
    # One event for the job, none a task: revision 1 tells each task's making.
    finished = TaskEvent.objects.filter(project=stored, kind="import_finished", task=None).get()
    assert finished.data["created"] == count
    assert not TaskEvent.objects.filter(project=stored, task__isnull=False).exists()
    # The same records again: nothing new.
    again = _run(api, _post(api, stored, body, "application/json"))
    assert again["report"]["created"] == [] and len(again["report"]["unchanged"]) == count


def test_json_lines_with_a_bad_line_import_nothing_and_name_the_line(api, stored, author):
    api.force_authenticate(author)
    lines = [json.dumps(r) for r in _records(5)]
    lines[3] = '{"question_id": 3, "db_id": "library"'
    job = _run(api, _post(api, stored, "\n".join(lines).encode(), "application/x-ndjson"))
    assert job["status"] == "failed"
    column = len(lines[3]) + 1  # the record ends where its comma or brace should be
    assert f"not valid JSON at line 4, column {column}" in job["error"]
    assert "record 3" not in job["error"]
    assert not Task.objects.filter(project=stored, source_id="library/100").exists()


def test_a_database_the_project_lacks_is_refused_unless_skipped(api, stored, author):
    api.force_authenticate(author)
    body = json.dumps(_records(2) + _records(1, db_id="shipping", start=500)).encode()
    job = _run(api, _post(api, stored, body, "application/json"))
    assert job["status"] == "failed"
    assert "the project has no database shipping" in job["error"]
    assert "skip_missing_databases=true" in job["error"]
    assert not Task.objects.filter(project=stored, source_id="library/100").exists()

    job = _run(api, _post(api, stored, body, "application/json", skip_missing_databases="true"))
    assert job["status"] == "succeeded", job["error"]
    assert Task.objects.get(source_id="shipping/500").sql_environment.database is None


def test_only_authors_and_leads_of_the_project_import(api, stored, reviewer, outsider, settings):
    body = json.dumps(_records(1)).encode()
    api.force_authenticate(reviewer)
    assert _post(api, stored, body, "application/json").status_code == 403
    api.force_authenticate(outsider)
    assert _post(api, stored, body, "application/json").status_code == 404
    assert not ImportJob.objects.filter(created_by__in=[reviewer, outsider]).exists()


def test_an_oversized_or_empty_body_is_refused_and_leaves_nothing(api, stored, author, settings):
    api.force_authenticate(author)
    settings.MAX_UPLOAD_BYTES = 1000
    big = _post(api, stored, json.dumps(_records(50)).encode(), "application/json")
    assert big.status_code == 400 and "more than 1000 bytes" in big.json()["detail"]
    empty = _post(api, stored, b"", "application/json")
    assert empty.status_code == 400 and "no records" in empty.json()["detail"]
    assert not ImportJob.objects.filter(created_by=author).exists()
    assert not any(settings.UPLOAD_STORE.iterdir())


def test_the_records_count_against_the_projects_upload_quota(api, stored, author, settings):
    """As on the Import page: a request's records and the uploads of the project's other
    unfinished imports share its quota; past it the request is refused, naming the project's
    usage and the limit, and nothing of it is stored."""
    api.force_authenticate(author)
    body = json.dumps(_records(50)).encode()
    first = _post(api, stored, body, "application/json")
    assert first.status_code == 202  # queued: no worker runs it here
    quota = len(body) + len(body) // 2
    settings.PROJECT_UPLOAD_QUOTA_MB = quota / 1_000_000
    entries = sorted(settings.UPLOAD_STORE.iterdir())

    refused = _post(api, stored, body, "application/json")

    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        f"Not stored: the unfinished imports of {stored.name} hold {amount(len(body))} of "
        f"uploads; with these records (at least {amount(len(body))}) they would pass the "
        f"project's limit of {amount(quota)}. An import's upload is deleted when the import "
        "ends: wait for those to finish, or ask an operator to raise "
        "HILBENCH_PROJECT_UPLOAD_QUOTA_MB."
    )
    assert ImportJob.objects.filter(project=stored).count() == 1
    assert sorted(settings.UPLOAD_STORE.iterdir()) == entries
    # The first import ends, deletes its upload, and the room is the project's again.
    import_execute(job_id=first.json()["id"])
    assert _post(api, stored, body, "application/json").status_code == 202


def test_a_job_is_shown_to_the_projects_readers_only(api, stored, author, outsider):
    api.force_authenticate(author)
    response = _post(api, stored, json.dumps(_records(1)).encode(), "application/json")
    api.force_authenticate(outsider)
    assert api.get(response.json()["url"]).status_code == 404
