"""The judge's gates and check group.

``judge_recall``: the judge's recall on the task's held-out questions, at least the floor
and on enough of them. It is measured by a validation run (a worker loads the judge, not
the web request); the gate reads that run's result on the current revision.
``judge_labelling``: every held-out question has its gold label settled, and there are
enough of them (the judge-validation layer's gate). Registered in ``JudgeConfig.ready``.
"""

from pathlib import Path

from django.conf import settings

from hilbench_annotate.gates import register_gate
from validators.registry import register_group
from validators.results import FAILED, PASSED, CheckResult
from validators.services import gate_many_for

from .services import get_judge
from .validation import judge_recall, labelling_progress, labelling_progress_many


def _judge_recall(task, snapshot, workdir: Path):
    report = judge_recall(task=task, judge=get_judge(project=task.project), snapshot=snapshot)
    details = {
        "precision": report.precision,
        "recall": report.recall,
        "positives": report.positives,
        "misses": report.misses,
        "false_matches": report.false_matches,
        "unsettled": report.unsettled,
        "needs_expansion": report.needs_expansion,
        "per_blocker": report.per_blocker,
        "shortfall": report.shortfall,
        "compromised": report.compromised,
        "authored": report.authored,
    }
    # Questions counted as misses until replaced, or not counted at all: in every message.
    note = report.floor_note
    spaced = " " + note if note else ""
    if report.recall is None:
        return [
            CheckResult(
                "judge_recall",
                FAILED,
                "No settled held-out question targets a blocker: label some first." + spaced,
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
        return [CheckResult("judge_recall", PASSED, summary + "." + spaced, details)]
    if report.shortfall and report.recall >= settings.JUDGE_RECALL_FLOOR:
        return [
            CheckResult(
                "judge_recall",
                FAILED,
                f"{summary}, but on too few questions to count — "
                + "; ".join(report.shortfall)
                + ". "
                + (
                    note
                    or "Held-out questions must be written and labelled by others than the "
                    "task's author: add and label fresh ones."
                ),
                details,
            )
        ]
    advice = (
        " Below 80%: accept trigger-phrase suggestions from the misses and re-validate."
        if report.needs_expansion
        else ""
    )
    return [
        CheckResult(
            "judge_recall",
            FAILED,
            f"{summary}; the floor is {settings.JUDGE_RECALL_FLOOR:.0%}.{advice}"
            + (
                " Too few questions, too: " + "; ".join(report.shortfall) + "."
                if report.shortfall
                else ""
            )
            + spaced,
            details,
        )
    ]


def labelling_gate(task) -> tuple[bool, str]:
    return _labelling_verdict(labelling_progress(task))


def labelling_gate_many(tasks) -> dict[int, tuple[bool, str]]:
    progress = labelling_progress_many(tasks)
    return {task.pk: _labelling_verdict(progress[task.pk]) for task in tasks}


def _labelling_verdict(progress: dict) -> tuple[bool, str]:
    if progress["open"]:
        return False, (
            f"{progress['open']} held-out question(s) still need their labels "
            f"({progress['settled']} settled)."
        )
    if progress["shortfall"]:
        return False, "Too few settled held-out questions: " + "; ".join(progress["shortfall"])
    return True, f"All {progress['settled']} held-out questions are labelled and settled."


def register() -> None:
    register_gate(
        "judge_labelling",
        labelling_gate,
        check_many=labelling_gate_many,
        description="every held-out question is labelled by two people (a third settles "
        f"disagreements), at least {settings.JUDGE_MIN_HELD_OUT_PER_BLOCKER} per blocker",
    )
    register_group("judge_recall", _judge_recall, structural=False)
    register_gate(
        "judge_recall",
        description=f"the judge's recall on held-out questions is at least the floor "
        f"({settings.JUDGE_RECALL_FLOOR:.0%})",
        check_many=gate_many_for("judge_recall"),
    )
