"""A task's judge recall on its counted held-out questions, and many tasks' at once.

``judge_recall`` measures one task; ``judge_recall_many`` measures many in a fixed number of
queries per ``RECALL_CHUNK`` tasks, however many questions, revisions and verdicts they have
(issue 46: the judge report read several queries per measured task, ~210 on the benchmark's
project). ``judge_recall`` is ``judge_recall_many`` of one task, so the two cannot differ.
Which questions count and how is ``judge.floor``'s; the verdicts are kept in the database
(``services.Verdicts``, as ``judge_cached`` keeps them).
"""

from dataclasses import dataclass, field

from django.conf import settings

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Blocker, Revision, Task

from . import floor
from .base import JudgeError
from .labels import SETTLED
from .models import ValidationQuestion
from .services import Verdicts, registry_from_snapshot, registry_hash, task_context

# Tasks read at a time: six queries each chunk, and one for the kept verdicts (one more per
# Verdicts.PREFETCH_PARAMS registries and questions), whatever the tasks hold.
RECALL_CHUNK = 500


@dataclass
class RecallReport:
    precision: float | None
    recall: float | None
    positives: int
    matches: int
    correct: int
    misses: list[dict] = field(default_factory=list)  # {question, text, gold, predicted}
    false_matches: list[dict] = field(default_factory=list)
    unsettled: int = 0
    settled: int = 0
    per_blocker: dict[str, dict] = field(default_factory=dict)  # key -> {held_out, correct}
    shortfall: list[str] = field(default_factory=list)  # why there are too few questions
    # Compromised questions no fresh one replaces yet: counted as misses (judge.floor).
    compromised: list[dict] = field(default_factory=list)  # {question, text, compromised, …}
    # Questions the floor's rules leave out, each with why (judge.floor.Standing.item).
    excluded: list[dict] = field(default_factory=list)  # {question, text, rule, why}
    per_style: dict[str, dict] = field(default_factory=dict)  # style -> {positives, correct}
    writers: int = 0  # people whose questions count

    @property
    def passes(self) -> bool:
        return (
            self.recall is not None
            and self.recall >= settings.JUDGE_RECALL_FLOOR
            and not self.shortfall
        )

    @property
    def floor_note(self) -> str:
        """What the recall leaves out or counts against the task, in words."""
        notes = []
        if self.compromised:
            n = len(self.compromised)
            notes.append(
                f"{n} held-out question{'s' if n != 1 else ''} "
                f"{'were' if n != 1 else 'was'} retired or copied into the registry and "
                f"count{'' if n != 1 else 's'} as {'misses' if n != 1 else 'a miss'} until "
                f"fresh questions by others replace {'them' if n != 1 else 'it'}."
            )
        excluded = floor.not_counted_note(self.excluded)
        if excluded:
            notes.append(excluded)
        return " ".join(notes)

    @property
    def styles(self) -> list[dict]:
        """Recall per style of the counted positives, every style named (the page's rows)."""
        return [
            {"style": style, "name": floor.style_name(style), **tally, "recall": recall}
            for style in [*floor.STYLES, ""]
            for tally in [self.per_style.get(style, {"positives": 0, "correct": 0})]
            for recall in [tally["correct"] / tally["positives"] if tally["positives"] else None]
            if style or tally["positives"]
        ]

    @property
    def below_floor(self) -> bool:
        return self.recall is not None and self.recall < settings.JUDGE_RECALL_FLOOR

    @property
    def needs_expansion(self) -> bool:
        return self.recall is not None and self.recall < settings.JUDGE_RECALL_EXPANSION_BELOW


@dataclass
class _Measuring:
    """What measuring one task reads, read for many tasks at once (``_read``)."""

    task: Task
    snapshot: dict  # the measured revision's
    rows: list[floor.Standing]  # its validation questions, as the floor's rules stand them
    keys: list[str]  # its blockers' keys, in their order
    history: floor.RegistryHistory
    current: tuple = field(init=False)  # (registry, task text, their hash) of ``snapshot``

    def __post_init__(self):
        registry, context = registry_from_snapshot(self.snapshot), task_context(self.snapshot)
        self.current = (registry, context, registry_hash(registry, context))

    @property
    def judged(self) -> list[floor.Standing]:
        """The held-out questions the judge is asked (settled and counted); retired ones are
        misses whatever it says."""
        return [
            row
            for row in self.rows
            if row.counted and row.question.split == ValidationQuestion.Split.HELD_OUT
        ]

    def asks(self):
        """Every (registry hash, question) the measuring may ask: the measured registry's
        and, for the history's check of a match (``floor.compromise``), each revision's."""
        digests = [self.current[2], *(self.history.inputs(r)[2] for r in self.history.revisions)]
        for row in self.judged:
            for digest in dict.fromkeys(digests):
                yield digest, row.question.text


def _read(tasks: list[Task], judge, snapshots: dict, verdicts: Verdicts) -> list[_Measuring]:
    """Six queries for any number of tasks: their revisions, validation questions and
    labels, editors (two) and blocker keys."""
    ids = [task.pk for task in tasks]
    revisions: dict[int, list[Revision]] = {pk: [] for pk in ids}
    for revision in (
        Revision.objects.filter(task_id__in=ids)
        .order_by("task_id", "number")
        .only("task_id", "number", "created_at", "snapshot")
    ):
        revisions[revision.task_id].append(revision)
    questions: dict[int, list[ValidationQuestion]] = {pk: [] for pk in ids}
    for question in ValidationQuestion.objects.filter(task_id__in=ids).prefetch_related("labels"):
        questions[question.task_id].append(question)
    keys: dict[int, list[str]] = {pk: [] for pk in ids}
    for task_id, key in Blocker.objects.filter(task_id__in=ids).values_list("task_id", "key"):
        keys[task_id].append(key)
    editors = floor.task_editors_many(tasks)
    out = []
    for task in tasks:
        snapshot = snapshots.get(task.pk)
        if snapshot is None:
            if not revisions[task.pk]:
                raise DomainError(f"Task {task.pk} has no revision to measure.")
            snapshot = revisions[task.pk][-1].snapshot
        history = floor.RegistryHistory(
            task,
            judge,
            upto_version=snapshot.get("version"),
            revisions=revisions[task.pk],
            verdicts=verdicts,
        )
        rows = floor.standings(questions[task.pk], editors[task.pk])
        out.append(_Measuring(task, snapshot, rows, keys[task.pk], history))
    return out


