import json

import pytest

from hilbench_annotate.question_rules import clean, question_parts, reject_reason
from tests.conftest import FIXTURES, shared_path

REGISTRIES = "*/*/shared/ask-human-data/blocker_registry.json"


def _release_questions(roots):
    paths = sorted(path for root in roots for path in root.glob(REGISTRIES))
    return [
        question
        for path in paths
        for blocker in json.loads(path.read_text())["blockers"]
        for question in blocker["example_questions"]
    ]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("fixtures", id="fixtures"),
        pytest.param("release", id="release", marks=pytest.mark.shared_data),
    ],
)
def test_release_example_questions_are_never_rejected(source):
    if source == "fixtures":
        roots, least = [FIXTURES / "hilbench"], 40
    else:
        examples = shared_path("examples")
        roots, least = [examples / "hilbench", examples / "hilbench-calibration"], 60
    questions = _release_questions(roots)
    assert len(questions) >= least
    rejected = {q: reject_reason(q) for q in questions if reject_reason(q)}
    assert rejected == {}


@pytest.mark.parametrize(
    "message, reason",
    [
        ("", "too short"),
        ("   ", "too short"),
        ("why?", "too short"),
        ("The crisis period is 1996.", "statement"),
        ("-  I will use the trans table for this", "statement"),
        ("I assume the crisis period is 1996, right?", "confirmation"),
        ("The cutoff is 1950, correct?", "confirmation"),
        ("Can you confirm that senior means born before 1950?", "confirmation"),
        ("Just to confirm, the status column holds the outcome?", "confirmation"),
        ("What is the best practice for writing this query?", "broad"),
        ("Any tips for this task?", "broad"),
        ("How should I approach this task?", "broad"),
        ("What should I do?", "broad"),
        ("Is there anything else I should know?", "broad"),
        ("Can you help me with the query?", "broad"),
    ],
)
def test_rejected(message, reason):
    got = reject_reason(message)
    assert got is not None, message
    assert reason.split()[0] in got


@pytest.mark.parametrize(
    "question",
    [
        "What exact date range defines the crisis period?",
        "-  How should the platform type be determined in code?",
        "What rule should be used to determine whether a client qualifies as a senior owner",
        "Is the crisis period the calendar year 1996 or a fiscal year?",
        "Should the provisioning behavior be a string parameter, and if so, what value?",
        "Is `name` a required field or just a recommended best practice?",
        "The spec says name is required but the list says optional — which one is correct?",
        "What should I do with clients whose birth date is missing?",
        "Which one is correct?",
    ],
)
def test_accepted(question):
    assert reject_reason(question) is None


@pytest.mark.parametrize(
    "message, parts",
    [
        ("What date range is the crisis period? And which districts are distressed?", 2),
        ("What is the crisis period and also which code means settled loans?", 2),
        ("Which years are the modern era; also which column holds the tier?", 2),
        ("What is the crisis period as well as which districts are distressed?", 2),
        ("Should I use Match or League_Results for the score? And which column?", 2),
        ("What exact date range defines the crisis period?", 1),
        ("Which one? Why?", 1),  # parts of fewer than three words do not count
    ],
)
def test_question_parts_splits_messages_that_ask_several_questions(message, parts):
    """Whether the parts target different blockers is the judge's call (test_embedded)."""
    assert reject_reason(message) is None
    assert len(question_parts(message)) == parts


def test_clean_strips_list_markers_and_quotes():
    assert clean("-  How is it defined?") == "How is it defined?"
    assert clean('1. "Which years?"') == "Which years?"
