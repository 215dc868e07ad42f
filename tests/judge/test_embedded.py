"""The embedded judge with the real model (loaded once per process)."""

from dataclasses import replace
from pathlib import Path

import pytest

from judge.base import IRRELEVANT, RegistryBlocker, respond
from judge.embedded import EmbeddedJudge, get_model, load_registry, registry_key

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "examples" / "hilbench"

REGISTRY = [
    RegistryBlocker(
        id="crisis_period",
        description="The term crisis period is used without start or end dates.",
        trigger_questions=(
            "What exact date range defines the crisis period?",
            "Which start and end dates should be used to represent the crisis period?",
        ),
        resolution="The crisis period is the calendar year 1996.",
    ),
    RegistryBlocker(
        id="senior_owner",
        description="Senior account owners are mentioned without a definition of senior.",
        trigger_questions=(
            "What rule determines whether a client qualifies as a senior account owner?",
            "What birth date cutoff identifies senior account holders?",
        ),
        resolution="Senior account owners were born before 1950-01-01.",
    ),
    RegistryBlocker(
        id="distressed_district",
        description="Economically distressed districts are not defined by any metric.",
        trigger_questions=(
            "What criteria determine whether a district is economically distressed?",
            "Which economic indicator defines distress at the district level?",
        ),
        resolution="Unemployment rate in 1995 above 5 percent (district.A12).",
    ),
]


@pytest.fixture(scope="session")
def judge():
    get_model()  # load once for the whole session
    return EmbeddedJudge()


def test_paraphrase_matches_its_blocker(judge):
    verdict = judge.judge("Over which dates does the crisis period run?", REGISTRY)
    assert verdict.blocker_id == "crisis_period", verdict
    assert respond(verdict, REGISTRY) == "The crisis period is the calendar year 1996."
    verdict = judge.judge("How old must a client be to count as a senior account owner?", REGISTRY)
    assert verdict.blocker_id == "senior_owner", verdict


def test_off_task_and_broad_questions_are_irrelevant(judge):
    for question in (
        "What is the capital of France?",
        "Which Python version does this container run?",
        "What is the best practice for writing SQL joins?",
        "How should I approach this task?",
    ):
        verdict = judge.judge(question, REGISTRY)
        assert verdict.blocker_id is None, (question, verdict)
        assert respond(verdict, REGISTRY) == IRRELEVANT


def test_multi_topic_message_is_irrelevant_even_when_both_topics_are_blockers(judge):
    for message in (
        "What date range defines the crisis period? And what birth date makes someone senior?",
        "What dates define the crisis period and also what makes a district distressed?",
    ):
        verdict = judge.judge(message, REGISTRY)
        assert verdict.blocker_id is None
        assert verdict.reason.startswith("rule: multi-topic")


def test_at_most_one_blocker_and_scores_for_each(judge):
    verdict = judge.judge("Which start and end dates represent the crisis period?", REGISTRY)
    assert isinstance(verdict.blocker_id, str)
    assert set(verdict.scores) == {b.id for b in REGISTRY}
    assert verdict.blocker_id == max(verdict.scores, key=verdict.scores.get)


def test_resolutions_never_influence_the_verdict(judge):
    changed = [replace(b, resolution="crisis period 1996 senior distressed " * 5) for b in REGISTRY]
    emptied = [replace(b, resolution="") for b in REGISTRY]
    assert registry_key(changed) == registry_key(REGISTRY) == registry_key(emptied)
    for question in (
        "Over which dates does the crisis period run?",
        "What is the capital of France?",
        "Is the unemployment rate the measure of a distressed district?",
    ):
        base = judge.judge(question, REGISTRY)
        fresh = EmbeddedJudge()  # no shared reference cache
        assert fresh.judge(question, changed) == base
        assert fresh.judge(question, emptied) == base


def test_deterministic(judge):
    question = "What calendar period counts as the crisis period?"
    first = judge.judge(question, REGISTRY)
    assert all(judge.judge(question, REGISTRY) == first for _ in range(3))
    assert EmbeddedJudge().judge(question, list(reversed(REGISTRY))).blocker_id == (
        first.blocker_id
    )
    batch = judge.judge_many([(question, REGISTRY), ("What is 2 + 2 in Python?", REGISTRY)])
    assert batch[0].blocker_id == first.blocker_id
    assert batch[1].blocker_id is None


def test_threshold_and_margin(judge):
    question = "Over which dates does the crisis period run?"
    assert EmbeddedJudge(default_threshold=0.99).judge(question, REGISTRY).blocker_id is None
    strict = EmbeddedJudge(thresholds={"crisis_period": 0.99})
    assert strict.judge(question, REGISTRY).blocker_id is None
    assert EmbeddedJudge(margin=0.9).judge(question, REGISTRY).blocker_id is None


def test_calibrate_reaches_the_precision_floor(judge):
    labelled = [
        ("Over which dates does the crisis period run?", REGISTRY, "crisis_period"),
        ("How old must a client be to count as a senior account owner?", REGISTRY, "senior_owner"),
        ("What unemployment level makes a district distressed?", REGISTRY, "distressed_district"),
        ("What is the capital of France?", REGISTRY, None),
        ("Which table stores the district names?", REGISTRY, None),
        ("Should the output be sorted by name?", REGISTRY, None),
    ]
    calibrated = EmbeddedJudge()
    result = calibrated.calibrate(labelled)
    assert result["precision"] >= 0.97
    assert 0 <= result["recall"] <= 1
    assert result["positives"] == 3 and result["negatives"] == 3
    assert calibrated.default_threshold == result["default_threshold"]
    assert calibrated.margin == result["margin"]


@pytest.mark.shared_data
def test_release_registry_examples(judge):
    path = EXAMPLES / "sql/sql_0/shared/ask-human-data/blocker_registry.json"
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    registry = load_registry(path)
    assert len(registry) == 5
    verdict = judge.judge("Which dates mark the beginning and end of the crisis period?", registry)
    assert verdict.blocker_id == "undefined_crisis_period"
    assert judge.judge("What is the capital of France?", registry).blocker_id is None
