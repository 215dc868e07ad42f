"""The workspace's SQL console through real requests: who may run an edit script, and what a
hostile query gets back (issue 19, items 3 and 4a)."""

import time
from pathlib import Path

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
SCRIPT = (
    "CREATE TABLE loan_code (code TEXT, meaning TEXT); INSERT INTO loan_code VALUES ('A', 'x');"
)


def _edited_files(settings) -> list[Path]:
    root = Path(settings.DATABASE_STORE) / "edited"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_a_non_editors_edit_script_is_refused_and_leaves_no_file(
    client, sql_task, role, request, settings
):
    client.force_login(request.getfixturevalue(role))
    url = reverse("workspace-sql-query", args=[sql_task.pk])
    for n in range(3):
        response = client.post(
            url,
            {"console_sql": "SELECT 1", "env.edit_script": f"{SCRIPT} -- variant {n}"},
            **HTMX,
        )
        assert response.status_code == 403
    assert _edited_files(settings) == []
    # The same script from the task's author runs, on one copy.
    author = sql_task.author
    client.force_login(author)
    body = client.post(
        url, {"console_sql": "SELECT meaning FROM loan_code", "env.edit_script": SCRIPT}, **HTMX
    ).content.decode()
    assert "<td>x</td>" in body
    assert len(_edited_files(settings)) == 1


def test_a_reviewer_still_queries_the_saved_database(client, sql_task, reviewer):
    client.force_login(reviewer)
    url = reverse("workspace-sql-query", args=[sql_task.pk])
    saved = sql_task.sql_environment.edit_script
    for data in (
        {"console_sql": "SELECT COUNT(*) AS n FROM loan"},
        {"console_sql": "SELECT COUNT(*) AS n FROM loan", "env.edit_script": saved},
    ):
        response = client.post(url, data, **HTMX)
        assert response.status_code == 200
        assert '<th scope="col">n</th>' in response.content.decode()


def test_a_wide_answer_is_cut_and_the_page_says_so(client, sql_task, author, settings):
    settings.SQL_CONSOLE_CELL_BYTES = 10_000
    settings.SQL_CONSOLE_RESULT_BYTES = 2_000_000
    client.force_login(author)
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
        "SELECT i, hex(zeroblob(50000)) FROM n"
    )
    response = client.post(
        reverse("workspace-sql-query", args=[sql_task.pk]), {"console_sql": sql}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert len(response.content) < 2_500_000  # not the 50 MB the query asks for
    assert "[cut: 100,000 bytes in all]" in body
    assert "rows are shown: the answer passed 2 MB" in body


def test_the_red_team_query_is_answered_with_a_refusal_in_seconds(client, sql_task, author):
    client.force_login(author)
    sql = "SELECT " + " + ".join(["length(randomblob(20000000))"] * 200)
    started = time.monotonic()
    response = client.post(
        reverse("workspace-sql-query", args=[sql_task.pk]), {"console_sql": sql}, **HTMX
    )
    assert time.monotonic() - started < 5
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert "larger than 10 MB" in response.content.decode()
