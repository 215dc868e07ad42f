"""Judge validation on double-labelled held-out questions, and the recall floor loop."""

import pytest

from hilbench_annotate.errors import DomainError
from judge.embedded import EmbeddedJudge
from judge.labels import cohen_kappa, gold_label, label_add, labeller_agreement
from judge.models import QuestionLabel, ValidationQuestion
from judge.validation import (
    expansion_suggestions,
    judge_recall,
    question_add,
    suggestions_accept,
)
from validators.services import validation_run_execute, validation_run_start

from .conftest import HELD_OUT, SERVICING, TROUBLED, YEAR
from .util import write_and_settle

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def judge():
    return EmbeddedJudge()


def test_two_labellers_then_a_third_only_on_disagreement(labelled, author, reviewer, lead):
    states = [gold_label(q)[0] for q in labelled.validation_questions.all()]
    assert states.count("adjudicated") == 1 and states.count("agreed") == len(HELD_OUT) - 1
    settled = labelled.validation_questions.get(text__startswith="How many branches")
    assert gold_label(settled) == ("adjudicated", None)
    with pytest.raises(DomainError, match="already settled"):
        label_add(
            question=settled,
            labeller=author.__class__.objects.create(username="late"),
            blocker_key=None,
        )
    fresh = question_add(task=labelled, actor=author, text="Which status marks a troubled loan?")
    with pytest.raises(DomainError, match="author does not label"):
        label_add(question=fresh, labeller=author, blocker_key=TROUBLED)
    with pytest.raises(DomainError, match="no blocker"):
        label_add(question=fresh, labeller=reviewer, blocker_key="made_up")
    label_add(question=fresh, labeller=reviewer, blocker_key=TROUBLED)
    with pytest.raises(DomainError, match="already labelled"):
        label_add(question=fresh, labeller=reviewer, blocker_key=TROUBLED)
    assert not QuestionLabel.objects.filter(question=fresh, labeller=lead).exists()


def test_cohen_kappa_on_a_hand_checked_example(labelled):
    # 10 items, two raters: 8 agreements; rater A says x 5 times, B 6 times (x/y categories).
    pairs = [("x", "x")] * 4 + [("y", "y")] * 4 + [("x", "y")] + [("y", "x")]
    assert cohen_kappa(pairs) == pytest.approx((0.8 - 0.5) / (1 - 0.5))
    assert cohen_kappa([("x", "x"), ("x", "x")]) == 1.0
    (pair,) = labeller_agreement(labelled.validation_questions.prefetch_related("labels__labeller"))
    assert pair["labellers"] == ("reviewer", "auditor") and pair["questions"] == len(HELD_OUT)
    assert pair["kappa"] < 1.0


# Questions the judge matches, per blocker: fresh ones written in place of retired misses.
FRESH = {
    TROUBLED: [
        "Which loan status values mark a loan as troubled?",
        "Which states of a loan mean it is troubled?",
        "Which status tells me a loan is troubled?",
        "What defines a troubled loan for this question?",
    ],
    SERVICING: [
        "Which k_symbol value do loan servicing payments carry?",
        "Which rows of transaction_log hold loan servicing payments?",
        "What code do loan servicing payments have?",
        "Which k_symbol value stands for loan servicing?",
    ],
    YEAR: [
        "Which dates bound the review year?",
        "What year is meant by the review year?",
        "On which day does the review year begin?",
        "Which year should the review year be?",
    ],
}


def test_recall_floor_loop_end_to_end(
    labelled, author, writers, reviewer, auditor, judge, settings
):
    settings.JUDGE_BACKEND = "embedded"
    report = judge_recall(task=labelled, judge=judge)
    assert report.recall < 0.80 and report.needs_expansion
    assert not report.passes and not report.shortfall  # enough questions: the recall is low
    assert report.precision == 1.0 and report.misses
    assert report.positives == len([g for g, _ in HELD_OUT if g])

    # The check on the run says so too.
    run = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=run.pk)
    result = run.results.get()
    assert result.outcome == "failed" and f"{report.recall:.0%}" in result.message
    assert "suggestions" in result.message

    # The author accepts every suggestion: the misses become trigger questions and leave
    # the held-out split — and still count as misses, until fresh questions replace them.
    suggestions = expansion_suggestions(report)
    labelled.refresh_from_db()
    suggestions_accept(task=labelled, actor=author, accepted=suggestions)
    retired = set(
        labelled.validation_questions.filter(split=ValidationQuestion.Split.RETIRED).values_list(
            "text", flat=True
        )
    )
    assert retired == {s["text"] for s in suggestions}
    after = judge_recall(task=labelled, judge=judge)
    assert after.recall <= report.recall and not after.passes
    assert {c["text"] for c in after.compromised} == retired

    # Fresh questions by someone other than the author, one per retired question, labelled
    # by two people: they replace the retired ones, and the task passes.
    fresh = {key: list(texts) for key, texts in FRESH.items()}
    _label(
        labelled,
        writers,
        reviewer,
        auditor,
        [(s["blocker"], fresh[s["blocker"]].pop()) for s in suggestions],
    )
    measured = judge_recall(task=labelled, judge=judge)
    assert not measured.compromised and measured.passes, measured.misses
    # No question used for the final number is a trigger question.
    triggers = {
        q
        for b in labelled.revisions.order_by("-number").first().snapshot["blockers"]
        for q in b["trigger_questions"]
    }
    measured_texts = set(
        labelled.validation_questions.filter(split="held_out").values_list("text", flat=True)
    )
    assert not triggers & measured_texts

    rerun = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=rerun.pk)
    assert rerun.results.get().outcome == "passed"


