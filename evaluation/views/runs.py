"""Evaluation screens: a project's leaderboard and curves, its model runs and studies, and the
lead's forms (endpoints, runs, imports, selection thresholds); a run's progress page."""

import csv

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from evaluation import metrics
from evaluation.access import access_evaluation_run
from evaluation.agents import AGENTS, REFERENCE_AGENTS
from evaluation.forms import (
    EndpointForm,
    HarborRunForm,
    PolicyForm,
    ResultsForm,
    RunForm,
    StudyForm,
    SupportScoresForm,
    with_files,
)
from evaluation.models import ModelEndpoint, SupportStudy
from evaluation.selection import lowering, models_needed
from evaluation.selectors import (
    harbor_task_ids,
    latest_studies,
    leaderboard,
    per_task_recall,
    per_task_rows,
    project_passes,
    reference_report,
    selection_policy,
    support_records,
    task_selection,
)
from evaluation.selectors_pages import (
    project_endpoints,
    recent_runs,
    recent_studies,
    resolved_count,
    run_excluded_tries,
    run_exclusions,
    run_passes,
    sql_task_ids,
    task_titles,
)
from evaluation.serializers import ResultsIn
from evaluation.services import (
    endpoint_create,
    evaluation_run_cancel,
    evaluation_run_start,
    harbor_run_start,
    results_upload_start,
    selection_policy_update,
    support_study_start,
    support_upload,
)
from evaluation.viewer import csv_safe
from hilbench_annotate.access import READER_ROLES, access_project, access_task, has_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.params import param_choice
from hilbench_annotate.selectors import readable_projects
from hilbench_annotate.toolkit.charts import column_chart, line_chart
from hilbench_annotate.vocabulary import Domain, Role

_RELEASE_DEFINITION = (
    "the HiL-Bench release's pass@{k}: the share of tasks resolved in any of their first {k} "
    "passes (run_hil_bench.py summarize_rows)"
)
_UNBIASED_DEFINITION = (
    "1 − C(n−c,{k})/C(n,{k}) from all of a task's n passes (Chen et al. 2021), averaged over "
    "tasks: the release's pass@{k} averaged over every order the passes could have run in"
)
# (key, label, what the column is): the leaderboard page, its CSV and the API name the keys.
COLUMNS = [
    ("model", "Model", ""),
    ("mode", "Mode", ""),
    ("tasks", "Tasks", ""),
    ("passes", "Passes", ""),
    *((f"pass_at_{k}", f"pass@{k}", _RELEASE_DEFINITION.format(k=k)) for k in (1, 2, 3)),
    *(
        (f"pass_at_{k}_unbiased", f"unbiased pass@{k}", _UNBIASED_DEFINITION.format(k=k))
        for k in (1, 2, 3)
    ),
    ("ask_f1", "Ask-F1", ""),
    ("ask_precision", "Ask precision", ""),
    ("ask_recall", "Ask recall", ""),
    ("questions_per_pass", "Questions / pass", ""),
    ("duplicate_rate", "Duplicate rate", ""),
    ("reward_mean", "Mean reward", ""),
]


PER_TASK_ROWS = 300
RUN_PAGE_PASSES = 500


def _with_tasks(rows: list[dict]) -> list[dict]:
    titles = task_titles(task_ids={r["task_id"] for r in rows})
    return [{**row, "title": titles.get(row["task_id"], "")} for row in rows]


def _sql_task_ids(project, ids: list[int]) -> list[int]:
    if ids:
        return ids
    return sql_task_ids(project=project)


@login_required
@require_GET
def evaluation_home(request):
    # visible_to: the projects where the user has a reading role, in one query.
    projects = list(readable_projects(user=request.user))
    if len(projects) == 1:
        return redirect("evaluation-project", project_id=projects[0].pk)
    return render(request, "evaluation/home.html", {"projects": projects})


def _curves(project, rows) -> dict:
    dbc, pr, flips, summaries = [], [], [], []
    for (model, method), study in sorted(latest_studies(project=project).items()):
        records = support_records(study=study)
        if not records:
            continue
        name = model if study.method == SupportStudy.Method.IMPORTED else f"{model} · {method}"
        dbc.append((name, metrics.delta_burden_curve(records)))
        pr.append(
            (name, [(recall, precision) for _, precision, recall in metrics.ask_pr_curve(records)])
        )
        flips.append((name, metrics.flip_rate_curve(records)))
        summaries.append(
            {
                "model": model,
                "method": study.get_method_display(),
                "study": study,
                **metrics.support_summary(records),
            }
        )
    recalls = per_task_recall(project=project, rows=rows)
    bins = [0] * 5
    for value in recalls:
        bins[min(4, int(value * 5))] += 1
    labels = ["0–20%", "20–40%", "40–60%", "60–80%", "80–100%"]
    return {
        "dbc": line_chart(
            dbc,
            title="Delta-Burden curves",
            x_label="User burden (share asked)",
            y_label="Δ accuracy",
            diagonal=False,
        ),
        "pr": line_chart(
            pr, title="Precision–recall of asking", x_label="R_ask", y_label="P_ask", y_range=(0, 1)
        ),
        "flip": line_chart(
            flips,
            title="Flip-rate curves",
            x_label="User burden",
            y_label="Flip rate",
            y_range=(-1, 1),
        ),
        "recall_histogram": column_chart(
            list(zip(labels, bins, strict=True)), title="Per-task Ask recall (model × task)"
        )
        if recalls
        else column_chart([], title="Per-task Ask recall"),
        "summaries": summaries,
    }


