"""What the workspace's pages share: its template, the editor check, the form's draft, the
blocker vocabulary and the lint panel's context."""

from authoring import drafts, lint
from authoring.services import open_findings
from hilbench_annotate.access import access_task, require_task_editor
from hilbench_annotate.services import task_snapshot
from hilbench_annotate.vocabulary import (
    QUALITY_CRITERIA,
    SQL_SUBTYPES,
    Domain,
    Surface,
    blocker_types_for,
)

TEMPLATE = "authoring/workspace.html"


def editor_task(request, task_id: int):
    task = access_task(request.user, task_id)
    require_task_editor(request.user, task)
    return task


def vocabulary(task) -> dict:
    return {
        "blocker_types": blocker_types_for(task.domain),
        "subtypes": SQL_SUBTYPES if task.domain == Domain.SQL else {},
        "surfaces": Surface.choices,
        "criteria": QUALITY_CRITERIA,
    }


def lint_context(task, findings: list[dict]) -> dict:
    waivers = {w.fingerprint: w for w in task.lint_waivers.select_related("created_by")}
    for finding in findings:
        finding["waiver"] = waivers.get(finding["fingerprint"])
    blocking = open_findings(task, findings)
    return {"findings": findings, "blocking": blocking, "rules": lint.RULES}


def revision_number(task) -> int:
    """The number people know a task's saved state by (the version is only the form's lock)."""
    return task.revisions.order_by("-number").values_list("number", flat=True).first() or 0


def form_draft(request, task) -> dict:
    return drafts.draft_from_form(
        domain=task.domain, data=request.POST, environment=task_snapshot(task)["environment"]
    )
