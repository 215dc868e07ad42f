"""The check groups a validation run can include, per domain.

Each group is a function ``(task, snapshot, workdir) -> list[CheckResult]``. Heavy imports
happen inside the functions, so listing the groups costs nothing.
"""

from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from .results import ERROR, FAILED, PASSED, SKIPPED, CheckResult
from .spec import check_spec


def _spec(task, snapshot, workdir: Path):
    return check_spec(snapshot)


def _swe_patches(task, snapshot, workdir: Path):
    from authoring.checks import patch_chain_check
    from hilbench_annotate.errors import DomainError

    env = task.swe_environment
    if env.repository is None:
        return [
            CheckResult("patches_apply", SKIPPED, "The task has no repository to apply patches to.")
        ]
    try:
        labels = patch_chain_check(env, env.setup_patch)
    except DomainError as exc:
        return [CheckResult("patches_apply", FAILED, str(exc))]
    return [
        CheckResult(
            "patches_apply",
            PASSED,
            "The setup patch applies cleanly on the base commit; "
            "test and gold patches apply on top.",
            {"patches": labels},
        )
    ]


def _swe_tests(task, snapshot, workdir: Path):
    from validators.sandbox import SandboxLimits
    from validators.swe import check_swe_tests

    limits = SandboxLimits(
        wall_s=settings.SANDBOX_WALL_S,
        cpu_s=settings.SANDBOX_CPU_S,
        memory_mb=settings.SANDBOX_MEMORY_MB,
    )
    return check_swe_tests(task.swe_environment, limits=limits)


def _history_leakage(task, snapshot, workdir: Path):
    from validators.leakage import check_leakage, forbidden_texts, sanitize

    env = task.swe_environment
    if env.repository is None:
        return [CheckResult("history_leakage", SKIPPED, "The task has no repository.")]
    shipped = sanitize(
        mirror=env.repository.path,
        base_commit=env.base_commit,
        setup_patch=env.setup_patch,
        dest=workdir / "shipped",
    )
    texts = forbidden_texts(
        gold_patch=env.gold_patch,
        setup_patch=env.setup_patch,
        resolutions=[(b["id"], b["resolution"]) for b in snapshot.get("blockers", [])],
    )
    return check_leakage(repo=shipped, base_commit=None, forbidden=texts)


def _sql_ground_truth(task, snapshot, workdir: Path):
    from validators.sql import check_sql_task

    return check_sql_task(
        task.sql_environment,
        timeout_s=settings.SQL_CHECK_TIMEOUT_S,
        cache_dir=settings.DATABASE_STORE / "edited",
    )


def _judge_recall(task, snapshot, workdir: Path):
    from judge.services import get_judge
    from judge.validation import judge_recall

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


GROUPS: dict[str, tuple[str | None, Callable]] = {
    "spec": (None, _spec),
    "sql_ground_truth": ("sql", _sql_ground_truth),
    "swe_patches": ("swe", _swe_patches),
    "swe_tests": ("swe", _swe_tests),
    "history_leakage": ("swe", _history_leakage),
    "judge_recall": (None, _judge_recall),
}
# Structural checks: what "run structural checks" runs and the "structural" gate requires.
# The judge's recall needs labelled questions first, so it has a gate of its own.
NOT_STRUCTURAL = {"judge_recall"}


def groups_for(domain: str, *, include_judge: bool = False) -> list[str]:
    return [
        name
        for name, (only, _) in GROUPS.items()
        if only in (None, domain) and (include_judge or name not in NOT_STRUCTURAL)
    ]


def run_group(name: str, task, snapshot, workdir: Path) -> list[CheckResult]:
    """Run one group; an unexpected exception is an ERROR result, never a crashed run."""
    try:
        return GROUPS[name][1](task, snapshot, workdir)
    except Exception as exc:  # noqa: BLE001 - reported on the run, with its type
        return [CheckResult(name, ERROR, f"The check crashed: {type(exc).__name__}: {exc}")]


__all__ = ["GROUPS", "PASSED", "groups_for", "run_group"]
