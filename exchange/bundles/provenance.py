"""``provenance/validation.json`` and ``provenance/review.json``: why a task is in the bundle.

Validation: every check result of the latest finished run of each check group, naming the
revision it ran on, the gates as they stand, the judge's version and recall. Review: the
project's layers and every decision with the revision it judged. Reviewers are pseudonymised
(``reviewer-1``, ``reviewer-2`` … in order of first decision on the task) unless the lead
opts in to names. No timestamps: only the manifest carries those.
"""

from collections import defaultdict
from typing import Any

from django.conf import settings

from hilbench_annotate.gates import gate_results_many
from hilbench_annotate.models import Task
from judge.services import judge_version as judge_services_version
from review.models import ReviewDecision, ReviewLayer
from validators.models import ValidationRun
from validators.registry import groups_for


def _gate_names(project_id: int) -> list[str]:
    """The gates a task of the project must pass to be exported: every gate of its pipeline
    and ``settings.EXPORT_REQUIRED_GATES`` (lint, structural checks, the judge's recall)."""
    names: list[str] = []
    for gates in ReviewLayer.objects.filter(project_id=project_id).values_list("gates", flat=True):
        names.extend(g for g in gates if g not in names)
    for required in settings.EXPORT_REQUIRED_GATES:
        if required not in names:
            names.append(required)
    return names


def gate_reports(tasks: list[Task]) -> dict[int, list[dict[str, Any]]]:
    """``gate_report`` of many tasks: each project's gates asked once for all its tasks."""
    reports: dict[int, list[dict[str, Any]]] = {}
    for project_id in {task.project_id for task in tasks}:
        ours = [task for task in tasks if task.project_id == project_id]
        for pk, results in gate_results_many(ours, _gate_names(project_id)).items():
            reports[pk] = [
                {"gate": name, "green": green, "message": message}
                for name, green, message in results
            ]
    return reports


def judge_version(project) -> str | None:
    try:
        return judge_services_version(project)
    except Exception:  # noqa: BLE001 - an unconfigured judge is reported as null, not a crash
        return None


def _judge(version: str | None, recall_details: dict | None) -> dict[str, Any]:
    details = recall_details or {}
    return {
        "version": version,
        "recall": details.get("recall"),
        "precision": details.get("precision"),
        "held_out_positives": details.get("positives"),
    }


def validation_documents(
    tasks: list[Task],
    *,
    revision_numbers: dict[int, int],
    gates: dict[int, list[dict]],
    pass_rates: dict[int, dict | None],
) -> dict[int, dict[str, Any]]:
    """``provenance/validation.json`` of many tasks, their finished runs read at once."""
    runs: dict[int, list[ValidationRun]] = defaultdict(list)
    for run in (
        ValidationRun.objects.filter(task__in=tasks, status__in=ValidationRun.FINISHED)
        .select_related("revision")
        .prefetch_related("results")
        .order_by("-created_at", "-id")
    ):
        runs[run.task_id].append(run)
    projects = {task.project_id: task.project for task in tasks}
    versions = {pk: judge_version(project) for pk, project in projects.items()}
    return {
        task.pk: _validation(
            task,
            runs[task.pk],
            revision_number=revision_numbers[task.pk],
            gates=gates[task.pk],
            pass_rate=pass_rates[task.pk],
            judge_version=versions[task.project_id],
        )
        for task in tasks
    }


def _validation(task, runs, *, revision_number, gates, pass_rate, judge_version) -> dict:
    checks: list[dict[str, Any]] = []
    recall_details = None
    wanted = groups_for(task.domain, structural_only=False)
    covered: set[str] = set()
    for run in runs:
        fresh = [g for g in wanted if g in run.checks and g not in covered]
        if not fresh:
            continue
        covered.update(fresh)
        for result in run.results.all():
            if result.group not in fresh:
                continue
            if result.check_name == "judge_recall":
                recall_details = result.details
            checks.append(
                {
                    "group": result.group,
                    "check": result.check_name,
                    "outcome": result.outcome,
                    "message": result.message,
                    "run": run.pk,
                    "revision": run.revision.number,
                    "on_current_revision": run.revision.number == revision_number,
                }
            )
        if covered == set(wanted):
            break
    checks.sort(key=lambda c: (wanted.index(c["group"]), c["check"]))
    return {
        "revision": revision_number,
        "checks": checks,
        "groups_never_run": [g for g in wanted if g not in covered],
        "gates": gates,
        "judge": _judge(judge_version, recall_details),
        # The evaluation app's pass-rate selection, as the gate read it; null until then.
        "pass_rate": _pass_rate(pass_rate),
    }


def _pass_rate(selection: dict | None) -> dict | None:
    """The pass-rate evidence: thresholds, each model's figures, the models that decided
    (identity and runs) and, when a lead lowered the models needed, the reason — but not who
    or when (provenance names no one and carries no timestamps; the app's pages show both)."""
    if selection is None:
        return None
    lowered = selection.get("lowered")
    if lowered:
        lowered = {"models_needed": lowered["models_needed"], "reason": lowered["reason"]}
    return {**selection, "lowered": lowered}


def review_documents(
    tasks: list[Task], *, revision_numbers: dict[int, int], reveal_reviewers: bool
) -> dict[int, dict]:
    """``provenance/review.json`` of many tasks: layers once a project, decisions at once."""
    layers = {
        project_id: [
            {
                "position": layer.position,
                "name": layer.name,
                "role": layer.role,
                "gates": layer.gates,
            }
            for layer in ReviewLayer.objects.filter(project_id=project_id).order_by("position")
        ]
        for project_id in {task.project_id for task in tasks}
    }
    decisions: dict[int, list[ReviewDecision]] = defaultdict(list)
    for decision in (
        ReviewDecision.objects.filter(task__in=tasks)
        .select_related("reviewer", "revision")
        .order_by("created_at", "id")
    ):
        decisions[decision.task_id].append(decision)
    return {
        task.pk: {
            "revision": revision_numbers[task.pk],
            "status": task.status,
            "reviewers_named": reveal_reviewers,
            "layers": layers[task.project_id],
            "decisions": _decisions(decisions[task.pk], reveal_reviewers),
        }
        for task in tasks
    }


def _decisions(decisions: list, reveal_reviewers: bool) -> list[dict]:
    names: dict[int, str] = {}
    written = []
    for decision in decisions:
        if decision.reviewer_id not in names:
            names[decision.reviewer_id] = (
                decision.reviewer.get_username()
                if reveal_reviewers
                else f"reviewer-{len(names) + 1}"
            )
        written.append(
            {
                "layer": decision.layer,
                "layer_name": decision.layer_name,
                "reviewer": names[decision.reviewer_id],
                "outcome": decision.outcome,
                "revision": decision.revision.number,
                "summary": decision.summary,
                "reject_reason": decision.reject_reason,
                "checklist": decision.checklist,
                "blocker_comments": decision.blocker_comments,
            }
        )
    return written