@login_required
@require_GET
def project_evaluation(request, project_id: int):
    project = access_project(request.user, project_id, roles=READER_ROLES)
    domain = param_choice(request.GET.get("domain"), Domain.values) or None
    endpoints = list(project_endpoints(project=project))
    lead = has_role(request.user, project.pk, Role.LEAD)
    policy = selection_policy(project=project)
    rows = project_passes(
        project=project, domain=domain
    )  # read once for the table, tasks and curves
    context = {
        "project": project,
        "domain": domain,
        "board": leaderboard(project=project, domain=domain, rows=rows),
        "per_task": _with_tasks(per_task_rows(project=project, rows=rows)[:PER_TASK_ROWS]),
        "columns": COLUMNS[4:],
        "methods": [m for m in SupportStudy.Method.choices],
        "curves": _curves(project, rows),
        "runs": recent_runs(project=project),
        "studies": recent_studies(project=project),
        "endpoints": endpoints,
        "is_lead": lead,
        "policy": policy,
        "models_needed": models_needed(policy),
        "lowered": lowering(policy),
        "reference": reference_report(project=project),
        "reference_agents": REFERENCE_AGENTS,
    }
    if lead:
        context.update(
            harbor_form=HarborRunForm(endpoints=endpoints),
            endpoint_form=EndpointForm(),
            run_form=RunForm(endpoints=endpoints),
            study_form=StudyForm(endpoints=endpoints),
            results_form=ResultsForm(),
            scores_form=SupportScoresForm(),
            policy_form=PolicyForm(
                initial={
                    "k": policy.k,
                    "full_info_min": policy.full_info_min,
                    "baseline_max": policy.baseline_max,
                    "min_models": policy.min_models,
                    "min_models_reason": policy.min_models_reason,
                }
            ),
        )
    return render(request, "evaluation/project.html", context)


def _form_errors(form) -> str:
    return "; ".join(
        f"{name}: {' '.join(errors)}" if name != "__all__" else " ".join(errors)
        for name, errors in form.errors.items()
    )


def _lead_post(request, project_id: int, form_class, action, form_kwargs=None):
    """Validate a lead's form and run ``action(project, data)``; errors become messages.
    ``form_kwargs(project)`` gives the form's extra arguments (the project's endpoints)."""
    project = access_project(request.user, project_id, roles=(Role.LEAD,))
    form = form_class(request.POST, request.FILES, **(form_kwargs(project) if form_kwargs else {}))
    if not form.is_valid():
        messages.error(request, _form_errors(form))
        return redirect("evaluation-project", project_id=project.pk)
    try:
        result = action(project, form.cleaned_data)
    except DomainError as error:
        messages.error(request, str(error))
        return redirect("evaluation-project", project_id=project.pk)
    return result or redirect("evaluation-project", project_id=project.pk)


def _endpoints(project):
    return {"endpoints": project_endpoints(project=project)}


@login_required
@require_POST
def endpoint_add(request, project_id: int):
    def action(project, data):
        endpoint = endpoint_create(project=project, actor=request.user, **data)
        messages.success(request, f"Endpoint {data['name']} registered.")
        if endpoint.identity is None:
            messages.warning(
                request,
                f"{endpoint.model!r} names no model: the pass-rate gate counts this endpoint's "
                "runs only beside an identified model. Register it with the model it serves.",
            )

    return _lead_post(request, project_id, EndpointForm, action)


@login_required
@require_POST
def run_start(request, project_id: int):
    def action(project, data):
        run = evaluation_run_start(
            project=project,
            actor=request.user,
            endpoint=get_object_or_404(ModelEndpoint, pk=data["endpoint"], project=project),
            task_ids=_sql_task_ids(project, data["tasks"]),
            modes=data["modes"],
            passes=data["passes"],
        )
        return redirect("evaluation-run", run_id=run.pk)

    return _lead_post(request, project_id, RunForm, action, form_kwargs=_endpoints)


@login_required
@require_POST
def harbor_run_start_view(request, project_id: int):
    def action(project, data):
        endpoint = None
        if data.get("endpoint"):
            endpoint = get_object_or_404(ModelEndpoint, pk=data["endpoint"], project=project)
        run = harbor_run_start(
            project=project,
            actor=request.user,
            agent=data["agent"],
            task_ids=harbor_task_ids(
                project=project, task_ids=data["tasks"], tag=data["tag"], waiting=data["waiting"]
            ),
            modes=data["modes"],
            passes=data["passes"],
            endpoint=endpoint,
            allow_internet=data["allow_internet"],
        )
        return redirect("evaluation-run", run_id=run.pk)

    return _lead_post(request, project_id, HarborRunForm, action, form_kwargs=_endpoints)


