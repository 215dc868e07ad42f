"""Labels of held-out questions: who labels, the gold label they settle, and agreement.

Two people other than its writer label a held-out question independently (a blocker, or
none); when they disagree, a third — not its writer either — adjudicates. Its writer may not
label it, and a label its writer gave before that rule (issue 43) does not count: two
colleagues writing and labelling each other's questions settle none of them. A labeller may
change or withdraw their own label while the question is not settled — unlabelled but for
theirs, or disputed — so one wrong key is not a dispute a third person must settle. Once two
labels agree or an adjudicator decides, the labels are final: a settled question counts
toward the recall floor (``judge.floor`` says which), the ``judge_recall`` gate and the
calibration. Changes and withdrawals are recorded as events of the task.
"""

from collections import Counter

from django.db import transaction

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Blocker
from hilbench_annotate.services import task_event
from hilbench_annotate.services.tasks import task_lock

from .models import QuestionLabel, ValidationQuestion

SETTLED = ("agreed", "adjudicated")


def gold_of(labels: list[QuestionLabel], writer_id: int | None = None) -> tuple[str, str | None]:
    """(state, blocker id or None) of a question with these labels: unlabelled, single,
    agreed, disputed or adjudicated. The labels of ``writer_id`` (the question's writer) do
    not count; an adjudication of a dispute with its writer (given before that rule) is then
    one more independent label."""
    labels = [label for label in labels if writer_id is None or label.labeller_id != writer_id]
    first = [label for label in labels if label.role == QuestionLabel.Role.LABELLER]
    adjudications = [label for label in labels if label.role == QuestionLabel.Role.ADJUDICATOR]
    while len(first) < 2 and adjudications:
        first.append(adjudications.pop(0))
    if adjudications:
        return "adjudicated", adjudications[0].blocker_key
    if not first:
        return "unlabelled", None
    if len(first) == 1:
        return "single", None
    if first[0].blocker_key == first[1].blocker_key:
        return "agreed", first[0].blocker_key
    return "disputed", None


def gold_label(question: ValidationQuestion) -> tuple[str, str | None]:
    """``gold_of`` the question's labels (prefetched ones when the caller prefetched them),
    its writer's left out."""
    return gold_of(list(question.labels.all()), question.created_by_id)


def _check_key(question: ValidationQuestion, blocker_key: str | None) -> None:
    keys = set(Blocker.objects.filter(task=question.task).values_list("key", flat=True))
    if blocker_key is not None and blocker_key not in keys:
        raise DomainError(f"The task has no blocker {blocker_key!r}.")


@transaction.atomic
def label_add(*, question: ValidationQuestion, labeller, blocker_key: str | None) -> QuestionLabel:
    """Two people label independently; only a disagreement goes to a third. On the task's
    row lock."""
    task_lock(question.task)
    _check_key(question, blocker_key)
    if question.task.author_id == labeller.pk:
        raise DomainError("The task's author does not label its validation questions.")
    if question.created_by_id == labeller.pk:
        raise DomainError(
            "You wrote this question: two other people label it (a writer's own label does "
            "not count)."
        )
    labels = list(QuestionLabel.objects.select_for_update().filter(question=question))
    if any(label.labeller_id == labeller.pk for label in labels):
        raise DomainError("You already labelled this question: change or withdraw your label.")
    state, _ = gold_of(labels, question.created_by_id)
    if state in ("unlabelled", "single"):
        role = QuestionLabel.Role.LABELLER
    elif state == "disputed":
        role = QuestionLabel.Role.ADJUDICATOR
    else:
        raise DomainError(f"This question's label is already settled ({state}).")
    return QuestionLabel.objects.create(
        question=question, labeller=labeller, role=role, blocker_key=blocker_key
    )


def _own_open_label(question: ValidationQuestion, labeller, doing: str) -> QuestionLabel:
    """``labeller``'s label of ``question``, locked, if they may still change it (the module
    docstring's rule); otherwise a ``DomainError`` saying why. Caller holds the task's lock."""
    if question.split != ValidationQuestion.Split.HELD_OUT:
        raise DomainError(f"This question is retired: its labels are final, so you cannot {doing}.")
    labels = list(QuestionLabel.objects.select_for_update().filter(question=question))
    mine = next((label for label in labels if label.labeller_id == labeller.pk), None)
    if mine is None:
        raise DomainError(
            f"You have no label on this question to {doing} (withdrawn already, perhaps in "
            "another tab)."
        )
    state, _ = gold_of(labels, question.created_by_id)
    if state in SETTLED:
        raise DomainError(
            f"This question is settled ({state}): its labels are final, so you cannot {doing}."
        )
    return mine


@transaction.atomic
def label_change(
    *, question: ValidationQuestion, labeller, blocker_key: str | None
) -> QuestionLabel:
    """The labeller's own label of an unsettled question, set to ``blocker_key`` (None: not
    about any blocker); recorded as an event when it changes. On the task's row lock."""
    task_lock(question.task)
    label = _own_open_label(question, labeller, "change it")
    _check_key(question, blocker_key)
    if label.blocker_key == blocker_key:
        return label
    before = label.blocker_key
    label.blocker_key = blocker_key
    label.save(update_fields=["blocker_key"])
    # The event says which labels; the timeline's words do not (review/timeline.py): the
    # other labeller must not read a label there before giving theirs.
    task_event(
        task=question.task,
        actor=labeller,
        kind="judge_label_changed",
        question=question.pk,
        before=before,
        after=blocker_key,
    )
    return label


@transaction.atomic
def label_withdraw(*, question: ValidationQuestion, labeller) -> None:
    """Take back the labeller's own label of an unsettled question: it awaits a label again
    (theirs or anyone's). On the task's row lock."""
    task_lock(question.task)
    label = _own_open_label(question, labeller, "withdraw it")
    label.delete()
    task_event(
        task=question.task,
        actor=labeller,
        kind="judge_label_withdrawn",
        question=question.pk,
        before=label.blocker_key,
    )


def cohen_kappa(pairs: list[tuple[str | None, str | None]]) -> float | None:
    """Cohen's kappa of two raters over the same items (None is a category too)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in set(first) | set(second)) / (n * n)
    if expected == 1:
        return 1.0
    return (observed - expected) / (1 - expected)


def labeller_agreement(questions) -> list[dict]:
    """Kappa per pair of labellers over the questions both labelled independently (their
    labels as they stand: a corrected label counts as corrected, a withdrawn one not at all)."""
    by_pair: dict[tuple[int, int], list] = {}
    names: dict[int, str] = {}
    for question in questions:
        first = sorted(
            (
                label
                for label in question.labels.all()
                if label.role == QuestionLabel.Role.LABELLER
                and label.labeller_id != question.created_by_id
            ),
            key=lambda label: label.labeller_id,
        )
        if len(first) == 2:
            pair = (first[0].labeller_id, first[1].labeller_id)
            by_pair.setdefault(pair, []).append((first[0].blocker_key, first[1].blocker_key))
            names.update({label.labeller_id: label.labeller.username for label in first})
    return [
        {"labellers": (names[a], names[b]), "questions": len(pairs), "kappa": cohen_kappa(pairs)}
        for (a, b), pairs in sorted(by_pair.items())
    ]
