"""The workspace's lint panel: live lint of the unsaved form, and waiving a finding."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from authoring import checks
from authoring.forms import WAIVE, form_typed
from authoring.serializers import WaiveIn
from authoring.services import lint_waive, lint_waiver_withdraw
from authoring.views.common import TEMPLATE, editor_task, form_draft, lint_context
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input


@login_required
@require_POST
def workspace_lint(request, task_id: int):
    """Live lint of the unsaved form (nothing is stored)."""
    task = editor_task(request, task_id)
    findings = checks.as_dicts(checks.draft_findings(task, form_draft(request, task)))
    return render(request, f"{TEMPLATE}#lint-panel", {"task": task, **lint_context(task, findings)})


@login_required
@require_POST
def waive(request, task_id: int):
    """Waive a finding, or withdraw its waiver: the form read through ``WaiveIn``."""
    refused = None
    task = editor_task(request, task_id)
    typed = form_typed(request.POST, WAIVE)
    try:
        data = form_input(WaiveIn, typed)
        if data["withdraw"]:
            lint_waiver_withdraw(task=task, actor=request.user, fingerprint=data["fingerprint"])
        else:
            lint_waive(
                task=task,
                actor=request.user,
                fingerprint=data["fingerprint"],
                reason=data["reason"],
            )
    except DomainError as exc:
        refused = {
            "fingerprint": typed.get("fingerprint", ""),
            "reason": typed.get("reason", ""),
            "error": str(exc),
        }
    if request.htmx:
        # A refusal is said beside the finding, whose reason field keeps what was typed.
        findings = checks.as_dicts(checks.draft_findings(task, form_draft(request, task)))
        if refused:
            refused["beside"] = any(_waivable(f, refused["fingerprint"]) for f in findings)
        context = {"task": task, "refused": refused, **lint_context(task, findings)}
        return render(request, f"{TEMPLATE}#lint-panel", context, status=400 if refused else 200)
    if refused:
        messages.error(request, refused["error"])
    return redirect("workspace", task_id=task_id)


def _waivable(finding: dict, fingerprint: str) -> bool:
    """Whether the panel shows this finding's Waive form for ``fingerprint`` (where a refusal
    is said); otherwise (no such finding, a waived one) it is said above the findings."""
    severity, rule = finding.get("severity"), finding.get("rule")
    shown = severity == "error" or (severity == "warning" and rule != "criteria_unattested")
    return shown and finding.get("fingerprint") == fingerprint and not finding.get("waiver")
