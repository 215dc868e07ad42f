"""What the workspace's pages share: its template, the editor check, the form's draft, the
blocker vocabulary and the lint panel's context."""

from authoring import drafts, lint
from authoring.selectors import lint_waivers
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
    waivers = lint_waivers(task=task)
    for finding in findings:
        finding["waiver"] = waivers.get(finding["fingerprint"])
    blocking = open_findings(task, findings)
    return {"findings": findings, "blocking": blocking, "rules": lint.RULES}


def form_draft(request, task) -> dict:
    return drafts.draft_from_form(
        domain=task.domain, data=request.POST, environment=task_snapshot(task)["environment"]
    )
