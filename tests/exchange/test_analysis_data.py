"""A project's data for analysis (issue 45, item 7): tasks, blockers, judge labels and review
decisions as CSV and JSON Lines, from the Data for analysis page and the API, for the
project's readers only, of the tasks they may read, streamed a chunk at a time in a fixed
number of queries."""

import csv
import io
import json

import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from exchange import analysis
from judge.labels import label_add
from judge.validation import question_add
from review.models import ReviewDecision

from ..review.test_api import clean_task

pytestmark = pytest.mark.django_db


def _body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)  # streamed, never built whole
    return b"".join(response.streaming_content).decode()


def _jsonl(response) -> list[dict]:
    return [json.loads(line) for line in _body(response).splitlines()]


@pytest.fixture
def world(project, author, reviewer, lead, auditor):
    first = clean_task(project, author, title="Loans of the boom year")
    second = clean_task(project, author, title="Average balance in 1998")
    key = first.blockers.order_by("position").values_list("key", flat=True).first()
    settled = question_add(task=first, actor=auditor, text="Which year is the boom?", source="x")
    label_add(question=settled, labeller=reviewer, blocker_key=key)
    label_add(question=settled, labeller=lead, blocker_key=key)
    open_question = question_add(
        task=first, actor=auditor, text="Does the count include running loans?", source="x"
    )
    label_add(question=open_question, labeller=reviewer, blocker_key=None)
    ReviewDecision.objects.create(
        task=first,
        layer=1,
        layer_name="Self-check",
        reviewer=reviewer,
        revision=first.revisions.get(number=1),
        outcome="request_changes",
        summary="Name the boom year's source.",
        checklist=[],
        blocker_comments={key: "Fine."},
    )
    return {"first": first, "second": second, "key": key}


def _download(client, project, table, fmt, **params):
    url = reverse("project-data-download", args=[project.pk, table, fmt])
    return client.get(url, params)


def test_the_page_offers_every_table_in_both_formats(client, project, reviewer, world):
    client.force_login(reviewer)
    page = client.get(reverse("project-data", args=[project.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    for table in ("tasks", "blockers", "labels", "decisions"):
        for fmt in ("csv", "jsonl"):
            assert reverse("project-data-download", args=[project.pk, table, fmt]) in html


def test_tasks_csv_has_a_row_per_task_with_its_blocked_question(client, project, author, world):
    client.force_login(author)
    response = _download(client, project, "tasks", "csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert f'filename="{project.slug}-tasks.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    assert {r["title"] for r in rows} == {"Loans of the boom year", "Average balance in 1998"}
    first = next(r for r in rows if r["task_id"] == str(world["first"].pk))
    assert json.loads(first["blocked_spec"])["question"] == world["first"].blocked_spec["question"]
    assert first["revision"] == "1"


def test_blockers_jsonl_carry_resolutions_and_trigger_questions(client, project, author, world):
    client.force_login(author)
    rows = _jsonl(_download(client, project, "blockers", "jsonl"))
    task = world["first"]
    mine = [r for r in rows if r["task_id"] == task.pk]
    blockers = list(task.blockers.order_by("position"))
    assert [r["blocker_id"] for r in mine] == [b.key for b in blockers]
    assert mine[0]["resolution"] == blockers[0].resolution
    assert mine[0]["trigger_questions"] == list(
        blockers[0].trigger_questions.order_by("position").values_list("text", flat=True)
    )


def test_labels_are_those_of_settled_questions_only(client, project, author, world):
    client.force_login(author)
    rows = _jsonl(_download(client, project, "labels", "jsonl"))
    assert {r["question"] for r in rows} == {"Which year is the boom?"}
    assert sorted(r["labeller"] for r in rows) == ["lead", "reviewer"]
    assert {(r["gold"], r["gold_state"]) for r in rows} == {(world["key"], "agreed")}


def test_decisions_and_the_task_lists_filters(client, project, lead, world):
    client.force_login(lead)
    rows = _jsonl(_download(client, project, "decisions", "jsonl"))
    assert [(r["task_id"], r["outcome"], r["summary"]) for r in rows] == [
        (world["first"].pk, "request_changes", "Name the boom year's source.")
    ]
    narrowed = _jsonl(_download(client, project, "tasks", "jsonl", q="balance"))
    assert [r["task_id"] for r in narrowed] == [world["second"].pk]


def test_an_outsider_gets_404_and_unknown_tables_or_formats_too(client, project, outsider, lead):
    client.force_login(outsider)
    assert _download(client, project, "tasks", "csv").status_code == 404
    assert client.get(reverse("project-data", args=[project.pk])).status_code == 404
    client.force_login(lead)
    assert _download(client, project, "secrets", "csv").status_code == 404
    assert _download(client, project, "tasks", "xlsx").status_code == 404


def test_the_api_streams_the_same_table(project, reviewer, outsider, world):
    api = APIClient()
    api.force_authenticate(reviewer)
    url = reverse("api-project-data", args=[project.pk, "blockers"])
    response = api.get(url, {"fmt": "csv"})
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    assert len(rows) == world["first"].blockers.count() + world["second"].blockers.count()
    assert api.get(url, {"fmt": "xml"}).status_code == 400
    api.force_authenticate(outsider)
    assert api.get(url).status_code == 404


def test_queries_per_chunk_are_fixed(project, author, monkeypatch):
    for n in range(5):
        clean_task(project, author, title=f"Chunked {n}")
    monkeypatch.setattr(analysis, "ANALYSIS_CHUNK", 2)  # 3 chunks, then an empty read
    counts = {}
    for table in analysis.TABLES:
        with CaptureQueriesContext(connection) as queries:
            rows = list(
                analysis.analysis_rows(
                    user=author, table=table, filters={"project": str(project.pk)}
                )
            )
        counts[table] = len(queries)
        if table == "tasks":
            assert len(rows) == 5
    monkeypatch.setattr(analysis, "ANALYSIS_CHUNK", 1)  # 5 chunks: 2 more of each
    for table in analysis.TABLES:
        with CaptureQueriesContext(connection) as queries:
            list(
                analysis.analysis_rows(
                    user=author, table=table, filters={"project": str(project.pk)}
                )
            )
        per_chunk = (len(queries) - counts[table]) / 2
        # No task here has a label or a decision: those tables walk no chunk at all.
        assert per_chunk == {"tasks": 3, "blockers": 5, "labels": 0, "decisions": 0}[table]


def test_labels_and_decisions_walk_the_tasks_that_have_them_only(
    project, author, world, monkeypatch
):
    """A project of 100,000 tasks and a handful of labels read every task a chunk at a time
    (1,004 queries, 4 s, its first byte at the end); now the tasks with a question or a
    decision, whatever the project's size."""
    monkeypatch.setattr(analysis, "ANALYSIS_CHUNK", 2)

    def counted(table):
        with CaptureQueriesContext(connection) as queries:
            rows = list(
                analysis.analysis_rows(
                    user=author, table=table, filters={"project": str(project.pk)}
                )
            )
        return len(queries), [
            (r["task_id"], r.get("question_id"), r.get("decision_id")) for r in rows
        ]

    before = {table: counted(table) for table in ("labels", "decisions")}
    for n in range(6):
        clean_task(project, author, title=f"Unlabelled {n}")
    after = {table: counted(table) for table in ("labels", "decisions")}
    assert after == before
    assert before["labels"][1] and before["decisions"][1]
