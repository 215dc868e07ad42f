"""The REST API: task list filters, task detail, and the versioned writes on the registry."""

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from rest_framework.test import APIClient

from hilbench_annotate.models import (
    Blocker,
    Revision,
    SqlEnvironment,
    Task,
    TaskEvent,
    TriggerQuestion,
)
from hilbench_annotate.vocabulary import Role, TaskStatus

from ..factories import (
    BlockerFactory,
    MembershipFactory,
    ProjectFactory,
    TaskFactory,
    TriggerQuestionFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def author_api(api, author):
    api.force_authenticate(author)
    return api


@pytest.fixture
def task(project, author):
    return TaskFactory(project=project, author=author, title="Which branch granted the most loans?")


def _blocker_payload(**overrides) -> dict:
    payload = {
        "expected_version": 1,
        "key": "boom_year",
        "type": "question",
        "subtype": "timeframe_ambiguity",
        "description": "The question names the boom year without saying which year it is.",
        "resolution": "The boom year is 1997.",
        "surfaces_in": "specification",
        "criteria": {"realistic": {"ok": True, "note": "Analysts say 'the boom year'."}},
        "trigger_questions": [
            "Which calendar year is the boom year?",
            "Does the boom year mean 1997?",
        ],
    }
    payload.update(overrides)
    return payload


def _with_blockers(task, *keys) -> list[Blocker]:
    """Blockers at positions 0..n-1, with the task's blocker_count kept as the services do."""
    blockers = [BlockerFactory(task=task, key=key, position=i) for i, key in enumerate(keys)]
    Task.objects.filter(pk=task.pk).update(blocker_count=len(blockers))
    return blockers


def _counts(task) -> tuple[int, int, int, int]:
    """(version, revisions, events, blockers) of the task as stored."""
    return (
        Task.objects.values_list("version", flat=True).get(pk=task.pk),
        Revision.objects.filter(task=task).count(),
        TaskEvent.objects.filter(task=task).count(),
        Blocker.objects.filter(task=task).count(),
    )


def _latest_revision(task) -> Revision:
    return Revision.objects.filter(task=task).order_by("-number").first()


def _ids(response) -> set[int]:
    assert response.status_code == 200, response.content[:300]
    return {row["id"] for row in response.json()["results"]}


# --- task list ---------------------------------------------------------------------------


def test_task_list_filters_by_domain(author_api, project, author):
    sql = TaskFactory(project=project, author=author)
    swe = TaskFactory(project=project, author=author, swe=True)
    url = reverse("api-task-list")

    assert _ids(author_api.get(url, {"domain": "swe"})) == {swe.pk}
    assert _ids(author_api.get(url, {"domain": "sql"})) == {sql.pk}
    assert _ids(author_api.get(url)) == {sql.pk, swe.pk}


def test_task_list_filters_by_status(author_api, project, author):
    TaskFactory(project=project, author=author)
    in_review = TaskFactory(project=project, author=author, status=TaskStatus.IN_REVIEW)

    response = author_api.get(reverse("api-task-list"), {"status": "in_review"})

    assert _ids(response) == {in_review.pk}
    assert response.json()["results"][0]["status"] == "in_review"


def test_task_list_q_searches_titles_case_insensitively(author_api, project, author):
    TaskFactory(project=project, author=author, title="Loans granted per district")
    balance = TaskFactory(project=project, author=author, title="Average account balance in 1998")

    assert _ids(author_api.get(reverse("api-task-list"), {"q": "BALANCE"})) == {balance.pk}


def test_task_list_filters_by_resource_database_and_repository(author_api, project, author):
    bank = TaskFactory(project=project, author=author)
    schools = TaskFactory(project=project, author=author)
    SqlEnvironment.objects.filter(task=schools).update(db_id="california_schools")
    swe = TaskFactory(project=project, author=author, swe=True)
    url = reverse("api-task-list")

    response = author_api.get(url, {"resource": "california_schools"})

    assert _ids(response) == {schools.pk}
    assert response.json()["results"][0]["resource"] == "california_schools"
    assert _ids(author_api.get(url, {"resource": "retail_bank"})) == {bank.pk}
    assert _ids(author_api.get(url, {"resource": "demo/invoicing"})) == {swe.pk}


def test_task_list_filters_by_project(api, project, author):
    other = ProjectFactory(name="HiL-Bench SWE", slug="hilbench-swe")
    MembershipFactory(project=other, user=author, role=Role.REVIEWER)
    mine = TaskFactory(project=project, author=author)
    theirs = TaskFactory(project=other)
    api.force_authenticate(author)
    url = reverse("api-task-list")

    assert _ids(api.get(url)) == {mine.pk, theirs.pk}
    assert _ids(api.get(url, {"project": project.pk})) == {mine.pk}
    assert _ids(api.get(url, {"project": other.pk})) == {theirs.pk}


def test_task_list_is_paginated_with_count_and_results(author_api, project, author):
    TaskFactory.create_batch(51, project=project, author=author)
    url = reverse("api-task-list")

    first = author_api.get(url).json()
    second = author_api.get(url, {"page": 2}).json()

    assert set(first) == {"count", "next", "previous", "results"}
    assert first["count"] == 51
    assert len(first["results"]) == 50
    assert first["next"] is not None
    assert first["previous"] is None
    assert len(second["results"]) == 1
    assert second["next"] is None
    all_ids = {r["id"] for r in first["results"]} | {r["id"] for r in second["results"]}
    assert len(all_ids) == 51


def test_task_list_row_shape(author_api, task):
    row = author_api.get(reverse("api-task-list")).json()["results"][0]

    assert row["id"] == task.pk
    assert row["author"] == "author"
    assert row["version"] == 1
    assert row["resource"] == "retail_bank"
    assert "blocked_spec" not in row


# --- task detail -------------------------------------------------------------------------


def test_task_detail_has_blockers_and_trigger_questions_in_position_order(author_api, task):
    # Made in reverse order, so id order differs from position order.
    second = BlockerFactory(task=task, key="loan_status", position=1)
    first = BlockerFactory(task=task, key="boom_year", position=0)
    TriggerQuestionFactory(blocker=first, position=2, text="Third?")
    TriggerQuestionFactory(blocker=first, position=0, text="First?")
    TriggerQuestionFactory(blocker=first, position=1, text="Second?")
    TriggerQuestionFactory(blocker=second, position=0, text="Which statuses count?")

    body = author_api.get(reverse("api-task-detail", args=[task.pk])).json()

    assert [b["key"] for b in body["blockers"]] == ["boom_year", "loan_status"]
    assert [q["text"] for q in body["blockers"][0]["trigger_questions"]] == [
        "First?",
        "Second?",
        "Third?",
    ]
    assert [q["position"] for q in body["blockers"][0]["trigger_questions"]] == [0, 1, 2]
    assert body["blockers"][1]["trigger_questions"][0]["text"] == "Which statuses count?"


def test_task_detail_has_the_sql_environment(author_api, task):
    body = author_api.get(reverse("api-task-detail", args=[task.pk])).json()

    assert body["sql_environment"]["db_id"] == "retail_bank"
    assert body["sql_environment"]["gold_sql"] == "SELECT 1"
    assert body["sql_environment"]["database_sha256"] is None
    assert body["swe_environment"] is None
    assert body["blocked_spec"] == task.blocked_spec
    assert body["original_spec"] == task.original_spec
    assert body["version"] == 1


def test_task_detail_has_the_swe_environment(author_api, project, author):
    swe = TaskFactory(project=project, author=author, swe=True)

    body = author_api.get(reverse("api-task-detail", args=[swe.pk])).json()

    assert body["swe_environment"]["repo_name"] == "demo/invoicing"
    assert body["swe_environment"]["base_commit"] == "0" * 40
    assert body["sql_environment"] is None
    assert body["resource"] == "demo/invoicing"


def test_blocker_list_returns_the_tasks_blockers(author_api, task):
    _with_blockers(task, "boom_year", "loan_status")
    BlockerFactory(key="elsewhere")  # a blocker of another task

    body = author_api.get(reverse("api-blocker-list", args=[task.pk])).json()

    assert [b["key"] for b in body] == ["boom_year", "loan_status"]


# --- create blocker ----------------------------------------------------------------------


def test_create_blocker_with_trigger_questions(author_api, task, author):
    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]), _blocker_payload(), format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["key"] == "boom_year"
    assert body["position"] == 0
    assert [q["text"] for q in body["trigger_questions"]] == [
        "Which calendar year is the boom year?",
        "Does the boom year mean 1997?",
    ]
    assert _counts(task) == (2, 1, 1, 1)
    task.refresh_from_db()
    assert task.blocker_count == 1
    blocker = Blocker.objects.get(task=task)
    assert blocker.subtype == "timeframe_ambiguity"
    assert blocker.criteria == {"realistic": {"ok": True, "note": "Analysts say 'the boom year'."}}
    revision = _latest_revision(task)
    assert revision.author == author
    assert revision.snapshot["version"] == 2
    assert [b["id"] for b in revision.snapshot["blockers"]] == ["boom_year"]
    assert revision.snapshot["blockers"][0]["trigger_questions"] == [
        "Which calendar year is the boom year?",
        "Does the boom year mean 1997?",
    ]
    event = TaskEvent.objects.get(task=task)
    assert event.kind == "registry_edited"
    assert event.actor == author


