"""Shared judge-validation data: the demo's blocked task and its held-out questions."""

import pytest

from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services as core
from hilbench_annotate.vocabulary import Role
from judge.labels import label_add
from judge.validation import question_add

from ..conftest import _member
from ..factories import TaskFactory

TROUBLED, SERVICING, YEAR = (b["key"] for b in DEMO_BLOCKERS)
HELD_OUT = [
    (TROUBLED, "Which loans count as troubled for this question?"),
    (TROUBLED, "What makes a loan troubled in this data?"),
    (SERVICING, "Which purpose code identifies loan servicing payments?"),
    (SERVICING, "How are loan servicing payments marked in transaction_log?"),
    (SERVICING, "What value flags a payment of the loan servicing fee?"),
    (YEAR, "What span of dates does the review year refer to?"),
    (YEAR, "What period does the review year cover?"),
    # Worded far from the trigger questions: the judge misses these at first.
    (TROUBLED, "Are defaulted contracts the ones we care about, status-wise?"),
    (TROUBLED, "Do delinquent contracts fall under the problem category?"),
    (YEAR, "Is the audit cycle aligned with a particular twelve-month window?"),
    (YEAR, "Which twelve-month window is the audit cycle?"),
    (None, "What is the capital of France?"),
    (None, "How many branches does the bank have?"),
]


@pytest.fixture
def task(project, author):
    task = TaskFactory(project=project, author=author)
    for blocker in DEMO_BLOCKERS:
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    return task


@pytest.fixture
def writer(project):
    """A domain expert of the project who is not the task's author: held-out questions count
    toward the recall only when someone other than the author wrote them (judge.floor)."""
    return _member(project, "writer", Role.AUTHOR)


@pytest.fixture
def labelled(task, writer, reviewer, auditor, lead):
    """Every question written by ``writer``, labelled by two people; one disagreement settled
    by a third."""
    for gold, text in HELD_OUT:
        question = question_add(task=task, actor=writer, text=text)
        label_add(question=question, labeller=reviewer, blocker_key=gold)
        disagree = text.startswith("How many branches")
        label_add(question=question, labeller=auditor, blocker_key=YEAR if disagree else gold)
        if disagree:
            label_add(question=question, labeller=lead, blocker_key=None)
    return task
