"""Reads of the judge's stored work: the last measurement of a task's judge recall.

*Measure the judge* records a validation run of ``judge_recall`` (``judge/gates.py`` keeps
the figures in its result's ``details``); the Judge validation page shows them again from
there on every visit, with when, by whom and with which judge they were measured, and
whether the task or its held-out labels changed since (then the figures are stale).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import QuerySet

from hilbench_annotate.models import Task
from hilbench_annotate.selectors import revision_current
from validators.models import ValidationResult, ValidationRun

from .models import CalibrationJob, QuestionLabel, ValidationQuestion
from .validation import RecallReport


@dataclass
class Measurement:
    report: RecallReport
    run: ValidationRun
    measured_at: datetime | None
    measured_by: str
    judge_version: str  # empty for a measurement recorded before the version was kept
    revision_number: int
    stale: list[str] = field(default_factory=list)  # why the figures may no longer hold


def _report(details: dict) -> RecallReport:
    """The report as the gate stored it. Runs recorded before ``correct``/``matches`` were
    kept give them from the tallies: correct per blocker, and correct plus false matches."""
    per_blocker = details.get("per_blocker") or {}
    false_matches = details.get("false_matches") or []
    correct = details.get("correct")
    if correct is None:
        correct = sum(int(tally.get("correct", 0)) for tally in per_blocker.values())
    matches = details.get("matches")
    if matches is None:
        matches = correct + len(false_matches)
    return RecallReport(
        precision=details.get("precision"),
        recall=details.get("recall"),
        positives=int(details.get("positives") or 0),
        matches=int(matches),
        correct=int(correct),
        misses=details.get("misses") or [],
        false_matches=false_matches,
        unsettled=int(details.get("unsettled") or 0),
        settled=int(details.get("settled") or 0),
        per_blocker=per_blocker,
        shortfall=details.get("shortfall") or [],
        compromised=details.get("compromised") or [],
        excluded=details.get("not_counted") or [],
        per_style=details.get("per_style") or {},
        writers=int(details.get("writers") or 0),
    )


def measurement_last(*, task: Task) -> Measurement | None:
    """The task's latest finished measurement of the judge's recall, or None. Four queries."""
    result = (
        ValidationResult.objects.filter(
            run__task=task, group="judge_recall", run__status__in=ValidationRun.FINISHED
        )
        .select_related("run__revision", "run__created_by")
        .order_by("-run__created_at", "-run_id")
        .first()
    )
    if result is None:
        return None
    return _measurement(task, result.run, result.details or {})


def measurement_of(*, task: Task, run: ValidationRun) -> Measurement | None:
    """The measurement ``run`` recorded (the one just made), or None if it recorded none."""
    result = run.results.filter(group="judge_recall").first()
    return _measurement(task, run, result.details or {}) if result else None


def _measurement(task: Task, run: ValidationRun, details: dict) -> Measurement:
    when = run.finished_at or run.created_at
    stale = []
    current = revision_current(task=task)
    if current is not None and current.pk != run.revision_id:
        stale.append(
            f"the task was edited since: measured on revision {run.revision.number}, "
            f"it is at revision {current.number} now"
        )
    labels = QuestionLabel.objects.filter(question__task=task, created_at__gt=when).count()
    if labels:
        stale.append(f"{labels} label{'s' if labels != 1 else ''} given since")
    added = ValidationQuestion.objects.filter(
        task=task, split=ValidationQuestion.Split.HELD_OUT, created_at__gt=when
    ).count()
    if added:
        stale.append(f"{added} held-out question{'s' if added != 1 else ''} added since")
    return Measurement(
        report=_report(details),
        run=run,
        measured_at=when,
        measured_by=run.created_by.username if run.created_by else "",
        judge_version=str(details.get("judge_version") or ""),
        revision_number=run.revision.number,
        stale=stale,
    )


# --- the Judge validation page's reads ----------------------------------------------------------


def question_labels(*, question: ValidationQuestion) -> list[QuestionLabel]:
    """``question``'s labels (those prefetched with it, when they were)."""
    return list(question.labels.all())


def task_questions(*, task: Task) -> QuerySet[ValidationQuestion]:
    """``task``'s validation questions, held-out and retired, with their labels and
    labellers."""
    return task.validation_questions.prefetch_related("labels__labeller")


def held_out_questions(*, task: Task) -> QuerySet[ValidationQuestion]:
    """``task``'s held-out questions, with their labels."""
    return task.validation_questions.filter(
        split=ValidationQuestion.Split.HELD_OUT
    ).prefetch_related("labels")


def held_out_styles(*, task: Task) -> QuerySet:
    """The style of each of ``task``'s held-out questions."""
    return task.validation_questions.filter(split=ValidationQuestion.Split.HELD_OUT).values_list(
        "style", flat=True
    )


def held_out_count(*, task: Task) -> int:
    """How many held-out questions ``task`` has."""
    return task.validation_questions.filter(split=ValidationQuestion.Split.HELD_OUT).count()


def question_with_labels(*, task: Task, question_id) -> ValidationQuestion:
    """``task``'s question ``question_id`` with its labels and labellers (``DoesNotExist``
    when it has none of that id)."""
    return task.validation_questions.prefetch_related("labels__labeller").get(pk=question_id)


def task_question(*, task: Task, question_id) -> ValidationQuestion | None:
    """``task``'s question ``question_id``, or None."""
    return task.validation_questions.filter(pk=question_id).first()


def blocker_keys(*, task: Task) -> list[str]:
    """The keys of ``task``'s blockers, in their order."""
    return list(task.blockers.values_list("key", flat=True))


def has_revision(*, task: Task) -> bool:
    """Whether ``task`` has a saved revision."""
    return task.revisions.exists()


def calibration_job_last(*, project) -> CalibrationJob | None:
    """The project's last calibration job with what it made (the judge report says how it
    ended)."""
    return CalibrationJob.objects.filter(project=project).select_related("calibration").first()
