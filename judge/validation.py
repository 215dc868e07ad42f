"""Judge validation on held-out, double-labelled questions, and the recall floor loop.

A task's judge recall is measured on its counted held-out validation questions: settled (two
labellers other than the writer agree, or a third adjudicates) and left in by the floor's
rules on writers and styles (``judge.floor``). Below the expansion threshold (80%) the
misses' wording is proposed as new trigger questions; accepting one adds it to the registry
and retires that question from the held-out split, so no question is both a trigger and a
test item. A task passes at the floor (85%) — and only when enough counted held-out
questions remain to measure it: ``JUDGE_MIN_HELD_OUT_PER_BLOCKER`` targeting each blocker
and ``JUDGE_MIN_HELD_OUT_PER_TASK`` in all, from two writers or more, in every style.
Retiring the misses therefore cannot lift a task over the floor by itself: fresh questions
must be written and labelled in their place. A held-out question too close to a trigger
question is refused when added, and one that a trigger question comes to match later (typed
into the registry editor, or an edited trigger) stops counting, by the same closeness:
otherwise copying the misses into the registry by hand would lift recall with every held-out
question still counted.
"""

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hilbench_annotate import services as core
from hilbench_annotate.access import require_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_claim, job_fail, job_finish, job_send
from hilbench_annotate.models import Blocker, Task, TriggerQuestion
from hilbench_annotate.question_rules import reject_reason
from hilbench_annotate.selectors import current_snapshots, revision_current
from hilbench_annotate.services.tasks import task_lock
from hilbench_annotate.vocabulary import Role

from . import floor
from .base import JudgeError
from .features import content_words
from .labels import SETTLED, gold_label
from .measures import Outcome, counts
from .models import CalibrationJob, JudgeCalibration, ValidationQuestion
from .probes import VAGUE_SETS
from .recall import RecallReport as RecallReport
from .recall import judge_recall as judge_recall
from .recall import judge_recall_many as judge_recall_many
from .services import (
    calibration_forget,
    get_judge,
    normalise,
    registry_from_snapshot,
    task_context,
)
from .thresholds import Scored, choose_threshold
from .training import GENERIC_TEST, GENERIC_TRAIN

# --- held-out questions ----------------------------------------------------------------------


def _normal_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def closest_trigger(text: str, triggers: list[str]) -> tuple[float, str]:
    """How close ``text`` is to the nearest trigger question (1.0: a copy), and that trigger:
    the larger of the texts' difflib ratio, 1.0 when one holds the other's words in order (a
    trigger with a phrase wrapped around it — "Could you clarify: <trigger>?" — is still a
    copy), and, when both have four content words or more, the share of the shorter one's
    content words the other has. Of the release's own example questions, 7.8% are this close
    (≥ 0.85) to a sibling of the same registry."""
    words = _normal_words(text)
    best = (0.0, "")
    for trigger in triggers:
        other = _normal_words(trigger)
        if not words or not other:
            continue
        ratio = difflib.SequenceMatcher(None, " ".join(words), " ".join(other)).ratio()
        mine, theirs = set(content_words(text)), set(content_words(trigger))
        shorter, longer = sorted((mine, theirs), key=len)
        containment = len(shorter & longer) / len(shorter) if len(shorter) >= 4 else 0.0
        joined, other_joined = " ".join(words), " ".join(other)
        wrapped = 1.0 if other_joined in joined or joined in other_joined else 0.0
        best = max(best, (round(max(ratio, containment, wrapped), 3), trigger))
    return best


def _triggers(task: Task) -> list[str]:
    return list(TriggerQuestion.objects.filter(blocker__task=task).values_list("text", flat=True))


@transaction.atomic
def question_add(
    *, task: Task, actor, text: str, source: str = "author", style: str = ""
) -> ValidationQuestion:
    """A held-out question in its writer's ``style`` (``ValidationQuestion.Style``; empty:
    not recorded); refused when it is (nearly) one of the task's trigger questions or a
    question already there. On the task's row lock: two people adding the same question at
    once add it once."""
    task_lock(task)
    if style and style not in ValidationQuestion.Style.values:
        raise DomainError(f"Unknown question style {style!r}.")
    text = " ".join(text.split())
    if len(text) < 8:
        raise DomainError("A validation question needs at least a short sentence.")
    similarity, trigger = closest_trigger(text, _triggers(task))
    if similarity >= settings.JUDGE_HELD_OUT_MAX_SIMILARITY:
        raise DomainError(
            f"Too close to the trigger question “{trigger}” (similarity {similarity:.2f}): a "
            "held-out question must be worded differently, or it measures the trigger, not "
            "the judge."
        )
    if any(
        normalise(t) == normalise(text)
        for t in task.validation_questions.values_list("text", flat=True)
    ):
        raise DomainError("This question is already among the task's validation questions.")
    return ValidationQuestion.objects.create(
        task=task, text=text, source=source, style=style, created_by=actor
    )