def _label(task, writers, reviewer, auditor, questions) -> None:
    """Written by ``writers`` in turn per blocker and in balanced styles (judge.floor's
    rules), labelled alike by two others."""
    write_and_settle(task, writers, [reviewer, auditor], questions)


def test_a_held_out_question_that_copies_a_trigger_is_refused(task, author):
    trigger = task.blockers.get(key=YEAR).trigger_questions.first().text
    for copy in (trigger, f"Could you clarify: {trigger[0].lower()}{trigger[1:]}", trigger[:-1]):
        with pytest.raises(DomainError, match="Too close to the trigger question"):
            question_add(task=task, actor=author, text=copy)
    question_add(task=task, actor=author, text="What span of dates does the review year refer to?")
    with pytest.raises(DomainError, match="already among"):
        question_add(
            task=task, actor=author, text="what span of dates does the review year refer to?"
        )


# Negatives a project calibration is given (questions about the data that no blocker answers).
CALIBRATION_NEGATIVES = [
    (None, "Which loans did the bank write off in 1995?"),
    (None, "How are the district names spelled in the data?"),
    (None, "Which client has the largest account balance?"),
    (None, "How many loans does the bank hold in total?"),
]


def test_project_calibration_is_stored_as_a_judge_version(
    labelled, writers, reviewer, auditor, lead, settings, monkeypatch
):
    from judge import validation
    from judge.models import JudgeCalibration
    from judge.services import calibration_forget, get_judge, judge_version

    settings.JUDGE_BACKEND = "embedded"
    # A calibration needs negatives: as many as half its positives here.
    negatives = CALIBRATION_NEGATIVES
    _label(labelled, writers, reviewer, auditor, negatives)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_NEGATIVES", 2)
    shipped = get_judge(project=None)
    # Too few settled positives to move a threshold: the shipped ones are kept.
    calibration = validation.judge_calibrate(project=labelled.project, actor=lead)
    assert JudgeCalibration.objects.get() == calibration
    assert calibration.questions == len(HELD_OUT) + len(negatives)
    assert calibration.thresholds == shipped.thresholds
    assert calibration.version == f"{shipped.version}/p{labelled.project.pk}-cal1"
    # With enough of them, the task's domain gets its own threshold.
    monkeypatch.setattr(validation, "CALIBRATION_MIN_POSITIVES", 1)
    second = validation.judge_calibrate(project=labelled.project, actor=lead)
    domain = labelled.domain
    assert second.thresholds[domain] != shipped.thresholds[domain]
    assert second.precision is None or second.precision >= 0.97
    judge = get_judge(project=labelled.project)
    assert (judge.version, judge.thresholds) == (second.version, second.thresholds)
    # What an export names, read without building the judge: the same version.
    assert judge_version(labelled.project) == second.version
    assert judge_version(None) == shipped.version
    # Another project keeps the shipped judge; a calibration made for other weights is
    # not used.
    assert get_judge(project=None).version == shipped.version
    JudgeCalibration.objects.filter(pk=second.pk).update(version="embedded-1/old")
    calibration_forget(labelled.project_id)  # as another process sees it, within seconds
    assert get_judge(project=labelled.project).version in (shipped.version, calibration.version)
    assert judge_version(labelled.project) == get_judge(project=labelled.project).version


def test_calibrate_button_is_for_leads_and_a_worker_runs_it(
    client, labelled, writers, auditor, lead, reviewer, settings, monkeypatch
):
    """A calibration takes 0.9 s on a project of 100,000 tasks: the button queues it."""
    from django.urls import reverse

    from judge import validation
    from judge.models import CalibrationJob, JudgeCalibration
    from judge.validation import judge_calibrate_execute

    settings.JUDGE_BACKEND = "embedded"
    url = reverse("judge-calibrate", args=[labelled.project_id])
    client.force_login(reviewer)
    assert client.post(url).status_code == 403
    client.force_login(lead)
    report = reverse("judge-report", args=[labelled.project_id])
    # Too few settled negatives for the domain to calibrate: the job fails, the report says why.
    monkeypatch.setattr(validation, "CALIBRATION_MIN_POSITIVES", 1)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_NEGATIVES", 1000)
    assert client.post(url).status_code == 302
    job = CalibrationJob.objects.get()
    assert job.status == "queued" and "Calibration queued" in client.get(report).content.decode()
    assert client.post(url).status_code == 302  # asked again while queued: the same job
    assert CalibrationJob.objects.count() == 1
    judge_calibrate_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "settled negative" in job.error
    assert "The last calibration failed" in client.get(report).content.decode()
    # Labelled: a worker runs it (here, the service the task calls) and the report shows it.
    _label(labelled, writers, reviewer, auditor, CALIBRATION_NEGATIVES)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_NEGATIVES", 2)
    client.post(url)
    job = CalibrationJob.objects.first()
    judge_calibrate_execute(job_id=job.pk)
    job.refresh_from_db()
    calibration = JudgeCalibration.objects.get(project=labelled.project)
    assert job.status == "succeeded" and job.calibration == calibration
    assert calibration.created_by == lead
    page = client.get(report).content.decode()
    assert calibration.version in page and "Last calibration on" in page
    # The task job_send sends once the POST commits is the one that runs it.
    from hilbench_annotate.celery import app
    from hilbench_annotate.jobs import kind_of
    from judge.tasks import calibration_job

    app.loader.import_default_modules()
    assert app.tasks[kind_of(CalibrationJob).task].name == calibration_job.name == "judge.calibrate"


