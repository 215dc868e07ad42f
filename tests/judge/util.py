"""Settling held-out questions for tests that need the judge's gates green."""

from collections import Counter

from hilbench_annotate.gates import gate_results
from judge.floor import STYLES
from judge.labels import gold_label, label_add
from judge.models import ValidationQuestion
from judge.validation import question_add
from tests.factories import UserFactory
from validators.services import validation_run_execute, validation_run_start


def _held_out(task) -> list[tuple[ValidationQuestion, str | None]]:
    return [
        (question, gold_label(question)[1])
        for question in task.validation_questions.filter(
            split=ValidationQuestion.Split.HELD_OUT
        ).prefetch_related("labels")
    ]


def balanced_writer(task, gold: str | None, writers: list):
    """The one of ``writers`` with the fewest held-out questions on ``gold`` so far (the
    first of them on a tie): no writer then holds more than half of a blocker's questions
    once two or more wrote some (``judge.floor``)."""
    have = Counter(q.created_by_id for q, key in _held_out(task) if key == gold)
    return min(writers, key=lambda writer: have[writer.pk])


def balanced_style(task, gold: str | None, styles=STYLES) -> str:
    """Of ``styles``, the one the task's settled positives have fewest of (negatives: the
    first)."""
    if gold is None:
        return styles[0]
    have = Counter(q.style for q, key in _held_out(task) if key is not None)
    return min(styles, key=lambda style: have[style])


def write_and_settle(task, writers: list, labellers: list, questions, styles=STYLES) -> list:
    """Each ``(gold, text)`` written by the writer and in the style (of ``styles``) that keep
    the task's questions balanced, and labelled alike by ``labellers`` (two, none of them a
    writer)."""
    made = []
    for gold, text, *given in questions:  # (gold, text) or (gold, text, style)
        question = question_add(
            task=task,
            actor=balanced_writer(task, gold, writers),
            text=text,
            style=given[0] if given else balanced_style(task, gold, styles),
        )
        for labeller in labellers:
            label_add(question=question, labeller=labeller, blocker_key=gold)
        made.append(question)
    return made


def settle_held_out(task, questions: list[tuple[str | None, str]]) -> None:
    """Add ``(gold blocker or None, text)`` held-out questions to ``task`` so that every one
    counts toward the floor (``judge.floor``): written by three people who never edited it,
    balanced per blocker, the styles balanced over the positives, each labelled alike by two
    more people."""
    writers = [UserFactory() for _ in range(3)]
    labellers = [UserFactory() for _ in (1, 2)]
    write_and_settle(task, writers, labellers, questions)


def gate(task, actor) -> tuple[str, str, bool]:
    """Run the judge_recall check on the current revision, as a worker does: (outcome,
    message, the gate green)."""
    task.refresh_from_db()
    run = validation_run_start(task=task, actor=actor, checks=["judge_recall"])
    validation_run_execute(run_id=run.pk)
    result = run.results.get()
    return result.outcome, result.message, gate_results(task, ["judge_recall"])[0][1]
