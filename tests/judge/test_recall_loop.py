"""Judge validation on double-labelled held-out questions, and the recall floor loop."""

import pytest

from hilbench_annotate.errors import DomainError
from judge.embedded import EmbeddedJudge
from judge.models import QuestionLabel, ValidationQuestion
from judge.validation import (
    cohen_kappa,
    expansion_suggestions,
    gold_label,
    judge_recall,
    label_add,
    labeller_agreement,
    question_add,
    suggestions_accept,
)
from validators.services import validation_run_execute, validation_run_start

from .conftest import HELD_OUT, TROUBLED

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


def test_recall_floor_loop_end_to_end(labelled, author, judge, settings):
    settings.JUDGE_BACKEND = "embedded"
    report = judge_recall(task=labelled, judge=judge)
    assert report.recall == pytest.approx(0.6) and report.needs_expansion and not report.passes
    assert report.precision == 1.0 and len(report.misses) == 4

    # The check on the run says so too.
    run = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=run.pk)
    result = run.results.get()
    assert (
        result.outcome == "failed" and "60%" in result.message and "suggestions" in result.message
    )

    # The author accepts two of the four suggestions (the other two stay held out).
    suggestions = {s["text"]: s for s in expansion_suggestions(report)}
    chosen = [
        suggestions["Are defaulted contracts the ones we care about, status-wise?"],
        suggestions["Is the audit cycle aligned with a particular twelve-month window?"],
    ]
    labelled.refresh_from_db()
    suggestions_accept(task=labelled, actor=author, accepted=chosen)
    retired = set(
        labelled.validation_questions.filter(split=ValidationQuestion.Split.RETIRED).values_list(
            "text", flat=True
        )
    )
    assert retired == {c["text"] for c in chosen}

    after = judge_recall(task=labelled, judge=judge)
    assert after.recall >= 0.85 and after.passes
    # A question that was missed and never became a trigger is now matched.
    assert "Which twelve-month window is the audit cycle?" not in [m["text"] for m in after.misses]
    # No question used for the final number is a trigger question.
    triggers = {
        q
        for b in labelled.revisions.order_by("-number").first().snapshot["blockers"]
        for q in b["trigger_questions"]
    }
    measured = set(
        labelled.validation_questions.filter(split="held_out").values_list("text", flat=True)
    )
    assert not triggers & measured

    rerun = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=rerun.pk)
    assert rerun.results.get().outcome == "passed"


def test_project_calibration_is_stored_as_a_judge_version(
    labelled, author, lead, settings, monkeypatch
):
    from judge import validation
    from judge.models import JudgeCalibration
    from judge.services import get_judge

    settings.JUDGE_BACKEND = "embedded"
    shipped = get_judge(project=None)
    # Too few settled positives to move a threshold: the shipped ones are kept.
    calibration = validation.judge_calibrate(project=labelled.project, actor=lead)
    assert JudgeCalibration.objects.get() == calibration
    assert calibration.questions == len(HELD_OUT)
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
    # Another project keeps the shipped judge; a calibration made for other weights is
    # not used.
    assert get_judge(project=None).version == shipped.version
    JudgeCalibration.objects.filter(pk=second.pk).update(version="embedded-1/old")
    assert get_judge(project=labelled.project).version in (shipped.version, calibration.version)


def test_calibrate_button_is_for_leads(client, labelled, lead, reviewer, settings):
    from django.urls import reverse

    from judge.models import JudgeCalibration

    settings.JUDGE_BACKEND = "embedded"
    url = reverse("judge-calibrate", args=[labelled.project_id])
    client.force_login(reviewer)
    assert client.post(url).status_code == 403
    client.force_login(lead)
    response = client.post(url)
    assert response.status_code == 302
    assert JudgeCalibration.objects.filter(project=labelled.project).count() == 1
    page = client.get(reverse("judge-report", args=[labelled.project_id])).content.decode()
    assert JudgeCalibration.objects.get().version in page