# --- recall and the floor loop (the recall itself: judge.recall) ------------------------------


def labelling_progress(task: Task) -> dict:
    """Held-out questions by state; per blocker how many counted ones target it (settled,
    and left in by the floor's rules: ``judge.floor``); the counted ones per style; what
    the floor still lacks; and why each question left out is not counted."""
    return labelling_progress_many([task])[task.pk]


def labelling_progress_many(tasks: list[Task]) -> dict[int, dict]:
    """``labelling_progress`` of many tasks in five queries (an export's gate asks it of
    every task of a chunk)."""
    questions: dict[int, list] = {task.pk: [] for task in tasks}
    for question in ValidationQuestion.objects.filter(
        task__in=list(questions), split=ValidationQuestion.Split.HELD_OUT
    ).prefetch_related("labels"):
        questions[question.task_id].append(question)
    keys: dict[int, list[str]] = {task.pk: [] for task in tasks}
    for task_id, key in Blocker.objects.filter(task__in=list(keys)).values_list("task_id", "key"):
        keys[task_id].append(key)
    editors = floor.task_editors_many(tasks)
    return {
        task.pk: _progress(questions[task.pk], keys[task.pk], editors[task.pk]) for task in tasks
    }


def _progress(questions: list, keys: list[str], editors: dict[int, str]) -> dict:
    rows = floor.standings(questions, editors)
    states = Counter(row.state for row in rows)
    counted = [row for row in rows if row.counted]
    per_blocker = Counter(row.gold for row in counted if row.gold is not None)
    styles = Counter(row.question.style for row in counted if row.gold is not None)
    writers = {row.question.created_by_id for row in counted}
    needed = settings.JUDGE_MIN_HELD_OUT_PER_BLOCKER
    return {
        "states": dict(states),
        "settled": len(counted),
        "open": states["unlabelled"] + states["single"] + states["disputed"],
        "blockers": [
            {
                "key": k,
                "settled": per_blocker[k],
                "needed": needed,
                "done": per_blocker[k] >= needed,
            }
            for k in keys
        ],
        "styles": [{"name": style.label, "counted": styles[style]} for style in floor.STYLES],
        "writers": len(writers),
        "task_needed": settings.JUDGE_MIN_HELD_OUT_PER_TASK,
        "shortfall": floor.floor_shortfall(
            keys, dict(per_blocker), len(counted), writers, set(styles)
        ),
        "not_counted": {row.question.pk: row.why for row in rows if row.why},
        "excluded": sum(1 for row in rows if row.why and row.state in SETTLED),
    }


def expansion_suggestions(report: RecallReport) -> list[dict]:
    """New trigger questions proposed from the misses' wording, one per missed question."""
    suggestions = []
    for miss in report.misses:
        text = miss["text"].strip()
        if not text.endswith("?"):
            text = text.rstrip(".") + "?"
        suggestions.append({"question": miss["question"], "blocker": miss["gold"], "text": text})
    return suggestions


@transaction.atomic
def suggestions_accept(*, task: Task, actor, accepted: list[dict]) -> Task:
    """Add the accepted (possibly edited) suggestions as trigger questions, in one revision per
    question, and retire their source questions from the held-out split. On the task's row
    lock."""
    task_lock(task)
    for suggestion in accepted:
        question = ValidationQuestion.objects.get(pk=suggestion["question"], task=task)
        if question.split != ValidationQuestion.Split.HELD_OUT:
            raise DomainError(f"Question {question.pk} is no longer held out.")
        blocker = Blocker.objects.get(task=task, key=suggestion["blocker"])
        blocker.task = task  # the service bumps this object's version
        core.trigger_question_create(
            blocker=blocker, actor=actor, expected_version=task.version, text=suggestion["text"]
        )
        question.split = ValidationQuestion.Split.RETIRED
        question.retired_at = timezone.now()
        question.save(update_fields=["split", "retired_at"])
    return task


# Fewer settled positives than this in a domain: the shipped threshold is kept for it.
CALIBRATION_MIN_POSITIVES = 20
# A domain calibrated needs settled negatives too, at least this many and half its
# positives: thresholds chosen on positives alone answer everything.
CALIBRATION_MIN_NEGATIVES = 20
# Tasks per domain the fixed negatives are asked against.
CALIBRATION_PROBE_TASKS = 10
# Tasks read at a time while looking for them.
CALIBRATION_PROBE_CHUNK = 200


