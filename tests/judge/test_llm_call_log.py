"""The LLM judge's reason reaches the ask_human call log: which rejection rule refused a
question, a match refused for low confidence, or the match with its confidence — through
POST /api/ask_human, with the judge endpoint played by a real HTTP server on loopback."""

import json

import pytest

from judge.llm import outcome_of
from judge.models import AskHumanCall

from .test_ask_human_api import (  # noqa: F401 - the loopback endpoint and task fixtures
    ask,
    endpoint,
    harness_api,
    start,
    task,
)

pytestmark = pytest.mark.django_db


def raw(**content) -> tuple[int, str]:
    return 200, "RAW:" + json.dumps(content)


def test_each_outcome_is_logged_with_its_reason(harness_api, task, endpoint):  # noqa: F811
    run = start(harness_api, task)
    endpoint.replies = [
        raw(reasoning="two questions", rejection="multi-topic", blocker_key=None, confidence=0),
        raw(reasoning="a guess to confirm", rejection="confirmation", blocker_key="boom_year"),
        raw(reasoning="maybe the year", rejection=None, blocker_key="boom_year", confidence=70),
        raw(reasoning="asks for the year", rejection=None, blocker_key="boom_year", confidence=99),
    ]
    questions = [
        "Which year is the boom year, and which status is a clean settlement?",
        "The boom year is 1998, right?",
        "When was the economy doing well?",
        "Which calendar year is the boom year?",
    ]
    responses = [ask(harness_api, run, q).json()["response"] for q in questions]
    assert responses == ["irrelevant question"] * 3 + ["The boom year is 1997."]

    calls = list(AskHumanCall.objects.filter(run_id=run).order_by("id"))
    assert [c.question for c in calls] == questions
    assert [c.blocker_key for c in calls] == [None, None, None, "boom_year"]
    assert [c.reason for c in calls] == [
        "multi-topic: two questions",
        "confirmation (it named boom_year, refused): a guess to confirm",
        "low-confidence (boom_year at 70, below 95): maybe the year",
        "match (confidence 99): asks for the year",
    ]
    assert [outcome_of(c.reason) for c in calls] == [
        "multi-topic",
        "confirmation",
        "low-confidence",
        "match",
    ]
    assert not any(c.error for c in calls)
