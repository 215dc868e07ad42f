"""Trajectories and failure labels: the step-by-step viewer (with the label form), the
side-by-side view, a project's failure analysis (heat map, agreement, the labelling queue,
LLM pre-labelling) and the taxonomy editor."""

import csv
from bisect import bisect_left

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.access import access_task_pass
from evaluation.forms import taxonomy_typed
from evaluation.models import ModelEndpoint, TaskPass, TaxonomyEntry
from evaluation.selectors import (
    ask_human_verdicts,
    effective_labels,
    failure_agreement,
    failure_heatmap,
    label_rows,
)
from evaluation.selectors_pages import (
    failed_passes,
    model_names,
    pass_labels,
    pass_siblings,
    project_endpoints,
    recent_labelling_runs,
)
from evaluation.serializers import (
    FailureLabelIn,
    LabellingRunIn,
    TaxonomyIn,
    taxonomy_arguments,
)
from evaluation.services import (
    failure_label_set,
    labelling_run_start,
    rubric,
    taxonomy,
    taxonomy_update,
)
from evaluation.trajectory_pages import TrajectoryOutline, trajectory_outline, trajectory_steps
from evaluation.viewer import FIELDS, PAGE_STEPS, csv_safe, full_text, step_page, view_steps
from hilbench_annotate.access import READER_ROLES, access_project, has_role, require_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.params import param_choice, param_id, param_text
from hilbench_annotate.redirects import redirect_next
from hilbench_annotate.vocabulary import Domain, Role

QUEUE_ROWS = 100


def _pass_view(task_pass: TaskPass, outline: TrajectoryOutline | None, pager: dict) -> dict:
    """One page of the pass's trajectory (``pager``), read from the database alone: the k-th
    ask_human step gets the k-th verdict whichever page it is on."""
    offset = pager["offset"]
    asks = outline.asks if outline else []
    before = bisect_left(asks, offset)  # ask_human steps on the pages before this one
    steps = trajectory_steps(task_pass.pk, offset=offset, limit=PAGE_STEPS) if outline else []
    verdicts = ask_human_verdicts(task_pass=task_pass)
    return {
        "task_pass": task_pass,
        "trajectory": outline,
        "steps": view_steps(steps, verdicts, first=offset + 1, asks_before=before),
        "asks": len(asks),
        "asks_before": before,
        "ask_pages": [position // PAGE_STEPS + 1 for position in asks],
        "pager": pager,
        "score": task_pass.detail.get("score") or {},
        "refused": str(task_pass.detail.get("trajectory_refused") or ""),
    }


def _step_text(request, task_pass: TaskPass, number: int, field: str):
    """One step's content, input or output whole, a part at a time: the page's "show all"."""
    found = trajectory_steps(task_pass.pk, offset=number - 1, limit=1)
    if not found:
        raise Http404("No such step.")
    context = {
        "task_pass": task_pass,
        "n": number,
        "step": found[0],
        "page": (number - 1) // PAGE_STEPS + 1,
        "full": full_text(found[0], field, param_id(request.GET.get("part"))),
    }
    template = "evaluation/step_text.html" + ("#text" if request.htmx else "")
    return render(request, template, context)


@login_required
@require_GET
def pass_detail(request, pass_id: int):
    task_pass = access_task_pass(request.user, pass_id)
    number = param_id(request.GET.get("step"))
    field = param_choice(request.GET.get("field"), FIELDS)
    if number and field:
        return _step_text(request, task_pass, number, field)
    project = task_pass.run.project
    entries = taxonomy(project)
    labels = pass_labels(task_pass=task_pass)
    may_label = has_role(request.user, project.pk, *READER_ROLES)
    siblings = pass_siblings(task_pass=task_pass, project=project)
    outline = trajectory_outline(task_pass.pk)
    pager = step_page(outline.total if outline else 0, param_id(request.GET.get("page")))
    view = _pass_view(task_pass, outline, pager)
    context = {
        **view,
        "view": view,
        "project": project,
        "dimensions": [e for e in entries if e.axis == TaxonomyEntry.Axis.DIMENSION],
        "modes": [e for e in entries if e.axis == TaxonomyEntry.Axis.MODE],
        "labels": labels,
        "mine": next((x for x in labels if x.labeller_id == request.user.pk), None),
        "may_label": may_label and not task_pass.resolved,
        "siblings": siblings,
    }
    return render(request, "evaluation/trajectory.html", context)


@login_required
@require_GET
def pass_compare(request):
    left_id, right_id = param_id(request.GET.get("left")), param_id(request.GET.get("right"))
    if left_id is None or right_id is None:
        raise Http404("Choose two passes to compare.")
    left, right = access_task_pass(request.user, left_id), access_task_pass(request.user, right_id)
    outlines = trajectory_outline(left.pk), trajectory_outline(right.pk)
    total = max(o.total if o else 0 for o in outlines)
    pager = step_page(total, param_id(request.GET.get("page")))
    context = {
        "left": _pass_view(left, outlines[0], pager),
        "right": _pass_view(right, outlines[1], pager),
        "pager": pager,
        "query": f"left={left.pk}&right={right.pk}&",
        "compare": (left.pk, right.pk),
    }
    return render(request, "evaluation/compare.html", context)


@login_required
@require_POST
def pass_label(request, pass_id: int):
    task_pass = access_task_pass(request.user, pass_id)
    try:
        data = form_input(FailureLabelIn, request.POST)
        failure_label_set(task_pass=task_pass, actor=request.user, **data)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, "Label saved.")
    return redirect_next(request, reverse("evaluation-pass", args=[task_pass.pk]))


