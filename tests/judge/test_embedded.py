"""The embedded judge with the real model and the shipped weights (loaded once per process)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from judge.base import IRRELEVANT, RegistryBlocker, respond
from judge.embedded import WEIGHTS, EmbeddedJudge, load_registry, load_weights, registry_domain
from judge.encoder import BATCH_SIZE, TOKENS, batches, get_encoder
from judge.features import FEATURES, build_index, features
from tests.conftest import FIXTURES, shared_path

REGISTRY = [
    RegistryBlocker(
        id="crisis_period",
        description="The term crisis period is used without start or end dates.",
        trigger_questions=(
            "What exact date range defines the crisis period?",
            "Which start and end dates should be used to represent the crisis period?",
        ),
        resolution="The crisis period is the calendar year 1996.",
        type="question",
    ),
    RegistryBlocker(
        id="senior_owner",
        description="Senior account owners are mentioned without a definition of senior.",
        trigger_questions=(
            "What rule determines whether a client qualifies as a senior account owner?",
            "What birth date cutoff identifies senior account holders?",
        ),
        resolution="Senior account owners were born before 1950-01-01.",
        type="question",
    ),
    RegistryBlocker(
        id="distressed_district",
        description="Economically distressed districts are not defined by any metric.",
        trigger_questions=(
            "What criteria determine whether a district is economically distressed?",
            "Which economic indicator defines distress at the district level?",
        ),
        resolution="Unemployment rate in 1995 above 5 percent (district.A12).",
        type="business info",
    ),
]


@pytest.fixture(scope="session")
def judge():
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


def test_a_message_asking_about_two_blockers_is_irrelevant(judge):
    for message in (
        "What date range defines the crisis period? And what birth date makes someone senior?",
        "What dates define the crisis period and also what makes a district distressed?",
    ):
        verdict = judge.judge(message, REGISTRY)
        assert verdict.blocker_id is None, verdict
        assert verdict.reason.startswith("multi-topic"), verdict.reason
    # A follow-up on the same blocker is one question.
    follow_up = "What exact dates bound the crisis period? Is it one calendar year?"
    assert judge.judge(follow_up, REGISTRY).blocker_id == "crisis_period"


def test_at_most_one_blocker_and_a_logit_for_each(judge):
    verdict = judge.judge("Which start and end dates represent the crisis period?", REGISTRY)
    assert isinstance(verdict.blocker_id, str)
    assert set(verdict.scores) == {b.id for b in REGISTRY}
    assert verdict.blocker_id == max(verdict.scores, key=verdict.scores.get)


def test_deterministic_and_independent_of_registry_order(judge):
    question = "What calendar period counts as the crisis period?"
    first = judge.judge(question, REGISTRY)
    assert all(judge.judge(question, REGISTRY) == first for _ in range(3))
    assert EmbeddedJudge().judge(question, list(reversed(REGISTRY))).blocker_id == (
        first.blocker_id
    )
    batch = judge.judge_many([(question, REGISTRY), ("What is 2 + 2 in Python?", REGISTRY)])
    assert batch[0].blocker_id == first.blocker_id
    assert batch[1].blocker_id is None


def test_thresholds_per_domain_and_the_version_names_them(judge):
    question = "Over which dates does the crisis period run?"
    assert registry_domain(REGISTRY) == "sql"
    strict = EmbeddedJudge(thresholds={"sql": 50.0}, version="strict")
    assert strict.judge(question, REGISTRY).blocker_id is None
    assert strict.judge(question, REGISTRY, domain="swe").blocker_id == "crisis_period"
    assert strict.version == "strict"
    weights = load_weights()
    assert judge.version == f"embedded-4-{weights['version']}"


@pytest.mark.django_db
def test_other_thresholds_without_a_name_get_their_own_version_and_verdicts(judge):
    """Two judges with other thresholds and no version used to share the shipped version,
    so the verdict cache served one's verdicts to the other."""
    from judge.services import judge_cached

    question = "Over which dates does the crisis period run?"
    best = max(judge.scores(question, REGISTRY).values())
    lenient = EmbeddedJudge(thresholds={"sql": best - 1})
    strict = EmbeddedJudge(thresholds={"sql": best + 1})
    assert len({judge.version, lenient.version, strict.version}) == 3
    assert lenient.version.startswith(judge.version + "/t")
    assert EmbeddedJudge(thresholds={"sql": best - 1}).version == lenient.version
    # The fitted thresholds given again are the shipped judge; a name given is kept.
    assert EmbeddedJudge(thresholds=judge.thresholds).version == judge.version
    assert EmbeddedJudge(thresholds={"sql": best + 1}, version="p1-cal1").version == "p1-cal1"

    kwargs = {"registry": REGISTRY, "question": question, "domain": "sql"}
    assert judge_cached(judge=lenient, **kwargs).blocker_id == "crisis_period"
    assert judge_cached(judge=strict, **kwargs).blocker_id is None


def test_the_features_are_what_the_weights_were_fitted_on():
    weights = load_weights(WEIGHTS)
    assert weights["features"] == list(FEATURES)
    assert len(weights["coef"]) == len(FEATURES)
    index = build_index(REGISTRY, "sql", get_encoder().encode)
    question = "Over which dates does the crisis period run?"
    rows = features(question, get_encoder().encode([question])[0], index)
    assert rows.shape == (3, len(FEATURES))
    # Margins: the best value minus the best other one; only the best blocker's is positive.
    value, margin = FEATURES.index("emb_trigger_max"), FEATURES.index("margin_emb_trigger_max")
    top = int(np.argmax(rows[:, value]))
    runner_up = max(rows[b, value] for b in range(3) if b != top)
    assert rows[top, margin] == pytest.approx(rows[top, value] - runner_up)
    assert rows[top, margin] > 0 and all(rows[b, margin] < 0 for b in range(3) if b != top)


