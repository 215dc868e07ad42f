"""A task's revision history (any two revisions compared), and restoring an earlier revision
from it (a plain form POST)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from authoring.restore import revision_restore
from authoring.selectors import revision_history, revisions_numbered
from authoring.serializers import RestoreIn
from hilbench_annotate.access import access_task, can_edit_task
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.params import param_id
from hilbench_annotate.toolkit.textdiff import snapshot_changes


@login_required
@require_GET
def revisions(request, task_id: int):
    """Revision history; ``?a=N&b=M`` compares any two revisions."""
    task = access_task(request.user, task_id)
    history = revision_history(task=task)
    context = {"task": task, "history": history, "can_edit": can_edit_task(request.user, task)}
    numbers = [r.number for r in history]
    latest = numbers[0] if numbers else None
    previous = numbers[1] if len(numbers) > 1 else latest
    a = param_id(request.GET["a"]) if request.GET.get("a") else previous
    b = param_id(request.GET["b"]) if request.GET.get("b") else latest
    if a and b:
        pair = revisions_numbered(task=task, numbers=[a, b])
        if a in pair and b in pair:
            context.update(
                a=pair[a], b=pair[b], changes=snapshot_changes(pair[a].snapshot, pair[b].snapshot)
            )
    return render(request, "authoring/revisions.html", context)


@login_required
@require_POST
def restore(request, task_id: int):
    """Restore revision ``number`` as the task's next revision; back to the history, which
    then shows what the restore changed (or says why nothing was stored)."""
    access_task(request.user, task_id)  # 404 before anything else is read
    history = reverse("workspace-revisions", args=[task_id])
    try:
        data = form_input(RestoreIn, request.POST)
    except DomainError as exc:
        messages.error(request, f"Not restored. {exc}")
        return redirect(history)
    number = data["number"]
    try:
        revision = revision_restore(
            actor=request.user,
            task_id=task_id,
            number=number,
            expected_version=data["expected_version"],
        )
    except DomainError as exc:
        messages.error(request, f"Revision {number} was not restored. {exc}")
        return redirect(history)
    messages.success(
        request,
        f"Restored revision {number} as revision {revision.number}; nothing was deleted, "
        "every earlier revision is still in the history.",
    )
    return redirect(f"{history}?a={revision.number - 1}&b={revision.number}")
