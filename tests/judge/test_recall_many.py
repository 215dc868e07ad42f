"""Many tasks measured at once (issue 46): ``judge_recall_many`` gives each task the report
``judge_recall`` gives it alone, under every rule of the floor, in a fixed number of queries.

The judge report measures every task with a settled held-out question through it; each
task used to cost several queries of its own (its revision, questions, editors, registry
history and blockers, and one per verdict).
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services as core
from hilbench_annotate.vocabulary import Role
from judge import recall
from judge.embedded import registry_key
from judge.floor import STYLES
from judge.models import QuestionLabel
from judge.report import project_judge_report
from judge.validation import (
    expansion_suggestions,
    judge_recall,
    judge_recall_many,
    question_add,
    suggestions_accept,
)

from ..conftest import _member
from ..factories import TaskFactory
from .conftest import HITS, MISSES, NEGATIVES, TROUBLED
from .test_floor import EASY
from .util import write_and_settle

pytestmark = pytest.mark.django_db

TASK_WORDS = STYLES[1].value
BY_THE_AUTHOR = [
    (TROUBLED, "Which status marks a troubled loan in this data set?"),
    (None, "Which branch opened first?"),
]


def _demo_task(project, author):
    task = TaskFactory(project=project, author=author)
    for blocker in DEMO_BLOCKERS:
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    return task


@pytest.fixture
def floor_tasks(measured, project, author, writers, reviewer, auditor, judge):
    """Four tasks of one project, between them under every rule of the floor:

    * ``measured`` with its three misses retired (accepted as trigger questions), one of
      them replaced by a fresh question written after;
    * a second task whose misses the author copied into trigger questions (matched only
      through later registry text), with a colleague's sixteen easy questions in one style
      (the writer and style caps) and two by the author (who edited it);
    * a third with one settled negative and questions its writer labelled (not settled);
    * a fourth with a revision and no question."""
    report = judge_recall(task=measured, judge=judge)
    measured.refresh_from_db()
    suggestions_accept(task=measured, actor=author, accepted=expansion_suggestions(report))
    write_and_settle(
        measured,
        writers,
        [reviewer, auditor],
        [(TROUBLED, "Which loan status codes should be treated as troubled?")],
    )

    copied = _demo_task(project, author)
    write_and_settle(copied, writers, [reviewer, auditor], HITS + MISSES + NEGATIVES)
    for gold, text in MISSES:
        copied.refresh_from_db()
        core.trigger_question_create(
            blocker=copied.blockers.get(key=gold),
            actor=author,
            expected_version=copied.version,
            text=text,
        )
    colleague = _member(project, "colleague", Role.AUTHOR)
    write_and_settle(copied, [colleague], [reviewer, auditor], EASY, styles=[TASK_WORDS])
    write_and_settle(copied, [author], [reviewer, auditor], BY_THE_AUTHOR)

    unsettled = _demo_task(project, author)
    write_and_settle(unsettled, writers, [reviewer, auditor], NEGATIVES[:1])
    for _, text in EASY[2:4]:
        question = question_add(task=unsettled, actor=writers[0], text=text, style=TASK_WORDS)
        # A label its writer gave before the rule (issue 43), and one other's.
        QuestionLabel.objects.create(question=question, labeller=writers[0], blocker_key=TROUBLED)
        QuestionLabel.objects.create(question=question, labeller=reviewer, blocker_key=TROUBLED)

    return [measured, copied, unsettled, _demo_task(project, author)]


def test_many_tasks_measured_at_once_read_as_each_alone(floor_tasks, judge, monkeypatch):
    alone = {task.pk: judge_recall(task=task, judge=judge) for task in floor_tasks}
    rules = {item["rule"] for report in alone.values() for item in report.excluded}
    assert rules == {"editor", "writer_label", "writer_cap", "style_cap"}
    compromised = [item["compromised"] for r in alone.values() for item in r.compromised]
    assert any(why.startswith("retired") for why in compromised)
    assert any(why.startswith("matched only through registry text") for why in compromised)
    assert len(alone[floor_tasks[0].pk].compromised) == 2  # one of three replaced
    assert alone[floor_tasks[2].pk].recall is None and alone[floor_tasks[2].pk].unsettled == 2

    # In another order, and two tasks a chunk: no task reads another's questions or verdicts.
    monkeypatch.setattr(recall, "RECALL_CHUNK", 2)
    together = judge_recall_many(tasks=floor_tasks[::-1], judge=judge)
    assert together == alone  # every field: precision, recall, per blocker and style, …

    report = project_judge_report(project=floor_tasks[0].project, judge=judge)
    assert {row.task.pk: row.report for row in report.tasks} == {
        task.pk: alone[task.pk] for task in floor_tasks[:3]
    }


def test_measuring_many_tasks_reads_as_many_queries_as_one(floor_tasks, judge):
    judge_recall_many(tasks=floor_tasks, judge=judge)  # every verdict judged and kept
    with CaptureQueriesContext(connection) as one:
        judge_recall_many(tasks=floor_tasks[:1], judge=judge)
    with CaptureQueriesContext(connection) as four:
        judge_recall_many(tasks=floor_tasks, judge=judge)
    assert len(one) == len(four) == 7, [q["sql"][:80] for q in four.captured_queries]


def test_indexes_built_at_once_read_the_embedding_store_once_and_judge_alike(floor_tasks):
    """The report's first reading of questions the judge never answered builds the index of
    each task's registry; they are built at once (``EmbeddedJudge.prepare_many``), from one
    read of the embedding store, and score as the ones built a registry at a time."""
    from hilbench_annotate.selectors import current_snapshots
    from judge.embedded import EmbeddedJudge
    from judge.embedstore import stored_encode
    from judge.services import registry_from_snapshot, task_context

    snapshots = current_snapshots(task_ids=[task.pk for task in floor_tasks]).values()
    items = [(registry_from_snapshot(s), "sql", task_context(s)) for s in snapshots]
    assert len({registry_key(*item) for item in items}) > 1  # edited registries differ
    at_once = EmbeddedJudge(index_embed=stored_encode)
    with CaptureQueriesContext(connection) as read:
        at_once.prepare_many(items)
    store = [q for q in read.captured_queries if "judge_judgeembedding" in q["sql"].lower()]
    assert len([q for q in store if q["sql"].lstrip().upper().startswith("SELECT")]) == 1
    one_by_one = EmbeddedJudge(index_embed=stored_encode)
    for registry, domain, context in items:
        for _, question in HITS + MISSES:
            assert at_once.scores(question, registry, domain, context) == one_by_one.scores(
                question, registry, domain, context
            )