def test_calibration_reads_a_fixed_number_of_queries_whatever_the_projects_size(
    labelled, writers, reviewer, auditor, lead, settings, monkeypatch
):
    """It read every task of the project and its current revision one query each (a
    100,000-task project: 100,000 queries); now the tasks with held-out questions, and the
    project's tasks a chunk at a time only until the fixed negatives have their tasks."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from hilbench_annotate.models import Revision, Task
    from hilbench_annotate.selectors import revision_current
    from judge import validation

    settings.JUDGE_BACKEND = "embedded"
    _label(labelled, writers, reviewer, auditor, CALIBRATION_NEGATIVES)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_NEGATIVES", 2)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_POSITIVES", 1)
    validation.judge_calibrate(project=labelled.project, actor=lead)  # the judge loaded
    with CaptureQueriesContext(connection) as small:
        first = validation.judge_calibrate(project=labelled.project, actor=lead)

    # 600 more tasks of the domain, the newer half (the first in the tasks' order) with a
    # revision that has blockers.
    snapshot = revision_current(task=labelled).snapshot
    more = Task.objects.bulk_create(
        Task(
            project=labelled.project,
            domain=labelled.domain,
            source=labelled.source,
            source_id=f"more/{i}",
            title=f"More {i}",
            author=labelled.author,
        )
        for i in range(600)
    )
    Revision.objects.bulk_create(Revision(task=t, number=1, snapshot=snapshot) for t in more[300:])
    with CaptureQueriesContext(connection) as big:
        second = validation.judge_calibrate(project=labelled.project, actor=lead)
    assert second.questions == first.questions
    assert len(big.captured_queries) <= len(small.captured_queries) < 60


def test_calibration_encodes_the_fixed_negatives_once_for_all_its_probe_tasks(
    labelled, writers, reviewer, auditor, lead, settings, monkeypatch
):
    """The fixed negatives were encoded again for each of a domain's probe tasks (10 at most):
    12.7 of a 100,000-task project's 14 s calibration. Their embeddings do not depend on the
    task, so they are encoded once and scored against every probe task's registry."""
    from exchange.demo.blocked_task import DEMO_BLOCKERS
    from hilbench_annotate import services as core
    from judge import validation

    from ..factories import TaskFactory

    for _ in range(2):  # three probe tasks of the domain, each with its blockers
        other = TaskFactory(project=labelled.project, author=labelled.author)
        for blocker in DEMO_BLOCKERS:
            core.blocker_create(
                task=other, actor=labelled.author, expected_version=other.version, **blocker
            )
    settings.JUDGE_BACKEND = "embedded"
    _label(labelled, writers, reviewer, auditor, CALIBRATION_NEGATIVES)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_NEGATIVES", 2)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_POSITIVES", 1)
    assert len(validation._probe_registries(labelled.project, labelled.domain)) == 3
    encoded: list[str] = []
    real = EmbeddedJudge._encode

    def counting(self, texts):
        encoded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(EmbeddedJudge, "_encode", counting)
    # And what the embedding store (judge.embedstore) encodes, for the texts it has not kept.
    from judge import embedstore

    encoder = embedstore.get_encoder()

    class Counting:
        def encode(self, texts):
            encoded.extend(texts)
            return encoder.encode(texts)

    monkeypatch.setattr(embedstore, "get_encoder", Counting)
    calibration = validation.judge_calibrate(project=labelled.project, actor=lead)
    asked = {text for _, text in [*HELD_OUT, *CALIBRATION_NEGATIVES]}  # scored once each too
    fixed = {q.strip() for q in validation.FIXED_NEGATIVES} - asked
    counted = [t for t in encoded if t in fixed]
    assert counted and len(counted) == len(set(counted))  # each once, not three times
    assert calibration.thresholds[labelled.domain] > -100
    # They are the same for every calibration: kept in the store, never encoded again.
    encoded.clear()
    again = validation.judge_calibrate(project=labelled.project, actor=lead)
    assert not [t for t in encoded if t in fixed]
    assert again.thresholds == calibration.thresholds
