"""The judge's gates and check group.

``judge_recall``: the judge's recall on the task's counted held-out questions (``judge.floor``
says which count), at least the floor and on enough of them. It is measured by a validation
run (a worker loads the judge, not the web request); the gate reads that run's result on the
current revision.
``judge_labelling``: every held-out question has its gold label settled, and there are
enough of them (the judge-validation layer's gate). Registered in ``JudgeConfig.ready``.
"""

from pathlib import Path

from django.conf import settings

from hilbench_annotate.gates import register_gate
from validators.registry import register_group
from validators.results import FAILED, PASSED, CheckResult
from validators.services import gate_many_for

from .floor import style_name
from .services import get_judge
from .validation import judge_recall, labelling_progress, labelling_progress_many


def _details(judge, report) -> dict:
    # Everything the Judge validation page shows of a measurement, so that it shows it
    # again from here on the next visit (``judge.selectors.measurement_last``).
    return {
        "judge_version": getattr(judge, "long_version", "") or getattr(judge, "version", ""),
        "precision": report.precision,
        "recall": report.recall,
        "positives": report.positives,
        "matches": report.matches,
        "correct": report.correct,
        "settled": report.settled,
        "misses": report.misses,
        "false_matches": report.false_matches,
        "unsettled": report.unsettled,
        "needs_expansion": report.needs_expansion,
        "per_blocker": report.per_blocker,
        "shortfall": report.shortfall,
        "compromised": report.compromised,
        "not_counted": report.excluded,
        "per_style": report.per_style,
        "writers": report.writers,
    }


def _judge_recall(task, snapshot, workdir: Path):
    judge = get_judge(project=task.project)
    report = judge_recall(task=task, judge=judge, snapshot=snapshot)
    details = _details(judge, report)
    # Questions counted as misses until replaced, or not counted at all, and the recall per
    # style: at the end of every message (an export's reason keeps its start).
    note = report.floor_note
    spaced = (" " + note if note else "") + _by_style(report)
    if report.recall is None:
        lacking = (
            " The floor lacks: " + "; ".join(report.shortfall) + "." if report.shortfall else ""
        )
        return [
            CheckResult(
                "judge_recall",
                FAILED,
                "No counted held-out question targets a blocker: write and label some first."
                + lacking
                + spaced,
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
                f"{summary}, but the floor is not met — "
                + "; ".join(report.shortfall)
                + "."
                + (
                    spaced
                    if note
                    else " Counted held-out questions are written by at least two people who "
                    "never edited the task, in every style, and labelled by two others: add "
                    "and label fresh ones." + spaced
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
                " The floor lacks, too: " + "; ".join(report.shortfall) + "."
                if report.shortfall
                else ""
            )
            + spaced,
            details,
        )
    ]


def _by_style(report) -> str:
    """ " By style: terse 2/4, …." — the counted positives' recall per style."""
    styles = [row for row in report.styles if row["positives"]]
    if not styles:
        return ""
    return (
        " By style: "
        + ", ".join(
            f"{style_name(row['style'], short=True)} {row['correct']}/{row['positives']}"
            for row in styles
        )
        + "."
    )


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
        return False, "Too few counted held-out questions: " + "; ".join(progress["shortfall"])
    return True, (
        f"All held-out questions are labelled and settled; {progress['settled']} count "
        "toward the floor."
    )


def register() -> None:
    register_gate(
        "judge_labelling",
        labelling_gate,
        check_many=labelling_gate_many,
        description="every held-out question is labelled by two people other than its writer "
        "(a third settles disagreements), and enough of them count: at least "
        f"{settings.JUDGE_MIN_HELD_OUT_PER_BLOCKER} per blocker, from two writers who never "
        "edited the task, in every style",
    )
    register_group("judge_recall", _judge_recall, structural=False)
    register_gate(
        "judge_recall",
        description=f"the judge's recall on counted held-out questions is at least the floor "
        f"({settings.JUDGE_RECALL_FLOOR:.0%}); they count only when written by someone who never "
        "edited the task and labelled by two others, from two writers or more, in every style",
        check_many=gate_many_for("judge_recall"),
    )
