"""Import pages (authors, leads): upload, follow the job, read its report. Export pages
(leads): choose tasks, follow the job, download the bundle while it is kept."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from exchange.access import access_export_job, access_import_job, export_projects, import_projects
from exchange.forms import ExportForm, ImportForm, export_input, export_typed
from exchange.models import ExportJob
from exchange.selectors import export_jobs_recent, import_jobs_recent
from exchange.serializers import ImportOptionsIn, export_arguments, import_options
from exchange.services.exports import bundle_export_start
from exchange.services.imports import IMPORTERS, import_start
from exchange.services.verifiers import verifier_accept, verifier_acceptance_withdraw
from hilbench_annotate.access import access_project
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.selectors import readable_projects
from hilbench_annotate.vocabulary import Role


@login_required
@require_http_methods(["GET", "POST"])
def import_list(request):
    projects = list(import_projects(request.user))
    if request.method == "POST" and not projects:
        raise AccessDenied("Only authors and leads import tasks.")
    form = ImportForm(request.POST or None, request.FILES or None, projects=projects)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        project = next(p for p in projects if p.pk == data["project"])
        files = {  # the files the chosen kind reads (others sent with the form are not kept)
            name: data.get(name) for name in IMPORTERS[data["kind"]].fields if name in request.FILES
        }
        try:
            # The options as the API reads them from its query (``ImportOptionsIn``).
            options = import_options(form_input(ImportOptionsIn, request.POST))
            job = import_start(
                project=project,
                actor=request.user,
                kind=data["kind"],
                files=files,
                options=options,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("import-detail", job_id=job.pk)
    jobs = import_jobs_recent(user=request.user)
    context = {
        "form": form,
        "jobs": jobs,
        "can_import": bool(projects),
        # The fields each kind of import shows: the page's script hides the others.
        "import_fields": json.dumps({kind: list(i.fields) for kind, i in IMPORTERS.items()}),
    }
    return render(request, "imports/list.html", context)


@login_required
@require_GET
def import_detail(request, job_id: int):
    job = access_import_job(request.user, job_id)
    if request.htmx:
        response = render(request, "imports/detail.html#status", {"job": job})
        if job.is_finished:
            # 286 tells htmx to stop polling; the fragment still replaces the old one.
            stop = HttpResponseStopPolling(response.content)
            return stop
        return response
    return render(request, "imports/detail.html", {"job": job})


@login_required
@require_http_methods(["GET", "POST"])
def export_list(request):
    """The Export page: its form read through ``ExportIn``, then ``bundle_export_start`` —
    what ``POST /api/exports/`` does (``exchange.api.ExportStartApi``)."""
    projects = list(export_projects(request.user))
    form, status = ExportForm(projects=projects), 200
    if request.method == "POST":
        if not projects:
            raise AccessDenied("Only project leads export bundles.")
        typed = export_typed(request.POST)
        try:
            data = export_input(typed)
            project = access_project(request.user, data["project"], roles=(Role.LEAD,))
            job = bundle_export_start(project=project, actor=request.user, **export_arguments(data))
        except DomainError as exc:
            # The form again as the lead filled it in, with the refusal above it.
            messages.error(request, str(exc))
            form, status = ExportForm(initial=typed, projects=projects), exc.status_code
        else:
            return redirect("export-detail", job_id=job.pk)
    jobs = export_jobs_recent(user=request.user)
    context = {
        "form": form,
        "jobs": jobs,
        "can_export": bool(projects),
        # Data for analysis (views_data): every project the user reads, not only those led.
        "data_projects": readable_projects(user=request.user),
    }
    return render(request, "bundles/export.html", context, status=status)


@login_required
@require_GET
def export_detail(request, job_id: int):
    job = access_export_job(request.user, job_id)
    if request.htmx:
        response = render(request, "bundles/detail.html#status", {"job": job})
        if job.is_finished:
            # 286 tells htmx to stop polling; the fragment still replaces the old one.
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, "bundles/detail.html", {"job": job})


@login_required
@require_GET
def export_download(request, job_id: int):
    return bundle_download(access_export_job(request.user, job_id))


def bundle_download(job: ExportJob) -> HttpResponse:
    """The job's bundle streamed from disk, or why there is none: 410 once it has expired,
    404 before it is made. The page's link and the API's (``exchange.api``) both."""
    if job.status == ExportJob.Status.EXPIRED or (job.path and not job.path.is_file()):
        return HttpResponse("This bundle has expired; export it again.", status=410)
    if job.status != ExportJob.Status.SUCCEEDED or job.path is None:
        return HttpResponse("This export has not produced a bundle.", status=404)
    return FileResponse(
        open(job.path, "rb"),  # noqa: SIM115 - FileResponse closes it
        as_attachment=True,
        filename=job.path.name,
        content_type="application/gzip",
    )


@login_required
@require_POST
def verifier_accept_view(request, task_id: int):
    """An auditor or lead accepts a task folder's own verifier (its panel on the task page)."""
    try:
        verifier_accept(actor=request.user, task_id=task_id)
        messages.success(request, "Accepted: this task's own verifier scores its trials now.")
    except DomainError as error:
        messages.error(request, str(error))
    return redirect("task-detail", task_id=task_id)


@login_required
@require_POST
def verifier_withdraw_view(request, task_id: int):
    try:
        verifier_acceptance_withdraw(actor=request.user, task_id=task_id)
        messages.success(request, "Withdrawn: the generated verifier scores this task again.")
    except DomainError as error:
        messages.error(request, str(error))
    return redirect("task-detail", task_id=task_id)
