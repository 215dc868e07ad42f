"""Judge validation on double-labelled held-out questions, and the recall floor loop."""

import pytest

from hilbench_annotate import services as core
from hilbench_annotate.errors import DomainError
from hilbench_annotate.gates import gate_results
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

from .conftest import HELD_OUT, SERVICING, TROUBLED, YEAR

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


def test_recall_floor_loop_end_to_end(labelled, author, reviewer, auditor, judge, settings):
    settings.JUDGE_BACKEND = "embedded"
    report = judge_recall(task=labelled, judge=judge)
    assert report.recall == pytest.approx(7 / 11) and report.needs_expansion
    assert not report.passes and not report.shortfall  # enough questions: the recall is low
    assert report.precision == 1.0 and len(report.misses) == 4
    assert report.per_blocker[SERVICING] == {"held_out": 3, "correct": 3}

    # The check on the run says so too.
    run = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=run.pk)
    result = run.results.get()
    assert (
        result.outcome == "failed" and "64%" in result.message and "suggestions" in result.message
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

    # The missed "Which twelve-month window is the audit cycle?" never became a trigger, but
    # the accepted "Is the audit cycle aligned…" holds every content word of it: it measures
    # that trigger now, so it stops counting, and the review year is one question short.
    after = judge_recall(task=labelled, judge=judge)
    assert [c["text"] for c in after.trigger_copies] == [
        "Which twelve-month window is the audit cycle?"
    ]
    assert not after.passes and after.shortfall == [
        f"{YEAR}: 2 of the 3 settled held-out questions it needs"
    ]
    _label(
        labelled,
        author,
        reviewer,
        auditor,
        [(YEAR, "Which twelve months make up the review year?")],
    )
    after = judge_recall(task=labelled, judge=judge)
    assert after.recall >= 0.85 and after.passes and not after.shortfall
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


def _label(task, author, reviewer, auditor, questions) -> None:
    for gold, text in questions:
        question = question_add(task=task, actor=author, text=text)
        label_add(question=question, labeller=reviewer, blocker_key=gold)
        label_add(question=question, labeller=auditor, blocker_key=gold)


def test_retiring_the_misses_cannot_lift_a_task_over_the_floor(
    task, author, reviewer, auditor, judge, settings
):
    """The issue's sequence: six held-out questions at 4/6; accepting the two suggestions
    used to give 4/4 = 100%. Now the measurement needs three settled questions per blocker
    and ten in all, so it stays short until fresh questions are labelled."""
    settings.JUDGE_BACKEND = "embedded"
    _label(task, author, reviewer, auditor, [
        (TROUBLED, "Which loans count as troubled for this question?"),
        (TROUBLED, "Are defaulted contracts the ones we care about, status-wise?"),
        (SERVICING, "Which purpose code identifies loan servicing payments?"),
        (SERVICING, "How are loan servicing payments marked in transaction_log?"),
        (YEAR, "What period does the review year cover?"),
        (YEAR, "Is the audit cycle aligned with a particular twelve-month window?"),
    ])  # fmt: skip
    report = judge_recall(task=task, judge=judge)
    assert report.recall == pytest.approx(4 / 6) and not report.passes
    task.refresh_from_db()
    suggestions_accept(task=task, actor=author, accepted=expansion_suggestions(report))

    gamed = judge_recall(task=task, judge=judge)
    assert gamed.recall == 1.0 and gamed.positives == 4
    assert not gamed.passes
    assert any(line.startswith(f"{TROUBLED}: 1 of the 3") for line in gamed.shortfall)
    run = validation_run_start(task=task, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=run.pk)
    result = run.results.get()
    assert result.outcome == "failed" and "too few questions to count" in result.message
    assert gate_results(task, ["judge_recall", "judge_labelling"])[0][1] is False

    # Fresh questions added but labelled once only: still not measured.
    fresh = [
        (TROUBLED, "What makes a loan troubled in this data?"),
        (TROUBLED, "Which loan statuses should be treated as troubled?"),
        (SERVICING, "What value flags a payment of the loan servicing fee?"),
        (YEAR, "What span of dates does the review year refer to?"),
        (YEAR, "Which twelve months make up the review year?"),
        (None, "What is the capital of France?"),
        (None, "How many branches does the bank have?"),
    ]
    first = question_add(task=task, actor=author, text=fresh[0][1])
    label_add(question=first, labeller=reviewer, blocker_key=TROUBLED)
    assert not judge_recall(task=task, judge=judge).passes
    labelling = dict((n, green) for n, green, _ in gate_results(task, ["judge_labelling"]))
    assert labelling == {"judge_labelling": False}
    label_add(question=first, labeller=auditor, blocker_key=TROUBLED)
    _label(task, author, reviewer, auditor, fresh[1:])

    measured = judge_recall(task=task, judge=judge)
    assert not measured.shortfall and measured.positives == 9
    assert measured.passes, measured.misses
    task.refresh_from_db()
    rerun = validation_run_start(task=task, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=rerun.pk)
    gates = gate_results(task, ["judge_recall", "judge_labelling"])
    assert [(name, green) for name, green, _ in gates] == [
        ("judge_recall", True),
        ("judge_labelling", True),
    ]
    assert gates[1][2] == "All 11 held-out questions are labelled and settled."
    assert rerun.results.get().message.startswith("Judge recall 100% on 9 held-out questions")


def test_misses_copied_into_the_registry_by_hand_stop_counting(
    labelled, author, reviewer, auditor, judge, settings
):
    """The audit's sequence: at 7/11 (64%) the author types two missed held-out questions
    in as trigger questions with the registry editor, bypassing the suggestions. All eleven
    still counted and recall read 10/11 (91%): the gate went green. Now every held-out
    question a trigger (nearly) copies stops counting, whichever way the trigger got there,
    and the gate stays red until fresh questions are labelled."""
    settings.JUDGE_BACKEND = "embedded"
    assert judge_recall(task=labelled, judge=judge).recall == pytest.approx(7 / 11)
    for key, text in [
        (TROUBLED, "Are defaulted contracts the ones we care about, status-wise?"),
        (YEAR, "Is the audit cycle aligned with a particular twelve-month window?"),
    ]:
        labelled.refresh_from_db()
        core.trigger_question_create(
            blocker=labelled.blockers.get(key=key),
            actor=author,
            expected_version=labelled.version,
            text=text,
        )
    copied = judge_recall(task=labelled, judge=judge)
    # The two copies, and "Which twelve-month window is the audit cycle?", whose content
    # words the second trigger holds.
    assert {c["text"] for c in copied.trigger_copies} == {
        "Are defaulted contracts the ones we care about, status-wise?",
        "Is the audit cycle aligned with a particular twelve-month window?",
        "Which twelve-month window is the audit cycle?",
    }
    assert copied.positives == 8 and not copied.passes
    assert copied.shortfall == [f"{YEAR}: 2 of the 3 settled held-out questions it needs"]
    run = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=run.pk)
    result = run.results.get()
    assert result.outcome == "failed"
    assert (
        "3 held-out questions now match trigger questions and no longer count; add fresh ones."
        in result.message
    )
    assert len(result.details["trigger_copies"]) == 3
    assert gate_results(labelled, ["judge_recall"])[0][1] is False

    # Editing an existing trigger into a near-copy of the last miss counts the same way.
    labelled.refresh_from_db()
    core.trigger_question_update(
        question=labelled.blockers.get(key=TROUBLED).trigger_questions.first(),
        actor=author,
        expected_version=labelled.version,
        text="Do delinquent contracts fall under the problem category here?",
    )
    edited = judge_recall(task=labelled, judge=judge)
    assert len(edited.trigger_copies) == 4 and not edited.passes
    assert f"{TROUBLED}: 2 of the 3 settled held-out questions it needs" in edited.shortfall
    # The labelling gate counts what the recall counts.
    labelling = gate_results(labelled, ["judge_labelling"])[0]
    assert labelling[1] is False and f"{TROUBLED}: 2 of the 3" in labelling[2]

    # Fresh questions, labelled once: still red; labelled by the second person: measured.
    fresh = [
        (TROUBLED, "Which loan statuses should be treated as troubled?"),
        (YEAR, "Which twelve months make up the review year?"),
    ]
    questions = [question_add(task=labelled, actor=author, text=text) for _, text in fresh]
    for question, (gold, _) in zip(questions, fresh, strict=True):
        label_add(question=question, labeller=reviewer, blocker_key=gold)
    assert not judge_recall(task=labelled, judge=judge).passes
    for question, (gold, _) in zip(questions, fresh, strict=True):
        label_add(question=question, labeller=auditor, blocker_key=gold)
    measured = judge_recall(task=labelled, judge=judge)
    assert measured.passes and not measured.shortfall, measured.misses
    labelled.refresh_from_db()
    rerun = validation_run_start(task=labelled, actor=author, checks=["judge_recall"])
    validation_run_execute(run_id=rerun.pk)
    assert rerun.results.get().outcome == "passed"
    assert "4 held-out questions now match trigger questions" in rerun.results.get().message


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
