"""Issue 45, item 2: an imported file's line ends survive the first save. Spider's
description CSVs use CRLF; a browser's textarea sends every line end as CRLF and the form
stored LF, so the first save of every such task recorded "Edited the description CSVs"
though the author touched none, and the bundle's CSVs were not the source's bytes."""

import shutil

import pytest
from django.urls import reverse

from exchange.importers import import_bird
from hilbench_annotate.models import Revision, Task

from .test_workspace import HTMX, form_data, save, textarea

pytestmark = pytest.mark.django_db


@pytest.fixture
def crlf_task(project, author, demo_data, tmp_path):
    databases = tmp_path / "databases"
    shutil.copytree(demo_data["sql"]["databases"], databases)
    sources = {}
    for csv_file in databases.rglob("database_description/*.csv"):
        data = csv_file.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        csv_file.write_bytes(data)
        sources[csv_file.stem] = data
    assert sources
    import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=databases,
        actor=author,
        limit=1,
    )
    return Task.objects.get(project=project), sources


def test_a_save_that_touched_no_csv_keeps_its_bytes_and_records_no_edit(client, crlf_task, author):
    task, sources = crlf_task
    client.force_login(author)
    page = client.get(reverse("workspace", args=[task.pk]))
    tables = sorted(task.sql_environment.descriptions)
    # What a browser posts: the textarea's text with every line end as CRLF.
    posted = {
        f"env.descriptions.{t}": textarea(page, f"env.descriptions.{t}")
        .replace("\r\n", "\n")
        .replace("\n", "\r\n")
        for t in tables
    }
    before = Revision.objects.filter(task=task).count()
    response = save(client, task, form_data(task, **posted), **HTMX)
    assert response.status_code == 200
    task.refresh_from_db()
    stored = task.sql_environment.descriptions
    assert all(stored[t].encode() == sources[t] for t in tables if t in sources)
    changed = [r.summary for r in Revision.objects.filter(task=task)[before:]]
    assert not any("description" in (s or "") for s in changed), changed


def test_an_edited_csv_is_stored_as_edited_with_its_line_ends(client, crlf_task, author):
    task, _ = crlf_task
    client.force_login(author)
    table = sorted(task.sql_environment.descriptions)[0]
    edited = "original_column_name,column_name,column_description\r\nid,id,the key\r\n"
    save(client, task, form_data(task, **{f"env.descriptions.{table}": edited}), **HTMX)
    task.refresh_from_db()
    # Every line end of the imported file was CRLF: the edit keeps them, so the revision
    # holds the changed lines only.
    assert task.sql_environment.descriptions[table] == edited
