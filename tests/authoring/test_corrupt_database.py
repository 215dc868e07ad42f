"""A task database that is damaged on disk (imported before imports checked it, or broken in
the store since): the workspace says so instead of answering 500 (issue 19, item 5b)."""

import os

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

UNREADABLE = "The database cannot be read (file is not a database)"


@pytest.fixture
def corrupt_task(sql_task):
    task = sql_task
    path = task.sql_environment.database.path
    os.chmod(path, 0o644)
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    return task


def test_the_workspace_and_its_table_view_say_the_database_cannot_be_read(
    client, author, corrupt_task
):
    client.force_login(author)

    page = client.get(reverse("workspace", args=[corrupt_task.pk]))
    table = client.get(
        reverse("workspace-sql-table", args=[corrupt_task.pk, "loan"]), HTTP_HX_REQUEST="true"
    )

    assert page.status_code == 200 and UNREADABLE in page.content.decode()
    assert table.status_code == 200 and UNREADABLE in table.content.decode()
    assert str(corrupt_task.sql_environment.database.path) not in page.content.decode()


def test_lint_reports_the_unreadable_database_as_an_error(client, author, corrupt_task):
    client.force_login(author)

    lint = client.post(
        reverse("workspace-lint", args=[corrupt_task.pk]), {}, HTTP_HX_REQUEST="true"
    )

    assert lint.status_code == 200
    assert UNREADABLE in lint.content.decode()