@login_required
@require_POST
def run_cancel(request, run_id: int):
    run = access_evaluation_run(request.user, run_id)
    access_project(request.user, run.project_id, roles=(Role.LEAD,))
    try:
        evaluation_run_cancel(run=run, actor=request.user)
        messages.success(request, "Cancel requested: the worker stops the trials.")
    except DomainError as error:
        messages.error(request, str(error))
    return redirect("evaluation-run", run_id=run.pk)


def _progress(run) -> dict:
    """Trials done / total, rewards so far, and the time left at the pace so far."""
    from django.utils import timezone

    resolved = resolved_count(run=run)
    left = None
    if run.started_at and run.done and not run.is_finished:
        elapsed = (timezone.now() - run.started_at).total_seconds()
        left = int(elapsed / run.done * (run.total - run.done))
    return {"resolved": resolved, "seconds_left": left, "agent": AGENTS.get(run.agent)}


@login_required
@require_POST
def study_start(request, project_id: int):
    def action(project, data):
        support_study_start(
            project=project,
            actor=request.user,
            endpoint=get_object_or_404(ModelEndpoint, pk=data["endpoint"], project=project),
            method=data["method"],
            task_ids=_sql_task_ids(project, data["tasks"]),
        )
        messages.success(request, "Study queued; its curves appear when it finishes.")

    return _lead_post(request, project_id, StudyForm, action, form_kwargs=_endpoints)


@login_required
@require_POST
def results_upload(request, project_id: int):
    """A lead's results file, read through the API's ``ResultsIn`` (``POST
    /api/projects/<id>/results``, ``evaluation.api.ResultsApi``): the same refusals."""
    project = access_project(request.user, project_id, roles=(Role.LEAD,))
    try:
        data = form_input(ResultsIn, with_files(request.POST, request.FILES))
        runs = results_upload_start(
            project=project,
            actor=request.user,
            upload=data["file"],
            model_name=data.get("model", ""),
        )
    except DomainError as error:
        messages.error(request, str(error))
        return redirect("evaluation-project", project_id=project.pk)
    if len(runs) == 1:
        return redirect("evaluation-run", run_id=runs[0].pk)
    messages.success(request, f"{len(runs)} runs queued: {', '.join(r.model_name for r in runs)}.")
    return redirect("evaluation-project", project_id=project.pk)


@login_required
@require_POST
def scores_upload(request, project_id: int):
    def action(project, data):
        study = support_upload(
            project=project, actor=request.user, upload=data["file"], model_name=data["model"]
        )
        messages.success(
            request, f"{study.total} need-for-help scores imported for {study.model_name}."
        )

    return _lead_post(request, project_id, SupportScoresForm, action)


@login_required
@require_POST
def policy_update(request, project_id: int):
    def action(project, data):
        selection_policy_update(project=project, actor=request.user, **data)
        messages.success(request, "Selection thresholds saved.")

    return _lead_post(request, project_id, PolicyForm, action)


@login_required
@require_GET
def leaderboard_csv(request, project_id: int):
    project = access_project(request.user, project_id, roles=READER_ROLES)
    domain = param_choice(request.GET.get("domain"), Domain.values) or None
    methods = [m for m, _ in SupportStudy.Method.choices]
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="leaderboard-{project.slug}.csv"'
    writer = csv.writer(response)
    # pass@k is over the tasks with every pass (pass_at_tasks); the others are counted apart,
    # and so are the tries the release leaves out.
    extra = ["pass_at_tasks", "tasks_short", "tries_excluded", "excluded_why"]
    keys = [key for key, _label, _title in COLUMNS] + extra
    writer.writerow(keys + [f"audbc_{m}" for m in methods])
    for row in leaderboard(project=project, domain=domain):
        values = [csv_safe(row.get(key)) for key in keys]
        values += [row["audbc"].get(m) for m in methods]
        writer.writerow(
            ["" if v is None else (f"{v:.4f}" if isinstance(v, float) else v) for v in values]
        )
    return response


@login_required
@require_GET
def run_detail(request, run_id: int):
    run = access_evaluation_run(request.user, run_id)
    is_lead = has_role(request.user, run.project_id, Role.LEAD)
    if request.htmx:
        context = {"run": run, "progress": _progress(run), "is_lead": is_lead}
        response = render(request, "evaluation/run.html#status", context)
        return HttpResponseStopPolling(response.content) if run.is_finished else response
    passes = run_passes(run=run, limit=RUN_PAGE_PASSES)
    excluded = run_excluded_tries(run=run, limit=RUN_PAGE_PASSES)
    context = {
        "run": run,
        "passes": passes,
        "excluded": excluded,
        "excluded_why": run_exclusions(run=run),
        "limit": RUN_PAGE_PASSES,
        "progress": _progress(run),
        "is_lead": is_lead,
    }
    return render(request, "evaluation/run.html", context)


@login_required
@require_GET
def task_selection_view(request, task_id: int):
    task = access_task(request.user, task_id)
    context = {
        "task": task,
        "selection": task_selection(task=task),
        "policy": selection_policy(project=task.project),  # when the models needed were lowered
    }
    return render(request, "evaluation/selection.html", context)
