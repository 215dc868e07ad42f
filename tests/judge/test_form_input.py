"""The judge validation page reads its forms through ``judge.serializers`` (no API takes
these actions yet; one would validate with the same schema): malformed input is refused with
the field named, never a 500, and nothing is saved. Valid input is ``test_views``'s."""

import pytest
from django.contrib.messages import get_messages
from django.http import QueryDict
from django.urls import reverse

from hilbench_annotate.forminput import form_input
from hilbench_annotate.models import TriggerQuestion
from judge.forms import suggestions_typed
from judge.models import QuestionLabel, ValidationQuestion
from judge.serializers import CHOOSE_BLOCKER, CHOOSE_STYLE, SuggestionsAcceptIn
from judge.validation import question_add

pytestmark = pytest.mark.django_db

QUESTION = "Which loans are the troubled ones here?"


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


@pytest.mark.parametrize(
    "data,said",
    [
        ({"text": QUESTION}, CHOOSE_STYLE),
        ({"text": QUESTION, "style": "shouting"}, CHOOSE_STYLE),
        ({"text": "Which\x00 loans?", "style": "terse"}, "Text: Null characters are not allowed."),
    ],
)
def test_a_malformed_question_is_refused_naming_the_field(client, task, reviewer, data, said):
    client.force_login(reviewer)
    response = client.post(reverse("judge-question-add", args=[task.pk]), data)
    assert response.status_code == 302 and _said(response) == said
    assert not ValidationQuestion.objects.exists()


def test_a_refused_question_is_named_in_the_htmx_notice(client, task, reviewer):
    client.force_login(reviewer)
    response = client.post(
        reverse("judge-question-add", args=[task.pk]), {"text": QUESTION}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert f"“{QUESTION}” was not added: " in html and "Choose the question" in html


@pytest.mark.parametrize(
    "data,said",
    [
        ({}, CHOOSE_BLOCKER),
        ({"blocker_key": " "}, CHOOSE_BLOCKER),
        ({"blocker_key": "x\x00"}, "Blocker: Null characters are not allowed."),
    ],
)
def test_a_malformed_label_is_refused_naming_the_field(client, task, author, reviewer, data, said):
    question = question_add(task=task, actor=author, text=QUESTION, style="terse")
    client.force_login(reviewer)
    response = client.post(reverse("judge-label", args=[task.pk, question.pk]), data)
    assert response.status_code == 302 and _said(response) == said
    assert not QuestionLabel.objects.exists()


@pytest.mark.parametrize(
    "data,said",
    [
        ({"accept": ["abc"]}, "Suggestion 1, question: A valid integer is required."),
        (
            {"accept": ["1", "99999999999"]},
            "Suggestion 2, question: Ensure this value is less than or equal to 2147483647.",
        ),
        (
            {"accept": ["1"], "text-1": "a\x00"},
            "Suggestion 1, text: Null characters are not allowed.",
        ),
        ({"accept": ["999"]}, "No question 999 in this task."),
    ],
)
def test_malformed_accepted_suggestions_are_refused_naming_the_field(
    client, task, author, data, said
):
    triggers = TriggerQuestion.objects.count()
    client.force_login(author)
    response = client.post(reverse("judge-accept", args=[task.pk]), data)
    assert response.status_code == 302 and _said(response) == said
    assert TriggerQuestion.objects.count() == triggers


def test_the_suggestions_are_read_with_their_words_as_typed():
    post = QueryDict("accept=3&accept=4&text-3=%20Edited%20&text-5=not+ticked")
    assert form_input(SuggestionsAcceptIn, suggestions_typed(post)) == {
        "accepted": [{"question": 3, "text": "Edited"}, {"question": 4}]
    }
