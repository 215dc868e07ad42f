"""Issue 43, item 2: what an agent builds from its task's own text is turned away, as the
release's judge turns it away (``task_text.task_text_reason``), and a targeted question
that names what is missing is not.

The corpus (``judge.spam``) is generated from the calibration tasks' text alone: no blocker,
no trigger question, never the probes a review kept back."""

import random

import pytest

from hilbench_annotate.task_text import TaskText, task_text_reason
from judge import spam

TEXT = TaskText.of(
    "List the drivers with a landslide victory ratio above the season median in recent "
    "seasons. A quick pit stop is one completed under the usual time for the circuit. "
    "Technical circuits are slow circuits. Business info: the efficiency index compares "
    "finishing position with the grid position."
)


@pytest.mark.parametrize(
    "question",
    [
        "What does 'landslide victory ratio' mean?",
        "What is meant by landslide victory ratio?",
        "How is the efficiency index defined?",
        "What is the landslide victory ratio exactly?",
        "How do I do this: list the drivers with a landslide victory ratio",
        "Could you explain what this means: technical circuits are slow circuits",
        "Technical circuits are slow circuits. What am I missing?",
        "Is it true that technical circuits are slow circuits?",
        "List the drivers with a landslide victory ratio above the season median?",
        "A quick pit stop is one completed under the usual time for the circuit. Which "
        "threshold in milliseconds should I use for pit stops?",
    ],
)
def test_what_only_echoes_the_task_is_turned_away(question):
    assert task_text_reason(question, TEXT) is not None, question


@pytest.mark.parametrize(
    "question",
    [
        "What numeric cutoff in milliseconds should define a 'quick pit stop'?",
        "What date range does 'recent seasons' refer to?",
        "Which column holds the grid position of a driver?",
        "Does 'landslide victory ratio' compare wins to races or points to the runner-up?",
        "Should drivers who retired mid-season be included?",
        "What threshold should the efficiency index clear?",
        "Which table records pit stop durations?",
        # a plain "What is X?" may ask X's value: the model decides, not the copy rules
        "What is the landslide victory ratio?",
        "How should I interpret the values of the grid position column?",
    ],
)
def test_a_question_naming_what_is_missing_is_judged(question):
    assert task_text_reason(question, TEXT) is None, question


@pytest.mark.shared_data
def test_the_release_example_questions_it_turns_away_are_few():
    """What the rule costs: of the calibration tasks' 1,320 example questions (the positives
    of the judge's measure), those shaped as the release's judge rejects them — a definition
    request that only quotes the task, the task asked back. Kept at most 3% (5.1% when the
    rules were first written, 32 questions — 2.4% — since), each a lint warning on its task."""
    from judge.training import load_tasks
    from tests.conftest import shared_path

    tasks = load_tasks(shared_path("examples", "hilbench-calibration"))
    questions = [
        (task, question)
        for task in tasks
        for blocker in task.registry
        for question in blocker.trigger_questions
    ]
    texts = {task.name: TaskText.of(task.context) for task in tasks}
    turned = [q for task, q in questions if task_text_reason(q, texts[task.name]) is not None]
    assert len(questions) == 1320
    assert len(turned) / len(questions) <= 0.03, len(turned)


@pytest.mark.slow
@pytest.mark.shared_data
def test_task_text_spam_harvests_almost_nothing_from_the_calibration_tasks(kept_judge):
    """Each form of ``judge.spam``, 24 questions a task, sent to every calibration task with
    the shipped judge: tasks on which any question got a resolution, at most 2% per form."""
    from judge.training import load_tasks
    from tests.conftest import shared_path

    tasks = load_tasks(shared_path("examples", "hilbench-calibration"))
    figures = spam.harvest(kept_judge, tasks)
    for form, found in figures.items():
        assert found["questions"] >= 20 * len(tasks) * 0.9, (form, found)
        assert found["share"] <= 0.02, (form, found)


def test_the_generator_makes_each_form_from_the_text_alone():
    rng = random.Random(0)
    text = (
        "The monthly report counts active members. An active member logged in within the "
        "review window. Members on hold are excluded from every total. The window closes on "
        "the last business day of the month."
    )
    for form in spam.FORMS:
        questions = spam.generate(text, form, rng, n=5)
        assert questions and all(isinstance(q, str) and len(q) > 10 for q in questions), form
    padded = spam.padded_real("Which date column marks a login?", text, rng)
    assert "Which date column marks a login?" in padded and len(padded) > 60
