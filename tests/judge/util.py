"""Settling held-out questions for tests that need the judge's gates green."""

from judge.labels import label_add
from judge.validation import question_add
from tests.factories import UserFactory


def settle_held_out(task, questions: list[tuple[str | None, str]]) -> None:
    """Add ``(gold blocker or None, text)`` held-out questions to ``task``, written by someone
    other than its author (the author's own do not count) and each labelled alike by two
    people who are not its author either."""
    writer = UserFactory()
    labellers = [UserFactory() for _ in (1, 2)]
    for gold, text in questions:
        question = question_add(task=task, actor=writer, text=text)
        for labeller in labellers:
            label_add(question=question, labeller=labeller, blocker_key=gold)
