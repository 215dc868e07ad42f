import json

import pytest

from hilbench_annotate.question_rules import (
    TaskTerms,
    clean,
    follows_up,
    names_task,
    question_parts,
    reject_reason,
    term_stems,
)
from judge import probes
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
        # The joins an agent uses (issue 25): ", and", " and ", "; ", " / ", numbered, lines.
        ("Which code means settled loans, and which districts are distressed?", 2),
        ("Which code means settled loans and which districts are distressed?", 2),
        ("Which code means settled loans; which districts are distressed?", 2),
        ("Which code means settled loans / which districts are distressed?", 2),
        ("1) Which code means settled loans? 2) Which districts are distressed?", 2),
        ("Which code means settled loans?\nWhich districts are distressed?", 2),
        ("Which code means settled loans and if a loan is late, is it troubled?", 2),
        # A statement around one question is one question; so is a clause of one.
        ("The status column holds codes A to D. Which one means settled?", 1),
        ("When a loan is late, should it count as troubled?", 1),
        ("Should removed_at_date and removed_in_version be treated as exclusive?", 1),
    ],
)
def test_question_parts_splits_messages_that_ask_several_questions(message, parts):
    """Whether the parts target different blockers is the judge's call (test_embedded)."""
    assert reject_reason(message) is None
    assert len(question_parts(message)) == parts


def test_clean_strips_list_markers_and_quotes():
    assert clean("-  How is it defined?") == "How is it defined?"
    assert clean('1. "Which years?"') == "Which years?"


@pytest.mark.parametrize(
    "part, follows",
    [
        ("how is it calculated?", True),
        ("Which field should this be?", True),
        ("And which column?", True),
        ("If so, what is the exact limit?", True),
        ("which column should I use?", True),  # a short generic tail
        ("What error message should the login page show for a locked account?", False),
    ],
)
def test_a_part_that_follows_up_on_the_question_before_it(part, follows):
    assert follows_up(part) is follows


TERMS = TaskTerms.of(
    [
        "The question asks for Middle Eastern circuits; which countries count is unclear.",
        "Which circuits.country values identify Middle Eastern countries?",
        "Technical circuits are slow circuits.",
        'The "recent period" is not defined.',
    ]
)


@pytest.mark.parametrize(
    "question",
    [
        # The issue's own vague questions: frame words only.
        *probes.VAGUE_REPORTED,
        # A term the task does not use names something else, not this task.
        "What is the capital of France?",
    ],
)
def test_a_question_that_names_nothing_of_the_task_is_vague(question):
    assert not names_task(question, TERMS)


@pytest.mark.parametrize(
    "question",
    [
        "Which countries are considered Middle Eastern?",
        "What threshold makes a circuit technical?",
        "What dates does 'recent period' cover?",  # quoted phrase of the task
    ],
)
def test_a_question_that_names_a_term_of_the_task_is_not_vague(question):
    assert names_task(question, TERMS)


def test_terms_are_singular_and_identifiers_stay_whole():
    assert term_stems("Which countries and circuits?") == {"country", "circuit"}
    assert term_stems("Does human_to_bytes accept 10MB?") == {"human_to_bytes", "10mb"}
    assert term_stems("What threshold should the column use?") == frozenset()


@pytest.mark.shared_data
def test_few_release_trigger_questions_name_nothing_of_their_task():
    """The vague rule's cost: a trigger question held out from its registry still names a term
    of its other trigger questions, descriptions or task text — all but 1% of them."""
    from judge.training import _without, load_tasks

    tasks = load_tasks(shared_path("examples") / "hilbench-calibration")
    vague, total = [], 0
    for task in tasks:
        for b, blocker in enumerate(task.registry):
            for q, question in enumerate(blocker.trigger_questions):
                total += 1
                registry = _without(task.registry, b, q)
                texts = [x.description for x in registry]
                texts += [t for x in registry for t in x.trigger_questions]
                if not names_task(question, TaskTerms.of([*texts, task.context])):
                    vague.append(question)
    assert total > 1200 and len(vague) / total <= 0.01, vague
