"""The judge's gate and check group: the judge's recall on the task's held-out questions.

The recall is measured by a validation run (a worker loads the judge, not the web request);
the gate reads that run's result on the current revision. Registered in ``JudgeConfig.ready``.
"""

from pathlib import Path

from django.conf import settings

from hilbench_annotate.gates import register_gate
from validators.registry import register_group
from validators.results import FAILED, PASSED, CheckResult
from validators.services import gate_for

from .services import get_judge
from .validation import judge_recall


def _judge_recall(task, snapshot, workdir: Path):
    report = judge_recall(task=task, judge=get_judge(project=task.project))
    details = {
        "precision": report.precision,
        "recall": report.recall,
        "positives": report.positives,
        "misses": report.misses,
        "false_matches": report.false_matches,
        "unsettled": report.unsettled,
        "needs_expansion": report.needs_expansion,
    }
    if report.recall is None:
        return [
            CheckResult(
                "judge_recall",
                FAILED,
                "No settled held-out question targets a blocker: label some first.",
                details,
            )
        ]
    summary = (
        f"Judge recall {report.recall:.0%} on {report.positives} held-out questions "
        f"(precision {report.precision:.0%})"
        if report.precision is not None
        else f"Judge recall {report.recall:.0%} on {report.positives} held-out questions"
    )
    if report.passes:
        return [CheckResult("judge_recall", PASSED, summary + ".", details)]
    advice = (
        " Below 80%: accept trigger-phrase suggestions from the misses and re-validate."
        if report.needs_expansion
        else ""
    )
    return [
        CheckResult(
            "judge_recall",
            FAILED,
            f"{summary}; the floor is {settings.JUDGE_RECALL_FLOOR:.0%}.{advice}",
            details,
        )
    ]


def register() -> None:
    register_group("judge_recall", _judge_recall, structural=False)
    register_gate(
        "judge_recall",
        gate_for("judge_recall"),
        description=f"the judge's recall on held-out questions is at least the floor "
        f"({settings.JUDGE_RECALL_FLOOR:.0%})",
    )
