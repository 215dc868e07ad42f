"""The project's judge report: precision and recall on counted held-out questions (settled,
and left in by the floor's rules: ``judge.floor``), overall, per domain and per blocker type,
against the paper's figures; recall per question style; the spread of per-task recall, with
each task's questions not counted and why; and labeller agreement (Cohen's kappa per pair).

Per-task numbers come from ``judge_recall_many`` (verdicts kept in the DB, as ``judge_cached``
keeps them), a chunk of measured tasks at a time: the report reads a fixed number of queries
per ``RECALL_CHUNK`` measured tasks, whatever the project's size (issue 46).
"""

from dataclasses import dataclass, field

from django.conf import settings

from hilbench_annotate.models import Blocker, Project, Task

from .base import JudgeError
from .floor import STYLES, style_name
from .labels import SETTLED, gold_label, labeller_agreement
from .models import ValidationQuestion
from .recall import RECALL_CHUNK, judge_recall_many

PAPER_PRECISION = 0.97
PAPER_RECALL = 0.91
BUCKETS = (
    ("0–50%", 0.0, 0.50),
    ("50–80%", 0.50, 0.80),
    ("80–85%", 0.80, 0.85),
    ("85–95%", 0.85, 0.95),
    ("95–100%", 0.95, 1.0001),
)


@dataclass
class Tally:
    """Counts for precision (correct / matches) and recall (correct / positives)."""

    positives: int = 0
    matches: int = 0
    correct: int = 0

    @property
    def precision(self) -> float | None:
        return self.correct / self.matches if self.matches else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.positives if self.positives else None

    def add(self, other: "Tally") -> None:
        self.positives += other.positives
        self.matches += other.matches
        self.correct += other.correct


@dataclass
class TaskRow:
    task: object
    report: object = None  # RecallReport
    error: str = ""

    @property
    def recall(self) -> float | None:
        return self.report.recall if self.report else None


@dataclass
class ProjectJudgeReport:
    judge_version: str
    judge_long_version: str = ""  # the ensemble's in full, when the stored one is shortened
    overall: Tally = field(default_factory=Tally)
    by_domain: dict[str, Tally] = field(default_factory=dict)
    by_type: dict[str, Tally] = field(default_factory=dict)
    by_style: dict[str, Tally] = field(default_factory=dict)  # recall only: no matches
    tasks: list[TaskRow] = field(default_factory=list)
    histogram: list[dict] = field(default_factory=list)
    no_recall: int = 0  # tasks with no settled positive question
    agreement: list[dict] = field(default_factory=list)
    paper_precision: float = PAPER_PRECISION
    paper_recall: float = PAPER_RECALL
    floor: float = field(default_factory=lambda: settings.JUDGE_RECALL_FLOOR)

    @property
    def rows(self) -> list[tuple[str, Tally]]:
        """(group name, tally): all tasks, then per domain, then per blocker type."""
        return (
            [("All tasks", self.overall)]
            + [(f"Domain: {name}", t) for name, t in sorted(self.by_domain.items())]
            + [(f"Blocker type: {name}", t) for name, t in sorted(self.by_type.items())]
        )

    @property
    def styles(self) -> list[dict]:
        """Recall per style of the counted positives, every style named."""
        return [
            {"name": style_name(style), "tally": tally}
            for style in [*STYLES, ""]
            for tally in [self.by_style.get(style, Tally())]
            if style or tally.positives
        ]

    @property
    def chart_height(self) -> int:
        return 22 * len(self.histogram)


def _bucket(recall: float) -> int:
    for index, (_, low, high) in enumerate(BUCKETS):
        if low <= recall < high:
            return index
    return len(BUCKETS) - 1


def _task_tallies(report, types: dict[str, str]) -> dict[str, Tally]:
    """Per blocker type, from the task's counted questions: positives by gold (a compromised
    one is a miss), correct ones, and matches = correct + false matches by predicted type."""
    tallies: dict[str, Tally] = {}

    def tally(key):
        return tallies.setdefault(types.get(key, "unknown"), Tally())

    for key, counted in report.per_blocker.items():
        tally(key).positives += counted["held_out"]
        tally(key).correct += counted["correct"]
        tally(key).matches += counted["correct"]
    for item in report.compromised:
        if item["gold"] is not None:
            tally(item["gold"]).positives += 1
    for item in report.false_matches:
        tally(item["predicted"]).matches += 1
    return tallies


def _add_task(result: ProjectJudgeReport, task, report, types: dict[str, str]) -> None:
    task_tally = Tally(report.positives, report.matches, report.correct)
    result.overall.add(task_tally)
    result.by_domain.setdefault(task.get_domain_display(), Tally()).add(task_tally)
    for blocker_type, tally in _task_tallies(report, types).items():
        result.by_type.setdefault(blocker_type, Tally()).add(tally)
    for style, counted in report.per_style.items():
        result.by_style.setdefault(style, Tally()).add(
            Tally(counted["positives"], counted["correct"], counted["correct"])
        )


def _measured_tasks(project: Project):
    """The project's tasks with a settled held-out question and a revision, in id order, a
    chunk of ``RECALL_CHUNK`` at a time: the project's held-out questions read once, then
    their tasks a chunk at a time. A project of 100,000 tasks and a handful of questions
    walks the handful, not every task with two queries each."""
    held_out = ValidationQuestion.objects.filter(
        task__project=project, split=ValidationQuestion.Split.HELD_OUT
    ).prefetch_related("labels")
    settled = sorted({q.task_id for q in held_out if gold_label(q)[0] in SETTLED})
    for start in range(0, len(settled), RECALL_CHUNK):
        chunk = settled[start : start + RECALL_CHUNK]
        yield list(
            project.tasks.filter(id__in=chunk, revisions__isnull=False).distinct().order_by("id")
        )


def _blocker_types(tasks: list[Task]) -> dict[int, dict[str, str]]:
    """Per task, its blockers' types by key: one query for any number of tasks."""
    types: dict[int, dict[str, str]] = {task.pk: {} for task in tasks}
    for task_id, key, kind in Blocker.objects.filter(task__in=tasks).values_list(
        "task_id", "key", "type"
    ):
        types[task_id][key] = kind
    return types


def _histogram(counts: list[int]) -> list[dict]:
    peak = max(counts) if any(counts) else 1
    return [
        {
            "label": label,
            "tasks": n,
            "y": 22 * index,
            "width": round(200 * n / peak),
            "below_floor": high <= settings.JUDGE_RECALL_FLOOR,
        }
        for index, ((label, _, high), n) in enumerate(zip(BUCKETS, counts, strict=True))
    ]


def project_judge_report(*, project: Project, judge) -> ProjectJudgeReport:
    result = ProjectJudgeReport(judge_version=judge.version, judge_long_version=judge.long_version)
    counts = [0] * len(BUCKETS)
    for tasks in _measured_tasks(project):
        measured = judge_recall_many(tasks=tasks, judge=judge)
        types = _blocker_types(tasks)
        for task in tasks:
            row = TaskRow(task=task)
            result.tasks.append(row)
            if isinstance(measured[task.pk], JudgeError):
                row.error = str(measured[task.pk])
                continue
            report = row.report = measured[task.pk]
            _add_task(result, task, report, types[task.pk])
            if report.recall is None:
                result.no_recall += 1
            else:
                counts[_bucket(report.recall)] += 1
    result.histogram = _histogram(counts)
    questions = ValidationQuestion.objects.filter(task__project=project).prefetch_related(
        "labels__labeller"
    )
    result.agreement = labeller_agreement(questions)
    return result