def _calibration_scores(project, base) -> list[Scored]:
    """The shipped judge's best logit for each settled held-out question of the project
    written by someone other than its task's author. Reads the tasks that have held-out
    questions only, in a fixed number of queries whatever the project's size."""
    scored: list[Scored] = []
    tasks = list(
        Task.objects.filter(
            project=project,
            pk__in=ValidationQuestion.objects.filter(
                split=ValidationQuestion.Split.HELD_OUT
            ).values("task_id"),
        ).prefetch_related("validation_questions__labels")
    )
    snapshots = current_snapshots(task_ids=[task.pk for task in tasks])
    editors = floor.task_editors_many(tasks)
    for task in tasks:
        snapshot = snapshots.get(task.pk)
        registry = registry_from_snapshot(snapshot) if snapshot else []
        if not registry:
            continue
        context = task_context(snapshot)
        for question in task.validation_questions.all():
            if question.split != ValidationQuestion.Split.HELD_OUT:
                continue
            state, gold = gold_label(question)
            if state not in SETTLED or floor.writer_refusal(question, editors[task.pk])[1]:
                continue
            if reject_reason(question.text) is not None:
                scored.append(Scored(task.domain, gold, None, float("-inf")))
                continue
            scores = base.scores(question.text, registry, domain=task.domain, context=context)
            best = max(scores, key=lambda key: (scores[key], key))
            scored.append(Scored(task.domain, gold, best, scores[best]))
    return scored


def _probe_registries(project, domain: str) -> list:
    """The (registry, task text) of the first ``CALIBRATION_PROBE_TASKS`` of the project's
    tasks of ``domain`` (in the tasks' order) that have blockers in their current revision:
    read a chunk of tasks at a time, stopping once there are enough."""
    registries: list = []
    tasks = Task.objects.filter(project=project, domain=domain).values_list("pk", flat=True)
    start = 0
    while len(registries) < CALIBRATION_PROBE_TASKS:
        ids = list(tasks[start : start + CALIBRATION_PROBE_CHUNK])
        if not ids:
            break
        start += len(ids)
        snapshots = current_snapshots(task_ids=ids)
        for task_id in ids:
            snapshot = snapshots.get(task_id)
            registry = registry_from_snapshot(snapshot) if snapshot else []
            if registry:
                registries.append((registry, task_context(snapshot)))
    return registries[:CALIBRATION_PROBE_TASKS]


@dataclass
class _FixedNegatives:
    """``FIXED_NEGATIVES`` the rules let through, encoded once for every probe task of every
    domain of a calibration (they were encoded again per task: 12.7 of its 14 s)."""

    base: Any  # the shipped embedded judge

    @cached_property
    def questions(self) -> list[str]:
        return [q for q in FIXED_NEGATIVES if reject_reason(q) is None]

    @cached_property
    def vectors(self):
        # The same texts for every calibration of every project: kept in the embedding store
        # (encoding them was 1.1 of a 1.2 s calibration of a 100,000-task project).
        return self.base.encode_questions(self.questions, stored=True)


def _fixed_negative_floor(
    fixed: _FixedNegatives, domain: str, registries: list, shipped: float
) -> float | None:
    """The highest logit below ``shipped`` that a fixed generic or off-task negative
    (``FIXED_NEGATIVES``) reaches on the domain's tasks: a calibrated threshold stays above it,
    so it answers none of them the shipped judge does not."""
    below = [
        logit
        for registry, context in registries[:CALIBRATION_PROBE_TASKS]
        for scores in fixed.base.scores_many(
            fixed.questions, registry, domain=domain, context=context, vectors=fixed.vectors
        )
        for logit in [max(scores.values())]
        if logit < shipped
    ]
    return max(below) if below else None