def judge_recall_many(
    *, tasks: list[Task], judge, snapshots: dict[int, dict] | None = None
) -> dict[int, RecallReport | JudgeError]:
    """``judge_recall`` of each of ``tasks`` (each with a revision, or a snapshot in
    ``snapshots`` by task id), by task id: its report, or the ``JudgeError`` that stopped its
    measuring. Reads ``RECALL_CHUNK`` tasks at a time, in a fixed number of queries each
    (``_read``, ``Verdicts.prefetch``); the verdicts the judge had not given yet are judged
    here and kept in one insert a chunk."""
    out: dict[int, RecallReport | JudgeError] = {}
    for start in range(0, len(tasks), RECALL_CHUNK):
        verdicts = Verdicts(judge)
        chunk = _read(tasks[start : start + RECALL_CHUNK], judge, snapshots or {}, verdicts)
        verdicts.prefetch(ask for measuring in chunk for ask in measuring.asks())
        # Every question not judged yet is asked of its task's measured registry: their
        # indexes built at once (the history's, asked only until one matches, as asked).
        verdicts.prepare({m.current[2]: (m.current[0], m.task.domain, m.current[1]) for m in chunk})
        try:
            for measuring in chunk:
                try:
                    out[measuring.task.pk] = _measure(measuring, verdicts)
                except JudgeError as exc:
                    out[measuring.task.pk] = exc
        finally:
            verdicts.keep()
    return out


def judge_recall(*, task: Task, judge, snapshot: dict | None = None) -> RecallReport:
    """The judge's precision and recall on the task's counted held-out questions (settled,
    and left in by the floor's rules: ``judge.floor``), per blocker and per style too, and
    what is missing for the measurement to count. Retired questions and questions matched
    only through registry text added after them count as misses until fresh ones replace
    them. Against ``snapshot`` (a validation run's revision; by default the current
    revision's) and the revisions up to it."""
    snapshots = {} if snapshot is None else {task.pk: snapshot}
    measured = judge_recall_many(tasks=[task], judge=judge, snapshots=snapshots)[task.pk]
    if isinstance(measured, JudgeError):
        raise measured
    return measured


def _measure(measuring: _Measuring, verdicts: Verdicts) -> RecallReport:
    registry, context, digest = measuring.current
    judged: list[floor.Judged] = []
    excluded: list[dict] = []
    unsettled = 0
    for row in measuring.rows:
        held_out = row.question.split == ValidationQuestion.Split.HELD_OUT
        if row.state not in SETTLED:
            unsettled += held_out
            if held_out and row.rule == "writer_label":
                excluded.append(row.item())
            continue
        if row.why:
            excluded.append(row.item())
            continue
        predicted = None
        if held_out:
            predicted = verdicts.get(
                registry=registry,
                question=row.question.text,
                domain=measuring.task.domain,
                context=context,
                digest=digest,
            ).blocker_id
        judged.append(floor.Judged(row.question, row.gold, predicted))
    floor.compromise(judged, measuring.history)
    counted, open_misses = floor.replace(judged)
    return _report(measuring.keys, counted, open_misses, unsettled=unsettled, excluded=excluded)


def _report(
    keys: list[str], counted, open_misses, *, unsettled: int, excluded: list
) -> RecallReport:
    positives = matches = correct = 0
    misses, false_matches = [], []
    per_blocker: dict[str, dict] = {}
    per_style: dict[str, dict] = {}
    for item in counted:
        # A compromised question is a miss, whatever the judge says of it now.
        predicted = None if item.compromised else item.predicted
        positives += item.gold is not None
        matches += predicted is not None
        if item.gold is not None and not item.compromised:
            tally = per_blocker.setdefault(item.gold, {"held_out": 0, "correct": 0})
            tally["held_out"] += 1
            tally["correct"] += predicted == item.gold
            style = per_style.setdefault(item.question.style, {"positives": 0, "correct": 0})
            style["positives"] += 1
            style["correct"] += predicted == item.gold
        if predicted is not None and predicted == item.gold:
            correct += 1
        elif predicted is not None:
            false_matches.append(item.item())
        if item.gold is not None and predicted != item.gold:
            misses.append(item.item())
    honest = sum(1 for item in counted if not item.compromised)
    writers = {item.question.created_by_id for item in counted}
    counts_per_blocker = {key: tally["held_out"] for key, tally in per_blocker.items()}
    return RecallReport(
        precision=correct / matches if matches else None,
        recall=correct / positives if positives else None,
        positives=positives,
        matches=matches,
        correct=correct,
        misses=misses,
        false_matches=false_matches,
        unsettled=unsettled,
        settled=honest,
        per_blocker=per_blocker,
        shortfall=floor.floor_shortfall(keys, counts_per_blocker, honest, writers, set(per_style)),
        compromised=[item.item() for item in open_misses],
        excluded=excluded,
        per_style=per_style,
        writers=len(writers),
    )