def test_blockers_created_one_after_another_get_increasing_positions(author_api, task):
    url = reverse("api-blocker-list", args=[task.pk])
    keys = ["boom_year", "loan_status", "branch_name"]

    for version, key in enumerate(keys, start=1):
        response = author_api.post(
            url, _blocker_payload(key=key, expected_version=version), format="json"
        )
        assert response.status_code == 201, response.content

    stored = list(Blocker.objects.filter(task=task).order_by("id").values_list("key", "position"))
    assert stored == [("boom_year", 0), ("loan_status", 1), ("branch_name", 2)], (
        "each new blocker must go after the last one; services/blockers.py:137 computes "
        "(Max(position) or -1) + 1, so a maximum of 0 is taken as 'no blockers'"
    )
    detail = author_api.get(reverse("api-task-detail", args=[task.pk])).json()
    assert [b["key"] for b in detail["blockers"]] == keys


def test_create_swe_blocker_without_subtype(author_api, project, author):
    swe = TaskFactory(project=project, author=author, swe=True)

    response = author_api.post(
        reverse("api-blocker-list", args=[swe.pk]),
        _blocker_payload(type="missing parameters", subtype="", surfaces_in="tests"),
        format="json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["type"] == "missing parameters"
    assert response.json()["subtype"] == ""


def test_create_blocker_with_a_type_of_the_other_domain_is_400_and_changes_nothing(
    author_api, task
):
    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        _blocker_payload(type="missing parameters", subtype=""),
        format="json",
    )

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "type 'missing parameters' is not a sql blocker type" in detail
    assert _counts(task) == (1, 0, 0, 0)


