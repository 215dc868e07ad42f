"""Candidate held-out questions written by an LLM endpoint (a real OpenAI-compatible HTTP
server on loopback): fluent paraphrases are kept, near-copies of any trigger question refused."""

import json

import pytest

from exchange.demo.blocked_task import DEMO_BLOCKERS
from judge.models import ValidationQuestion
from judge.validation import NEGATIVES, candidates_generate

from .test_ask_human_api import Endpoint, endpoint  # noqa: F401 - the loopback endpoint fixture

pytestmark = pytest.mark.django_db

# One reply per blocker, in the registry's order: a paraphrase a person could have written
# beside near-copies of the kinds an LLM produces.
GOOD = [
    "What has to be true of a loan for it to be considered troubled?",
    "Which transactions are the bank's loan servicing payments?",
    "How can I recognise a payment made to service a loan?",
    "When does the review year begin and end?",
    "What span of time does the review year cover?",
]
NEAR_COPIES = {
    # case and punctuation only
    "which loan status values count as a troubled loan": "Which loan status values count as "
    "a troubled loan?",
    # a trigger wrapped in a phrase
    "Could you clarify: how is a troubled loan identified in the loan table?": "How is a "
    "troubled loan identified in the loan table?",
    "Which k_symbol code marks a loan servicing payment, exactly?": "Which k_symbol code "
    "marks a loan servicing payment?",
    # a copy, word for word
    "Which calendar year is the review year?": "Which calendar year is the review year?",
}
REPLIES = [
    [GOOD[0], *list(NEAR_COPIES)[:2]],
    [GOOD[1], list(NEAR_COPIES)[2], GOOD[2]],
    [list(NEAR_COPIES)[3], GOOD[3], GOOD[4]],
]


def _reply(questions: list[str]) -> tuple[int, str]:
    return 200, "RAW:" + json.dumps({"questions": questions})


def test_llm_paraphrases_are_kept_and_near_copies_of_triggers_refused(
    task,
    author,
    endpoint,  # noqa: F811
):
    endpoint.replies = [_reply(questions) for questions in REPLIES]
    result = candidates_generate(task=task, actor=author)

    assert result.error == ""
    written = dict(ValidationQuestion.objects.filter(task=task).values_list("text", "source"))
    assert {text for text, source in written.items() if source == "llm"} == set(GOOD)
    assert {text for text, source in written.items() if source == "template"} == set(NEGATIVES)
    assert result.added == len(GOOD) + len(NEGATIVES)
    # Each near-copy refused, naming the trigger it copies; none was written.
    assert len(result.rejected) == len(NEAR_COPIES)
    for copy, trigger in NEAR_COPIES.items():
        (reason,) = [r for r in result.rejected if r.startswith(f"“{copy}”")]
        assert f"Too close to the trigger question “{trigger}”" in reason
        assert copy not in written

    # One request per blocker: its gap and trigger questions, never its resolution.
    assert len(endpoint.requests) == len(DEMO_BLOCKERS)
    for request, blocker in zip(endpoint.requests, DEMO_BLOCKERS, strict=True):
        sent = json.loads(request["messages"][-1]["content"])
        assert sent == {
            "gap": blocker["description"],
            "example_questions": blocker["trigger_questions"],
        }
        assert blocker["resolution"] not in json.dumps(request)


def test_without_an_answer_from_the_endpoint_only_the_negatives_are_added(
    task,
    author,
    endpoint,  # noqa: F811
):
    endpoint.replies = [(503, None)] * 9
    result = candidates_generate(task=task, actor=author)
    assert "did not return 3 questions" in result.error and result.added == len(NEGATIVES)
    assert set(ValidationQuestion.objects.filter(task=task).values_list("source", flat=True)) == {
        "template"
    }