def _queue(project, request) -> tuple[list[dict], dict]:
    filters = {k: param_text(request.GET.get(k)) for k in ("model", "dimension", "mode", "state")}
    filters["domain"] = param_choice(request.GET.get("domain"), Domain.values)
    failed = failed_passes(project=project, model=filters["model"], domain=filters["domain"])
    labels = effective_labels(rows=label_rows(project=project))
    rows = []
    for task_pass in failed:
        label = labels.get(task_pass.pk)
        if filters["state"] == "unlabelled" and label:
            continue
        if filters["state"] == "llm-only" and (not label or label[2] != "llm"):
            continue
        if filters["dimension"] and (not label or label[0] != filters["dimension"]):
            continue
        if filters["mode"] and (not label or label[1] != filters["mode"]):
            continue
        rows.append({"pass": task_pass, "label": label})
        if len(rows) >= QUEUE_ROWS:
            break
    return rows, filters


@login_required
@require_GET
def failures(request, project_id: int):
    project = access_project(request.user, project_id, roles=READER_ROLES)
    domain = param_choice(request.GET.get("domain"), Domain.values) or None
    rows, filters = _queue(project, request)
    is_lead = has_role(request.user, project.pk, Role.LEAD)
    context = {
        "project": project,
        "heatmap": failure_heatmap(project=project, domain=domain),
        "agreement": failure_agreement(project=project),
        "queue": rows,
        "filters": filters,
        "models": model_names(project=project),
        "is_lead": is_lead,
        "endpoints": project_endpoints(project=project) if is_lead else [],
        "labelling_runs": recent_labelling_runs(project=project),
        "rubric_version": rubric(project)[1],
    }
    return render(request, "evaluation/failures.html", context)


@login_required
@require_GET
def failures_csv(request, project_id: int):
    project = access_project(request.user, project_id, roles=READER_ROLES)
    heatmap = failure_heatmap(
        project=project, domain=param_choice(request.GET.get("domain"), Domain.values) or None
    )
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="failures-{project.slug}.csv"'
    writer = csv.writer(response)
    writer.writerow(
        ["model", "dimension", "mode", "count", "share_of_labelled", "labelled", "failed"]
    )
    for grid in heatmap["models"]:
        for row in grid["rows"]:
            for cell in row["cells"]:
                writer.writerow(
                    [
                        csv_safe(grid["model"]),
                        row["dimension"].key,
                        cell["mode"].key,
                        cell["count"],
                        f"{cell['share']:.4f}",
                        grid["labelled"],
                        grid["failed"],
                    ]
                )
    return response


@login_required
@require_POST
def llm_labelling_start(request, project_id: int):
    project = access_project(request.user, project_id, roles=(Role.LEAD,))
    try:
        data = form_input(LabellingRunIn, request.POST)
        # Another project's endpoint is a 404, as a missing one is.
        endpoint = get_object_or_404(ModelEndpoint, pk=data["endpoint"], project=project)
        run = labelling_run_start(project=project, actor=request.user, endpoint=endpoint)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"LLM labelling of {run.total} failed passes queued.")
    return redirect("evaluation-failures", project_id=project.pk)


@login_required
@require_http_methods(["GET", "POST"])
def taxonomy_edit(request, project_id: int):
    project = access_project(request.user, project_id, roles=READER_ROLES)
    if request.method == "POST":
        require_role(request.user, project, Role.LEAD, action="edit the taxonomy")
    entries = taxonomy(project)
    is_lead = has_role(request.user, project.pk, Role.LEAD)
    status = 200
    if request.method == "POST":
        try:
            data = form_input(TaxonomyIn, taxonomy_typed(request.POST, entries))
            taxonomy_update(project=project, actor=request.user, entries=taxonomy_arguments(data))
        except DomainError as error:
            messages.error(request, str(error))
            status = error.status_code
        else:
            messages.success(request, "Taxonomy saved; the LLM rubric has a new version.")
            return redirect("evaluation-taxonomy", project_id=project.pk)
    return render(
        request,
        "evaluation/taxonomy.html",
        {
            "project": project,
            "entries": entries,
            "is_lead": is_lead,
            "rubric_version": rubric(project)[1],
        },
        status=status,
    )