def test_a_bad_sql_type_with_a_subtype_never_says_sql_blockers_have_no_subtype(author_api, task):
    """Issue 45, item 6: SQL blockers have subtypes; a wrong type is the one thing said."""
    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        _blocker_payload(type="missing parameters", subtype="unclear_value"),
        format="json",
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "type 'missing parameters' is not a sql blocker type" in detail
    assert "have no subtype" not in detail


def test_create_blocker_with_a_sql_type_on_a_swe_task_is_400(author_api, project, author):
    swe = TaskFactory(project=project, author=author, swe=True)

    response = author_api.post(
        reverse("api-blocker-list", args=[swe.pk]),
        _blocker_payload(type="question", subtype=""),
        format="json",
    )

    assert response.status_code == 400
    assert "type 'question' is not a swe blocker type" in response.json()["detail"]
    assert _counts(swe) == (1, 0, 0, 0)


def test_create_blocker_with_subtype_of_another_type_is_400_and_changes_nothing(author_api, task):
    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        _blocker_payload(type="schema", subtype="timeframe_ambiguity"),
        format="json",
    )

    assert response.status_code == 400
    assert (
        "subtype 'timeframe_ambiguity' is not a subtype of 'schema'" in (response.json()["detail"])
    )
    assert _counts(task) == (1, 0, 0, 0)


def test_create_blocker_with_a_duplicate_key_is_400_and_changes_nothing(author_api, task):
    _with_blockers(task, "boom_year")

    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        _blocker_payload(key="boom_year"),
        format="json",
    )

    assert response.status_code == 400
    assert "'boom_year' is already used" in response.json()["detail"]
    assert _counts(task) == (1, 0, 0, 1)
    assert TriggerQuestion.objects.filter(blocker__task=task).count() == 0


def test_create_blocker_missing_required_fields_names_them(author_api, task):
    payload = _blocker_payload()
    del payload["resolution"]

    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        {**payload, "key": "not a slug"},
        format="json",
    )

    assert response.status_code == 400
    assert set(response.json()) == {"resolution", "key"}
    assert _counts(task) == (1, 0, 0, 0)


# --- optimistic locking ------------------------------------------------------------------


