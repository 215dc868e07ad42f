"""Shared judge-validation data: the demo's blocked task and its held-out questions."""

import shutil

import pytest

from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services as core
from hilbench_annotate.vocabulary import Role
from judge.embedded import EmbeddedJudge
from judge.labels import label_add
from judge.validation import judge_recall, question_add

from ..conftest import FIXTURES, _member
from ..factories import TaskFactory
from .util import balanced_style, balanced_writer, write_and_settle

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
    toward the recall only when someone who never edited the task wrote them (judge.floor)."""
    return _member(project, "writer", Role.AUTHOR)


@pytest.fixture
def writers(project, writer):
    """Three such experts: no writer may hold more than half of a blocker's counted
    questions, and a task's counted questions come from two writers or more."""
    return [
        writer,
        _member(project, "writer2", Role.AUTHOR),
        _member(project, "writer3", Role.AUTHOR),
    ]


@pytest.fixture
def labelled(task, writers, reviewer, auditor, lead):
    """Every question written by one of ``writers`` (balanced per blocker, styles balanced),
    labelled by two people; one disagreement settled by a third."""
    for gold, text in HELD_OUT:
        question = question_add(
            task=task,
            actor=balanced_writer(task, gold, writers),
            text=text,
            style=balanced_style(task, gold),
        )
        label_add(question=question, labeller=reviewer, blocker_key=gold)
        disagree = text.startswith("How many branches")
        label_add(question=question, labeller=auditor, blocker_key=YEAR if disagree else gold)
        if disagree:
            label_add(question=question, labeller=lead, blocker_key=None)
    return task


# The recall floor's task (test_floor.py, test_floor_colleagues.py): per blocker three
# questions the judge matches and one it misses.
HITS = [
    (TROUBLED, "Which loans count as troubled for this question?"),
    (TROUBLED, "Which loan states count as troubled in this data?"),
    (TROUBLED, "Which states of a loan mean it is troubled?"),
    (SERVICING, "Which purpose code identifies loan servicing payments?"),
    (SERVICING, "How are loan servicing payments marked in transaction_log?"),
    (SERVICING, "What k_symbol value flags a loan servicing payment?"),
    (YEAR, "What span of dates does the review year refer to?"),
    (YEAR, "What period does the review year cover?"),
    (YEAR, "Which payments fall in the review year?"),
]
# Worded far from the registry: the judge misses each.
MISSES = [
    (TROUBLED, "Do delinquent contracts fall under the problem category?"),
    (SERVICING, "Which fee rows belong to the upkeep of credit lines?"),
    (YEAR, "Which twelve-month window is the audit cycle?"),
]
NEGATIVES = [
    (None, "What is the capital of France?"),
    (None, "How many branches does the bank have?"),
]


@pytest.fixture(scope="module")
def judge():
    return EmbeddedJudge()


@pytest.fixture(scope="session")
def kept_judge():
    """The shipped judge with each text it embeds kept for the session, as the app keeps a
    registry's embeddings in its shared store (``judge.embedstore``): the probes over the
    calibration tasks send the same questions to every task and rebuild each task's index
    from the same texts (a text's embedding does not depend on its batch). The texts are
    encoded once, whichever worker asks first, and kept in the var folder (``run_embeddings``)."""
    from django.conf import settings

    from judge.training import Featurizer

    from .run_embeddings import RunEmbeddings

    # Kept in this process, and each text encoded once for the whole run (both workers).
    shared = RunEmbeddings(settings.TEST_RUN_VAR_DIR / "judge-embeddings")
    return EmbeddedJudge(embed=Featurizer(embed=shared.encode).embed_cached)


@pytest.fixture
def measured(task, writers, reviewer, auditor, judge, settings):
    """The task at 9 of 12 (75%): below the floor on enough questions to count — written by
    three people who never edited it (balanced per blocker, every style), labelled by two
    others."""
    settings.JUDGE_BACKEND = "embedded"
    write_and_settle(task, writers, [reviewer, auditor], HITS + MISSES + NEGATIVES)
    report = judge_recall(task=task, judge=judge)
    assert {m["text"] for m in report.misses} == {text for _, text in MISSES}, report.misses
    assert report.recall == pytest.approx(9 / 12) and not report.shortfall
    assert not report.passes and not report.excluded
    return task


REGISTRY = "shared/ask-human-data/blocker_registry.json"


@pytest.fixture
def registries(tmp_path):
    """The registries of fixtures/hilbench as judge_batch reads them: ``<task>.json``."""
    folder = tmp_path / "registries"
    folder.mkdir()
    for path in sorted((FIXTURES / "hilbench").glob(f"*/*/{REGISTRY}")):
        shutil.copy(path, folder / f"{path.parents[2].name}.json")
    return folder
