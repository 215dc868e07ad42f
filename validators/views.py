"""Start a validation run and watch it: the task page's validation card, polled by htmx."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from hilbench_annotate.access import access_task
from hilbench_annotate.errors import DomainError

from .models import ValidationRun
from .services import validation_run_start

TEMPLATE = "validators/run.html"


@login_required
@require_POST
def run_start(request, task_id: int):
    task = access_task(request.user, task_id)
    checks = request.POST.getlist("checks") or None
    try:
        with transaction.atomic():
            run = validation_run_start(task=task, actor=request.user, checks=checks)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("task-detail", task_id=task.pk)
    if request.htmx:
        return render(request, TEMPLATE + "#run", {"task": task, "run": run})
    return redirect("validation-run", task_id=task.pk, run_id=run.pk)


@login_required
@require_GET
def run_detail(request, task_id: int, run_id: int):
    task = access_task(request.user, task_id)
    run = get_object_or_404(
        ValidationRun.objects.select_related("revision").prefetch_related("results"),
        pk=run_id,
        task=task,
    )
    context = {"task": task, "run": run}
    if request.htmx:
        response = render(request, TEMPLATE + "#run", context)
        if run.is_finished:
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, TEMPLATE, context)
