"""A length limit per text field (issue 45, item 7): a 65,000-character paste into a field
meant for a sentence is refused with a message naming the field and its limit, and what was
saved before stays; every release task's texts fit (measured in TEXT_LIMITS)."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from hilbench_annotate.models import Blocker, Task, TriggerQuestion
from hilbench_annotate.text_limits import TEXT_LIMITS
from review.models import Comment

from ..authoring.test_lint import _release_draft
from ..conftest import shared_path
from ..review.test_api import clean_task

pytestmark = pytest.mark.django_db

PASTE = "x" * 65_000


@pytest.fixture
def author_api(author):
    client = APIClient()
    client.force_authenticate(author)
    return client


@pytest.fixture
def task(project, author):
    return clean_task(project, author)


def _error(response) -> str:
    assert response.status_code == 400, response.content[:300]
    return response.content.decode()


def test_a_pasted_resolution_is_refused_naming_the_field_and_the_limit(author_api, task):
    blocker = task.blockers.order_by("position").first()
    before = blocker.resolution
    response = author_api.patch(
        reverse("api-blocker-detail", args=[blocker.pk]),
        {"expected_version": task.version, "resolution": PASTE},
        format="json",
    )
    error = _error(response)
    assert "resolution is 65,000 characters long" in error.lower()
    assert f"{TEXT_LIMITS['resolution']:,}" in error
    blocker.refresh_from_db()
    assert blocker.resolution == before
    assert Task.objects.get(pk=task.pk).version == task.version  # nothing written


def test_a_pasted_trigger_question_is_refused(author_api, task):
    blocker = task.blockers.order_by("position").first()
    count = blocker.trigger_questions.count()
    response = author_api.post(
        reverse("api-trigger-question-create", args=[blocker.pk]),
        {"expected_version": task.version, "text": PASTE},
        format="json",
    )
    error = _error(response)
    assert "trigger question 1 is 65,000 characters long" in error.lower()
    assert f"{TEXT_LIMITS['trigger_question']:,}" in error
    assert TriggerQuestion.objects.filter(blocker=blocker).count() == count


def test_a_new_blocker_with_a_pasted_description_is_refused(author_api, task):
    response = author_api.post(
        reverse("api-blocker-list", args=[task.pk]),
        {
            "expected_version": task.version,
            "key": "pasted",
            "type": "question",
            "subtype": "unclear_value",
            "description": PASTE,
            "resolution": "Amounts are in CZK.",
            "trigger_questions": ["Which currency are the amounts in?"],
        },
        format="json",
    )
    assert "description is 65,000 characters long" in _error(response).lower()
    assert not Blocker.objects.filter(task=task, key="pasted").exists()


def test_a_pasted_blocked_question_is_refused_and_the_saved_one_stays(author_api, task):
    before = dict(task.blocked_spec)
    response = author_api.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": task.version, "blocked_spec": {**before, "question": PASTE}},
        format="json",
    )
    error = _error(response)
    assert "question is 65,000 characters long" in error.lower()
    assert f"{TEXT_LIMITS['sql_spec']:,}" in error
    assert Task.objects.get(pk=task.pk).blocked_spec == before


def test_a_pasted_comment_is_refused(author_api, task):
    response = author_api.post(
        reverse("api-task-comments", args=[task.pk]), {"body": PASTE}, format="json"
    )
    assert "comment is 65,000 characters long" in _error(response).lower()
    assert not Comment.objects.filter(task=task).exists()


def test_text_at_the_limit_is_kept(author_api, task):
    blocker = task.blockers.order_by("position").first()
    text = "y" * TEXT_LIMITS["resolution"]
    response = author_api.patch(
        reverse("api-blocker-detail", args=[blocker.pk]),
        {"expected_version": task.version, "resolution": text},
        format="json",
    )
    assert response.status_code == 200, response.content[:300]
    blocker.refresh_from_db()
    assert blocker.resolution == text


@pytest.mark.shared_data
def test_every_release_task_fits_the_limits():
    """The longest text of each field over the 103 release tasks in examples/hilbench*."""
    longest = dict.fromkeys(TEXT_LIMITS, 0)
    folders = [
        p.parents[2]
        for collection in ("hilbench", "hilbench-calibration")
        for p in shared_path("examples", collection).glob("*/*/shared/ask-human-data/*.json")
    ]
    assert folders
    for folder in folders:
        draft = _release_draft(folder)
        spec = "swe_spec" if draft["domain"] == "swe" else "sql_spec"
        texts = [(spec, t) for t in draft["blocked_spec"].values()]
        for blocker in draft["blockers"]:
            texts += [("blocker_description", blocker["description"])]
            texts += [("resolution", blocker["resolution"])]
            texts += [("trigger_question", q) for q in blocker["trigger_questions"]]
        for key, text in texts:
            longest[key] = max(longest[key], len(text))
    assert longest["resolution"] > 1000  # the measurement read real text
    for key, length in longest.items():
        assert length <= TEXT_LIMITS[key], (key, length)
