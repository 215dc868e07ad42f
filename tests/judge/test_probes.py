"""The judge refuses what a harvesting agent sends: vague questions blind to every task, and
messages that join questions of different blockers (issue 25, item 2). The cross-validated
figures are ``make judge-weights``'s (docs/quality.md); these check the shipped judge."""

import random

import pytest

from judge import probes
from judge.training import load_tasks
from tests.conftest import FIXTURES, shared_path

CLEAN_SETS = ("reported", "C", "D")  # never used to fit the model or to write the rule


@pytest.fixture(scope="module")
def judge(kept_judge):
    return kept_judge


def test_the_probe_sets_are_vague_and_distinct():
    seen = [q for qs in probes.VAGUE_SETS.values() for q in qs]
    assert len(seen) == len(set(seen)) >= 130
    assert probes.join(["What is X?", "Which Y?"], " and ") == "What is X and which Y?"
    assert probes.join(["What is X?", "Which Y?"], "1) 2)") == "1) What is X? 2) Which Y?"


@pytest.mark.slow
@pytest.mark.parametrize(
    "root",
    [
        pytest.param("fixtures", id="fixtures"),
        pytest.param("calibration", id="calibration", marks=pytest.mark.shared_data),
    ],
)
def test_vague_questions_sent_to_every_task_harvest_almost_nothing(judge, root):
    tasks = _tasks(root)
    questions = [q for name in CLEAN_SETS for q in probes.VAGUE_SETS[name]]
    harvest = probes.vague_harvest(judge, tasks, questions)
    assert harvest["share"] <= 0.02, harvest


@pytest.mark.slow
@pytest.mark.shared_data
def test_joined_questions_of_different_blockers_are_refused(judge):
    """On the four fixture tasks a share means little (two of their blockers are close kin);
    tests/judge/test_embedded.py joins two topics every way on a registry of its own."""
    tasks = _tasks("calibration", sample=40)  # a sample: the suite's time
    answered = probes.joined_answered(judge, tasks, seed=3)
    assert answered["messages"] >= 14 * len(tasks)
    assert answered["share"] <= 0.05, answered


def _tasks(root: str, sample: int | None = None):
    if root == "fixtures":
        return load_tasks(FIXTURES / "hilbench")
    tasks = load_tasks(shared_path("examples") / "hilbench-calibration")
    return random.Random(0).sample(tasks, sample) if sample else tasks