def test_stale_expected_version_is_409_with_current_version_and_creates_nothing(author_api, task):
    Task.objects.filter(pk=task.pk).update(version=3)

    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        _blocker_payload(expected_version=2),
        format="json",
    )

    assert response.status_code == 409
    assert response.json()["current_version"] == 3
    assert _counts(task) == (3, 0, 0, 0)
    assert not TriggerQuestion.objects.filter(blocker__task=task).exists()


def test_two_editors_on_the_same_version_second_gets_409(project, task, author, lead):
    first, second = APIClient(), APIClient()
    first.force_authenticate(author)
    second.force_authenticate(lead)
    detail_url = reverse("api-task-detail", args=[task.pk])
    seen_first = first.get(detail_url).json()["version"]
    seen_second = second.get(detail_url).json()["version"]
    assert seen_first == seen_second == 1

    created = first.post(
        reverse("api-blocker-list", args=[task.pk]),
        _blocker_payload(expected_version=seen_first),
        format="json",
    )
    conflict = second.patch(
        detail_url,
        {"expected_version": seen_second, "blocked_spec": {"question": "Overwritten?"}},
        format="json",
    )

    assert created.status_code == 201
    assert conflict.status_code == 409
    assert conflict.json()["current_version"] == 2
    task.refresh_from_db()
    assert task.version == 2
    assert task.blocked_spec["question"] == "How many loans were granted in the boom year?"
    assert Revision.objects.filter(task=task).count() == 1


# --- PATCH task --------------------------------------------------------------------------


def test_patch_task_with_an_unknown_spec_section_is_400_and_changes_nothing(author_api, task):
    response = author_api.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": 1, "blocked_spec": {"question": "Changed?", "hint": "nope"}},
        format="json",
    )

    assert response.status_code == 400
    assert "unknown sections “hint”" in response.json()["detail"]
    task.refresh_from_db()
    assert task.blocked_spec == {
        "question": "How many loans were granted in the boom year?",
        "evidence": "",
    }
    assert _counts(task) == (1, 0, 0, 0)


def test_patch_task_blocked_spec_is_stored_and_frozen_in_a_revision(author_api, task, author):
    new_spec = {"question": "How many loans were granted in the good year?", "evidence": ""}

    response = author_api.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": 1, "blocked_spec": new_spec},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["blocked_spec"] == new_spec
    assert response.json()["version"] == 2
    task.refresh_from_db()
    assert task.blocked_spec == new_spec
    assert _counts(task) == (2, 1, 1, 0)
    revision = _latest_revision(task)
    assert revision.snapshot["blocked_spec"] == new_spec
    assert revision.snapshot["version"] == 2
    assert revision.author == author
    assert TaskEvent.objects.get(task=task).data["fields"] == ["blocked_spec"]


def test_patch_task_title(author_api, task):
    response = author_api.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": 1, "title": "  Loans in the boom year  "},
        format="json",
    )

    assert response.status_code == 200
    task.refresh_from_db()
    assert task.title == "Loans in the boom year"
    assert _latest_revision(task).snapshot["title"] == "Loans in the boom year"


def test_patch_task_without_expected_version_is_400(author_api, task):
    response = author_api.patch(
        reverse("api-task-detail", args=[task.pk]), {"title": "No version"}, format="json"
    )

    assert response.status_code == 400
    assert "expected_version" in response.json()
    assert _counts(task) == (1, 0, 0, 0)


@pytest.mark.parametrize("version", [2**31, 10**30])
def test_patch_task_with_a_version_beyond_the_column_is_400_not_a_crash(author_api, task, version):
    """SQLite cannot compare a column with an integer past 64 bits (OverflowError, a 500)."""
    response = author_api.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"title": "Far", "expected_version": version},
        format="json",
    )

    assert response.status_code == 400
    assert "expected_version" in response.json()
    assert _counts(task) == (1, 0, 0, 0)


# --- update / delete blocker -------------------------------------------------------------


