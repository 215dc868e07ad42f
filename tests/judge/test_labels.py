"""Changing and withdrawing one's own label of a held-out question (judge.labels): allowed
while the question is not settled, final once two labels agree or a third adjudicates."""

import pytest
from django.utils import timezone

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import TaskEvent
from judge.labels import gold_label, label_add, label_change, label_withdraw, labeller_agreement
from judge.models import QuestionLabel, ValidationQuestion
from judge.validation import labelling_progress, question_add
from review.timeline import event_text

from .conftest import SERVICING, TROUBLED, YEAR

pytestmark = pytest.mark.django_db


@pytest.fixture
def question(task, writer):
    return question_add(task=task, actor=writer, text="Which contracts are the problem ones?")


def _events(task, kind):
    return list(TaskEvent.objects.filter(task=task, kind=kind).values_list("data", flat=True))


def _fresh(question):
    return ValidationQuestion.objects.prefetch_related("labels__labeller").get(pk=question.pk)


def test_a_corrected_label_removes_the_dispute_it_caused(task, question, reviewer, auditor):
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    label_add(question=question, labeller=auditor, blocker_key=SERVICING)  # the wrong key
    assert gold_label(_fresh(question)) == ("disputed", None)
    assert labeller_agreement([_fresh(question)])[0]["kappa"] == 0.0

    label = label_change(question=question, labeller=auditor, blocker_key=TROUBLED)

    assert label.blocker_key == TROUBLED and label.role == QuestionLabel.Role.LABELLER
    assert gold_label(_fresh(question)) == ("agreed", TROUBLED)
    assert labeller_agreement([_fresh(question)])[0]["kappa"] == 1.0
    assert labelling_progress(task)["states"] == {"agreed": 1}
    assert _events(task, "judge_label_changed") == [
        {"question": question.pk, "before": SERVICING, "after": TROUBLED}
    ]


def test_a_change_to_none_and_to_the_same_key(task, question, reviewer):
    label_add(question=question, labeller=reviewer, blocker_key=YEAR)
    label_change(question=question, labeller=reviewer, blocker_key=None)
    assert question.labels.get().blocker_key is None
    # Choosing the label it already has changes nothing and records nothing.
    label_change(question=question, labeller=reviewer, blocker_key=None)
    assert len(_events(task, "judge_label_changed")) == 1


def test_withdrawing_a_label_reopens_the_question(task, question, reviewer, auditor, lead):
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    label_add(question=question, labeller=auditor, blocker_key=YEAR)
    label_withdraw(question=question, labeller=auditor)

    # The dispute went with the label: one label left, and a second labeller is awaited —
    # anyone, the lead here, labelling independently rather than adjudicating.
    assert gold_label(_fresh(question)) == ("single", None)
    assert labeller_agreement([_fresh(question)]) == []
    assert _events(task, "judge_label_withdrawn") == [{"question": question.pk, "before": YEAR}]
    lead_label = label_add(question=question, labeller=lead, blocker_key=TROUBLED)
    assert lead_label.role == QuestionLabel.Role.LABELLER
    assert gold_label(_fresh(question)) == ("agreed", TROUBLED)

    # Withdrawing the only label leaves the question unlabelled.
    other = question_add(task=task, actor=lead, text="How is the servicing fee coded here?")
    label_add(question=other, labeller=reviewer, blocker_key=SERVICING)
    label_withdraw(question=other, labeller=reviewer)
    assert gold_label(_fresh(other)) == ("unlabelled", None)


def test_settled_labels_are_final(task, question, writer, reviewer, auditor, lead):
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    label_add(question=question, labeller=auditor, blocker_key=TROUBLED)
    for attempt in (
        lambda: label_change(question=question, labeller=auditor, blocker_key=YEAR),
        lambda: label_withdraw(question=question, labeller=reviewer),
    ):
        with pytest.raises(DomainError, match=r"settled \(agreed\)"):
            attempt()

    # Written by someone other than the adjudicator: a writer settles nothing of their own.
    adjudicated = question_add(task=task, actor=writer, text="Is the weather relevant to loans?")
    label_add(question=adjudicated, labeller=reviewer, blocker_key=None)
    label_add(question=adjudicated, labeller=auditor, blocker_key=YEAR)
    label_add(question=adjudicated, labeller=lead, blocker_key=None)  # adjudicates
    for labeller in (reviewer, auditor, lead):
        with pytest.raises(DomainError, match=r"settled \(adjudicated\)"):
            label_withdraw(question=adjudicated, labeller=labeller)
    assert gold_label(_fresh(question)) == ("agreed", TROUBLED)
    assert gold_label(_fresh(adjudicated)) == ("adjudicated", None)
    assert not _events(task, "judge_label_changed") and not _events(task, "judge_label_withdrawn")


def test_only_ones_own_label_changes(task, question, reviewer, auditor):
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    with pytest.raises(DomainError, match="no label on this question"):
        label_change(question=question, labeller=auditor, blocker_key=YEAR)
    with pytest.raises(DomainError, match="no label on this question"):
        label_withdraw(question=question, labeller=auditor)
    assert question.labels.get().blocker_key == TROUBLED

    # A double submission: the second withdrawal finds nothing to withdraw.
    label_withdraw(question=question, labeller=reviewer)
    with pytest.raises(DomainError, match="withdrawn already"):
        label_withdraw(question=question, labeller=reviewer)


def test_an_unknown_blocker_or_a_retired_question_is_refused(task, question, reviewer):
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    with pytest.raises(DomainError, match="no blocker 'nope'"):
        label_change(question=question, labeller=reviewer, blocker_key="nope")
    ValidationQuestion.objects.filter(pk=question.pk).update(
        split=ValidationQuestion.Split.RETIRED, retired_at=timezone.now()
    )
    question.refresh_from_db()
    with pytest.raises(DomainError, match="retired"):
        label_withdraw(question=question, labeller=reviewer)
    assert question.labels.get().blocker_key == TROUBLED


def test_the_timeline_says_a_label_changed_without_saying_which(task, question, reviewer):
    """The other labeller reads the task's timeline too: the words name no blocker, or they
    would read the label before giving theirs."""
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    label_change(question=question, labeller=reviewer, blocker_key=SERVICING)
    label_withdraw(question=question, labeller=reviewer)
    said = [
        event_text(event.kind, event.data, {})
        for event in TaskEvent.objects.filter(task=task, kind__startswith="judge_label")
    ]
    assert sorted(said) == [
        "changed their label of a held-out judge question",
        "withdrew their label of a held-out judge question",
    ]
