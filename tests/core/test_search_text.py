"""The task list's search finds a task by the words of its blocked text, its blockers'
descriptions, resolutions and trigger questions, and review comments (issue 45, item 7),
for people who may read the task only, in the same number of queries for any number of
tasks. Everything is written through the services a user's save goes through."""

import os

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from hilbench_annotate.models import Task, TaskSearchText
from hilbench_annotate.services import (
    blocker_create,
    task_create,
    task_create_many,
    task_update,
)
from hilbench_annotate.vocabulary import Domain, TaskSource
from review.services.threads import comment_add

pytestmark = pytest.mark.django_db


def _task(project, author, n=0, **kwargs):
    return task_create(
        project=project,
        domain=Domain.SQL,
        source=TaskSource.BIRD,
        source_id=f"db/{n}",
        title=f"Loans per district {n}",
        original_spec={"question": "How many loans were granted in 1997?", "evidence": ""},
        environment={"db_id": "financial", "gold_sql": "SELECT 1"},
        author=author,
        **kwargs,
    )


def _ids(client, q):
    response = client.get(reverse("api-task-list"), {"q": q})
    assert response.status_code == 200
    return {row["id"] for row in response.json()["results"]}


@pytest.fixture
def author_api(author):
    client = APIClient()
    client.force_authenticate(author)
    return client


def test_words_of_the_blocked_question_find_the_task(author_api, project, author):
    task = _task(project, author)
    _task(project, author, n=1)
    assert _ids(author_api, "boom year") == set()
    task_update(
        task=task,
        actor=author,
        expected_version=task.version,
        blocked_spec={"question": "How many loans were granted in the Boom Year?", "evidence": ""},
    )
    assert _ids(author_api, "boom year") == {task.pk}
    assert _ids(author_api, "BOOM") == {task.pk}  # case does not matter
    assert _ids(author_api, "year boom") == {task.pk}  # every word, in any order


def test_blockers_resolutions_and_trigger_questions_find_the_task(author_api, project, author):
    task = _task(project, author)
    _task(project, author, n=1)
    blocker_create(
        task=task,
        actor=author,
        expected_version=task.version,
        key="boom_year",
        type="question",
        subtype="timeframe_ambiguity",
        description="The boom year is not named anywhere.",
        resolution="The boom year is 1997, by loan.date.",
        trigger_questions=["Which calendar year counts as the boom?"],
    )
    for words in ("not named anywhere", "loan.date", "calendar", "boom_year"):
        assert _ids(author_api, words) == {task.pk}, words


def test_a_review_comment_finds_the_task_and_readers_only(author_api, project, author, outsider):
    task = _task(project, author)
    comment_add(actor=author, task_id=task.pk, body="Check the Zeppelin threshold again")
    assert _ids(author_api, "zeppelin") == {task.pk}
    other = APIClient()
    other.force_authenticate(outsider)
    assert _ids(other, "zeppelin") == set()


def test_the_task_list_page_finds_by_a_resolution(client, project, author):
    task = _task(
        project,
        author,
        blockers=[
            {
                "key": "tall",
                "type": "question",
                "subtype": "unclear_value",
                "description": "Tall is not defined.",
                "resolution": "Tall players measure at least 190 centimetres.",
                "trigger_questions": ["How tall is tall?"],
            }
        ],
    )
    client.force_login(author)
    page = client.get(reverse("task-list"), {"q": "centimetres"}).content.decode()
    assert task.title in page


def test_bulk_imported_tasks_are_searchable_in_a_fixed_number_of_queries(project, author):
    def records(first, count):
        return [
            {
                "domain": Domain.SQL,
                "source": TaskSource.BIRD,
                "source_id": f"bulk/{first + i}",
                "title": f"Bulk {first + i}",
                "original_spec": {"question": f"Quokka question {first + i}?", "evidence": ""},
                "blocked_spec": {"question": f"Quokka question {first + i}?", "evidence": ""},
                "environment": {"db_id": "financial", "gold_sql": "SELECT 1"},
                "blockers": [],
            }
            for i in range(count)
        ]

    counts = []
    for first, count in ((0, 5), (100, 50)):
        with CaptureQueriesContext(connection) as queries:
            task_create_many(project=project, records=records(first, count), author=author)
        counts.append(len(queries))
    assert counts[0] == counts[1]
    assert TaskSearchText.objects.filter(text__contains="quokka").count() == 55
    assert Task.objects.search("quokka 142").count() == 1


def test_short_words_and_odd_characters(author_api, project, author):
    task = _task(
        project,
        author,
        blockers=[
            {
                "key": "share",
                "type": "question",
                "subtype": "unclear_value",
                "description": "The share is not given.",
                "resolution": 'A share of 50% or more, "quoted", in CZ.',
                "trigger_questions": ["What share counts?"],
            }
        ],
    )
    other = _task(project, author, n=1)
    assert _ids(author_api, "cz.") == {task.pk}  # two letters and a dot
    assert _ids(author_api, "50%") == {task.pk}  # % is a character, not a wildcard
    assert _ids(author_api, "5") == set()  # one character: a whole word only
    assert _ids(author_api, "a share") == {task.pk}
    assert _ids(author_api, "cz") == {task.pk}  # two: the start (or end) of a word
    assert _ids(author_api, "ar") == set()  # not inside one ("share")
    assert _ids(author_api, "%") == set()
    assert _ids(author_api, '"quoted"') == {task.pk}
    assert _ids(author_api, 'x" OR "y') == set()  # the index's syntax is not ours to send
    assert _ids(author_api, "_") == set()
    assert _ids(author_api, "loans") == {task.pk, other.pk}  # the titles, as before


def test_search_text_rebuild_writes_every_task_with_its_comments(author_api, project, author):
    from django.core.management import call_command

    task = _task(project, author)
    comment_add(actor=author, task_id=task.pk, body="Mind the walrus column")
    TaskSearchText.objects.all().delete()  # as after a load around the services
    assert _ids(author_api, "walrus") == set()
    call_command("search_text_rebuild", stdout=open(os.devnull, "w"))  # noqa: SIM115
    assert _ids(author_api, "walrus") == {task.pk}