def test_the_judge_never_reads_a_resolution(judge):
    """As the release's judge: descriptions and trigger questions, never the resolution
    (issue 25: scoring against the resolution let vague questions harvest answers). Scores
    and verdicts are the same whatever the resolutions say."""
    questions = [
        "Is the unemployment rate above 5 percent what marks a district?",
        "Over which dates does the crisis period run?",
        "What values should I use?",
    ]
    emptied = [replace(b, resolution="") for b in REGISTRY]
    other = [replace(b, resolution=f"{b.id}: 42 and district.A99, unemployment") for b in REGISTRY]
    for question in questions:
        scores = judge.scores(question, REGISTRY)
        assert judge.scores(question, emptied) == scores == judge.scores(question, other)
        assert judge.judge(question, emptied) == judge.judge(question, REGISTRY)


@pytest.mark.parametrize(
    "question",
    [
        "What threshold should I use?",
        "What values should I use?",
        "Which columns should I use?",
        "What default value should be used?",
        "What formula should I use?",
        "What time period should I use?",
        "What are the requirements?",
    ],
)
def test_a_vague_question_is_irrelevant_and_the_reason_is_kept(judge, question):
    verdict = judge.judge(question, REGISTRY)
    assert verdict.blocker_id is None
    assert verdict.reason.startswith("vague"), verdict.reason
    assert respond(verdict, REGISTRY) == IRRELEVANT


@pytest.mark.parametrize(
    "message",
    [
        "What dates define the crisis period, and what birth date makes a client senior?",
        "What dates define the crisis period and what birth date makes a client senior?",
        "What dates define the crisis period; what birth date makes a client senior?",
        "What dates define the crisis period / what birth date makes a client senior?",
        "1) What dates define the crisis period? 2) What birth date makes a client senior?",
        "What dates define the crisis period?\nWhat birth date makes a client senior?",
        # One part names this task, the other asks about something else altogether.
        "What dates define the crisis period, and what error message should the login "
        "page show for a locked account?",
    ],
)
def test_a_message_joining_two_topics_is_irrelevant_however_it_is_joined(judge, message):
    verdict = judge.judge(message, REGISTRY)
    assert verdict.blocker_id is None, verdict
    assert verdict.reason.startswith("multi-topic"), verdict.reason


def test_the_task_text_tells_a_question_about_the_task_from_a_vague_one(judge):
    """A question naming a term only the task's text uses (not its blockers) is judged, not
    refused as vague; without the text it names nothing of the task."""
    question = "Which loan_status codes mean arrears?"
    context = "List the districts where loan_status marks clients in arrears since 1996."
    assert judge.judge(question, REGISTRY).reason.startswith("vague")
    assert not judge.judge(question, REGISTRY, context=context).reason.startswith("vague")


def test_encoder_matches_the_float_model_within_int8_error():
    rows = get_encoder().encode(["What exact date range defines the crisis period?", "hello"])
    assert rows.shape == (2, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert float(rows[0] @ rows[1]) < 0.3


def test_encoder_batches_by_tokens_and_gives_each_text_its_own_embedding():
    """A long resolution among short questions: batched by length so few padding tokens
    are computed, and every row is the text's embedding as if it were encoded alone."""
    texts = [
        "Which year?",
        "The report counts every loan whose status is D, the defaulted ones, and every "
        "account whose district lies in a region that the bank flagged as distressed in "
        "its 1997 review, whatever their balance; closed accounts are left out. " * 3,
        "Which status means a clean settlement?",
        "Which calendar is the review year counted in?",
    ]
    encoder = get_encoder()
    rows = encoder.encode(texts)
    alone = np.vstack([encoder.encode([text]) for text in texts])
    assert np.array_equal(rows, alone)

    lengths = [3, 200, 9, 9, 120, 30, 2, 60] + [8] * 40
    groups = batches(lengths)
    assert sorted(i for group in groups for i in group) == list(range(len(lengths)))
    for group in groups:
        padded = len(group) * max(lengths[i] for i in group)
        assert len(group) <= BATCH_SIZE and (padded <= TOKENS or len(group) == 1)
    assert [i for i, n in enumerate(lengths) if n == 200] in groups  # too long to share


@pytest.mark.parametrize(
    "root, question, expected",
    [
        pytest.param(
            "fixtures",
            "Between which two days does the summer term fall?",
            "summer_term_dates",
            id="fixtures",
        ),
        pytest.param(
            "release",
            "Which dates mark the beginning and end of the crisis period?",
            "undefined_crisis_period",
            id="release",
            marks=pytest.mark.shared_data,
        ),
    ],
)
def test_release_registry_examples(judge, root, question, expected):
    examples = FIXTURES / "hilbench" if root == "fixtures" else shared_path("examples", "hilbench")
    path = examples / "sql/sql_0/shared/ask-human-data/blocker_registry.json"
    registry = load_registry(path)
    assert len(registry) == len(json.loads(path.read_text())["blockers"])
    assert judge.judge(question, registry).blocker_id == expected
    assert judge.judge("What is the capital of France?", registry).blocker_id is None