def judge_calibrate(*, project, actor, min_precision: float = 0.97):
    """Choose the embedded judge's threshold per domain on the project's settled held-out
    questions by others than their task's author (the lowest logit at which precision
    reaches ``min_precision``) and store them as a new judge version for the project.

    A domain with fewer than ``CALIBRATION_MIN_POSITIVES`` settled positives keeps the
    shipped threshold; one calibrated needs ``CALIBRATION_MIN_NEGATIVES`` settled negatives
    (and half as many as its positives), or the calibration is refused. A calibrated
    threshold never answers a fixed generic or off-task negative the shipped judge does not
    (``_fixed_negative_floor``)."""
    base = get_judge("embedded")  # the shipped judge, without any project's thresholds
    scored = _calibration_scores(project, base)
    if not any(s.label is not None for s in scored):
        raise DomainError("No settled held-out question targets a blocker yet: label some first.")
    thresholds = dict(base.thresholds)
    fixed = _FixedNegatives(base)
    for domain in thresholds:
        mine = [s for s in scored if s.domain == domain]
        positives = sum(s.label is not None for s in mine)
        if positives < CALIBRATION_MIN_POSITIVES:
            continue
        negatives = len(mine) - positives
        needed = max(CALIBRATION_MIN_NEGATIVES, (positives + 1) // 2)
        if negatives < needed:
            raise DomainError(
                f"Calibrating {domain.upper()} needs at least {needed} settled negative "
                f"held-out questions (off-task or adjacent ones labelled “none”); it has "
                f"{negatives} beside {positives} positives. Without them every threshold "
                "looks precise."
            )
        chosen = choose_threshold(mine, min_precision)
        floor_logit = _fixed_negative_floor(
            fixed, domain, _probe_registries(project, domain), thresholds[domain]
        )
        if floor_logit is not None:
            chosen = max(chosen, floor_logit + 1e-6)
        thresholds[domain] = chosen
    outcomes = [
        Outcome(
            s.domain,
            "",
            s.label,
            s.best if s.best is not None and s.logit >= thresholds[s.domain] else None,
        )
        for s in scored
    ]
    figures = counts(outcomes)["all"]
    number = JudgeCalibration.objects.filter(project=project).count() + 1
    transaction.on_commit(lambda: calibration_forget(project.pk))
    calibration_forget(project.pk)
    return JudgeCalibration.objects.create(
        project=project,
        version=f"{base.version}/p{project.pk}-cal{number}",
        thresholds=thresholds,
        precision=figures["precision"] if figures["predicted"] else None,
        recall=figures["recall"],
        questions=len(scored),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )


def judge_calibrate_start(*, project, actor) -> CalibrationJob:
    """Queue a calibration of the project's judge (leads); a worker runs it
    (``judge_calibrate_execute``) and the judge report shows how it ended. While one is
    queued or running, asking again gives that one."""
    require_role(actor, project, Role.LEAD, action="calibrate the judge")
    with transaction.atomic():
        waiting = (
            CalibrationJob.objects.select_for_update()
            .filter(
                project=project,
                status__in=(CalibrationJob.Status.QUEUED, CalibrationJob.Status.RUNNING),
            )
            .first()
        )
        if waiting is not None:
            return waiting
        job = CalibrationJob.objects.create(project=project, created_by=actor)
        job_send(job)
    return job


def judge_calibrate_execute(*, job_id: int) -> None:
    """Claim the calibration job and run it: its calibration, or why there is none (too few
    settled questions, the judge not loaded) as its error."""
    if not job_claim(CalibrationJob, job_id):
        return
    job = CalibrationJob.objects.select_related("project", "created_by").get(pk=job_id)
    try:
        with transaction.atomic():
            calibration = judge_calibrate(project=job.project, actor=job.created_by)
    except (DomainError, JudgeError) as exc:
        job_fail(CalibrationJob, job_id, str(exc))
        return
    job_finish(CalibrationJob, job_id, calibration=calibration)


# Off-task and broad questions: a judge must answer them "irrelevant question".
NEGATIVES = (
    "What is the capital of France?",
    "Can you explain how SQL joins work in general?",
    "What programming language should I use for this?",
    "How long should this task take me?",
    "Is there anything else I should know?",
    "Who wrote this task?",
)
# What a calibration is checked against: these, the generic questions the judge is trained
# and measured with, and the vague ones (judge.probes).
FIXED_NEGATIVES = tuple(
    dict.fromkeys(
        [*NEGATIVES, *GENERIC_TRAIN, *GENERIC_TEST, *(q for qs in VAGUE_SETS.values() for q in qs)]
    )
)


@dataclass
class Candidates:
    added: int = 0
    rejected: list[str] = field(default_factory=list)  # why each refused candidate was refused
    error: str = ""  # the LLM endpoint's failure


def candidates_generate(*, task: Task, actor) -> Candidates:
    """Add candidate held-out questions: with an LLM endpoint configured, fluent paraphrases
    of each blocker's gap (written from its description and trigger questions, never its
    resolution), and a few off-task or broad negatives. A candidate too close to a trigger
    question, or to a question already there, is refused (``question_add``) and listed. The
    endpoint is called before any row is written, so no transaction waits on it. Without an
    endpoint only the negatives are added: positives are then written by people."""
    snapshot = revision_current(task=task).snapshot
    proposed = [("template", text) for text in NEGATIVES]
    result = Candidates()
    if settings.JUDGE_LLM_BASE_URL:
        try:
            llm = get_judge("llm")
            for blocker in registry_from_snapshot(snapshot):
                proposed += [("llm", text) for text in llm.paraphrases(blocker)]
        except JudgeError as exc:
            result.error = str(exc)
    with transaction.atomic():
        existing = {normalise(t) for t in task.validation_questions.values_list("text", flat=True)}
        for source, text in proposed:
            if normalise(text) in existing:
                continue
            try:
                question_add(task=task, actor=actor, text=text, source=source)
            except DomainError as exc:
                result.rejected.append(f"“{text}”: {exc}")
                continue
            existing.add(normalise(text))
            result.added += 1
    return result
