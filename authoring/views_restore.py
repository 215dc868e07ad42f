"""Restoring an earlier revision from the task's revision history (a plain form POST)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from authoring.restore import revision_restore
from hilbench_annotate.access import access_task
from hilbench_annotate.errors import DomainError
from hilbench_annotate.params import param_id


@login_required
@require_POST
def restore(request, task_id: int):
    """Restore revision ``number`` as the task's next revision; back to the history, which
    then shows what the restore changed (or says why nothing was stored)."""
    access_task(request.user, task_id)  # 404 before anything else is read
    number = param_id(request.POST.get("number"))
    version = param_id(request.POST.get("expected_version"))
    history = reverse("workspace-revisions", args=[task_id])
    if number is None or version is None:
        messages.error(request, "Not restored: pick a revision from the history and try again.")
        return redirect(history)
    try:
        revision = revision_restore(
            actor=request.user, task_id=task_id, number=number, expected_version=version
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