def test_patch_blocker_changes_only_the_given_fields(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")

    response = author_api.patch(
        reverse("api-blocker-detail", args=[blocker.pk]),
        {"expected_version": 1, "resolution": "The boom year is 1998."},
        format="json",
    )

    assert response.status_code == 200, response.content
    blocker.refresh_from_db()
    assert blocker.resolution == "The boom year is 1998."
    assert blocker.key == "boom_year"
    assert blocker.type == "question"
    assert blocker.subtype == "timeframe_ambiguity"
    assert blocker.description.startswith("The question names the boom year")
    assert _counts(task) == (2, 1, 1, 1)
    assert _latest_revision(task).snapshot["blockers"][0]["resolution"] == (
        "The boom year is 1998."
    )


def test_patch_blocker_type_without_a_matching_subtype_is_400(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")

    response = author_api.patch(
        reverse("api-blocker-detail", args=[blocker.pk]),
        {"expected_version": 1, "type": "schema"},
        format="json",
    )

    assert response.status_code == 400
    assert (
        "subtype 'timeframe_ambiguity' is not a subtype of 'schema'" in (response.json()["detail"])
    )
    blocker.refresh_from_db()
    assert blocker.type == "question"
    assert _counts(task) == (1, 0, 0, 1)


def test_patch_blocker_key_to_another_blockers_key_is_400(author_api, task):
    first, _second = _with_blockers(task, "boom_year", "loan_status")

    response = author_api.patch(
        reverse("api-blocker-detail", args=[first.pk]),
        {"expected_version": 1, "key": "loan_status"},
        format="json",
    )

    assert response.status_code == 400
    assert "'loan_status' is already used" in response.json()["detail"]
    first.refresh_from_db()
    assert first.key == "boom_year"
    assert _counts(task) == (1, 0, 0, 2)


def test_patch_blocker_with_stale_version_is_409(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    Task.objects.filter(pk=task.pk).update(version=2)

    response = author_api.patch(
        reverse("api-blocker-detail", args=[blocker.pk]),
        {"expected_version": 1, "resolution": "Too late."},
        format="json",
    )

    assert response.status_code == 409
    assert response.json()["current_version"] == 2
    blocker.refresh_from_db()
    assert blocker.resolution == "The boom year is 1997."


def test_delete_blocker_keeps_positions_contiguous(author_api, task):
    first, middle, last = _with_blockers(task, "boom_year", "loan_status", "branch_name")
    url = reverse("api-blocker-detail", args=[middle.pk])

    response = author_api.delete(f"{url}?expected_version=1")

    assert response.status_code == 204
    assert not Blocker.objects.filter(pk=middle.pk).exists()
    task.refresh_from_db()
    assert task.blocker_count == 2
    assert list(Blocker.objects.filter(task=task).values_list("key", "position")) == [
        ("boom_year", 0),
        ("branch_name", 1),
    ]
    assert _counts(task) == (2, 1, 1, 2)
    assert [b["id"] for b in _latest_revision(task).snapshot["blockers"]] == [
        "boom_year",
        "branch_name",
    ]


def test_delete_blocker_without_expected_version_is_400_and_keeps_it(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")

    response = author_api.delete(reverse("api-blocker-detail", args=[blocker.pk]))

    assert response.status_code == 400
    assert Blocker.objects.filter(pk=blocker.pk).exists()
    assert _counts(task) == (1, 0, 0, 1)


def test_delete_blocker_with_stale_version_is_409_and_keeps_it(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    Task.objects.filter(pk=task.pk).update(version=5)
    url = reverse("api-blocker-detail", args=[blocker.pk])

    response = author_api.delete(f"{url}?expected_version=4")

    assert response.status_code == 409
    assert response.json()["current_version"] == 5
    assert Blocker.objects.filter(pk=blocker.pk).exists()
    task.refresh_from_db()
    assert task.blocker_count == 1


# --- trigger questions -------------------------------------------------------------------


def test_create_trigger_question_appends_it(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    TriggerQuestionFactory(blocker=blocker, position=0, text="Which year?")
    TriggerQuestionFactory(blocker=blocker, position=1, text="Is it 1997?")

    response = author_api.post(
        reverse("api-trigger-question-create", args=[blocker.pk]),
        {"expected_version": 1, "text": "When was the boom?"},
        format="json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["text"] == "When was the boom?"
    assert response.json()["position"] == 2
    assert _counts(task) == (2, 1, 1, 1)
    assert _latest_revision(task).snapshot["blockers"][0]["trigger_questions"] == [
        "Which year?",
        "Is it 1997?",
        "When was the boom?",
    ]


def test_trigger_question_added_after_a_single_one_goes_after_it(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    TriggerQuestionFactory(blocker=blocker, position=0, text="Which year?")

    response = author_api.post(
        reverse("api-trigger-question-create", args=[blocker.pk]),
        {"expected_version": 1, "text": "When was the boom?"},
        format="json",
    )

    assert response.status_code == 201
    positions = list(
        TriggerQuestion.objects.filter(blocker=blocker).order_by("id").values_list("position")
    )
    assert positions == [(0,), (1,)], (
        "the new question must go after the existing one; services/blockers.py:204 computes "
        "(Max(position) or -1) + 1, so a maximum of 0 is taken as 'no questions'"
    )
    assert response.json()["position"] == 1


def test_create_trigger_question_with_empty_text_is_400(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")

    response = author_api.post(
        reverse("api-trigger-question-create", args=[blocker.pk]),
        {"expected_version": 1, "text": "   "},
        format="json",
    )

    assert response.status_code == 400
    assert not TriggerQuestion.objects.filter(blocker=blocker).exists()
    assert _counts(task) == (1, 0, 0, 1)


def test_patch_trigger_question_text(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    question = TriggerQuestionFactory(blocker=blocker, position=0, text="Which year?")

    response = author_api.patch(
        reverse("api-trigger-question-detail", args=[question.pk]),
        {"expected_version": 1, "text": "Which calendar year?"},
        format="json",
    )

    assert response.status_code == 200
    assert response.json() == {"id": question.pk, "position": 0, "text": "Which calendar year?"}
    question.refresh_from_db()
    assert question.text == "Which calendar year?"
    assert _counts(task) == (2, 1, 1, 1)


def test_patch_trigger_question_with_stale_version_is_409(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    question = TriggerQuestionFactory(blocker=blocker, position=0, text="Which year?")
    Task.objects.filter(pk=task.pk).update(version=2)

    response = author_api.patch(
        reverse("api-trigger-question-detail", args=[question.pk]),
        {"expected_version": 1, "text": "Lost update"},
        format="json",
    )

    assert response.status_code == 409
    assert response.json()["current_version"] == 2
    question.refresh_from_db()
    assert question.text == "Which year?"


def test_delete_trigger_question(author_api, task):
    (blocker,) = _with_blockers(task, "boom_year")
    keep = TriggerQuestionFactory(blocker=blocker, position=0, text="Which year?")
    drop = TriggerQuestionFactory(blocker=blocker, position=1, text="Is it 1997?")
    url = reverse("api-trigger-question-detail", args=[drop.pk])

    response = author_api.delete(f"{url}?expected_version=1")

    assert response.status_code == 204
    assert list(TriggerQuestion.objects.filter(blocker=blocker)) == [keep]
    assert _counts(task) == (2, 1, 1, 1)
    assert _latest_revision(task).snapshot["blockers"][0]["trigger_questions"] == ["Which year?"]


# --- schema ------------------------------------------------------------------------------


def test_openapi_schema_lists_the_endpoints(author_api):
    response = author_api.get(reverse("api-schema"))

    assert response.status_code == 200
    schema = response.content.decode()
    assert "/api/tasks/" in schema
    assert "/api/blockers/{blocker_id}/" in schema
    assert "/api/trigger-questions/{question_id}/" in schema


def test_swagger_docs_page_renders_for_a_signed_in_user(author_api):
    response = author_api.get(reverse("api-docs"))

    assert response.status_code == 200


# --- database constraints ----------------------------------------------------------------


def _blocker_row(task, **fields) -> Blocker:
    values = {
        "task": task,
        "key": "boom_year",
        "type": "question",
        "subtype": "timeframe_ambiguity",
        "description": "The boom year is not named.",
        "resolution": "1997.",
    }
    values.update(fields)
    return Blocker.objects.create(**values)


def test_db_accepts_a_valid_blocker_row(task):
    _blocker_row(task)
    _blocker_row(task, key="no_subtype", type="missing parameters", subtype="")

    assert Blocker.objects.filter(task=task).count() == 2


def test_db_refuses_a_blocker_with_an_unknown_type(task):
    with pytest.raises(IntegrityError), transaction.atomic():
        _blocker_row(task, type="vibes", subtype="")

    assert not Blocker.objects.filter(task=task).exists()


def test_db_refuses_a_blocker_whose_subtype_is_not_of_its_type(task):
    with pytest.raises(IntegrityError), transaction.atomic():
        _blocker_row(task, type="schema", subtype="timeframe_ambiguity")

    assert not Blocker.objects.filter(task=task).exists()


def test_db_refuses_a_duplicate_blocker_key_in_the_same_task(task):
    _blocker_row(task)

    with pytest.raises(IntegrityError), transaction.atomic():
        _blocker_row(task, subtype="unclear_value")

    assert Blocker.objects.filter(task=task).count() == 1


def test_db_allows_the_same_blocker_key_in_different_tasks(task, project):
    other = TaskFactory(project=project)

    _blocker_row(task)
    _blocker_row(other)

    assert Blocker.objects.filter(key="boom_year").count() == 2
