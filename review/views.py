"""Review screens: queues, the review page, timeline, threads, notifications, pipeline."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from hilbench_annotate import workflow
from hilbench_annotate.access import (
    access_project,
    access_task,
    has_role,
)
from hilbench_annotate.errors import DomainError
from hilbench_annotate.gates import gate_results
from hilbench_annotate.models import Task
from hilbench_annotate.redirects import redirect_next
from hilbench_annotate.selectors import revision_current
from hilbench_annotate.services import task_snapshot
from hilbench_annotate.spec import spec_sections
from hilbench_annotate.toolkit.textdiff import snapshot_changes
from hilbench_annotate.vocabulary import QUALITY_CRITERIA, Role
from review import selectors, services
from review.access import access_comment, access_review_layer
from review.forms import (
    decision_input,
    decision_typed,
    form_input,
    pipeline_input,
    pipeline_typed,
)
from review.models import ReviewLayer
from review.serializers import (
    AssignIn,
    CommentIn,
    ResolveIn,
    SubmitIn,
    decision_arguments,
    pipeline_arguments,
)


@login_required
@require_GET
def queue(request):
    rows = selectors.review_queue(user=request.user)
    # The same assignments the API lists per layer, here in one table, soonest lock first.
    mine = sorted((a for row in rows for a in row.assignments), key=lambda a: (a.expires_at, a.pk))
    return render(
        request,
        "review/queue.html",
        {
            "rows": rows,
            "mine": mine,
            "self_checks": selectors.self_checks_waiting(user=request.user),
            "returned": selectors.tasks_sent_back(user=request.user),
            "lead_projects": selectors.projects_led(user=request.user),
            "last_decision": selectors.last_decision_withdrawable(user=request.user),
        },
    )


@login_required
@require_POST
def take_next(request, layer_id: int):
    layer = access_review_layer(request.user, layer_id)
    try:
        assignment = services.review_take_next(user=request.user, layer=layer)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("review-queue")
    if assignment is None:
        messages.info(request, f"Nothing is waiting for you at {layer.name}.")
        return redirect("review-queue")
    return redirect("review-task", task_id=assignment.task_id)


def _review_context(request, task: Task, typed: dict | None = None) -> dict:
    """The review page's context; ``typed`` is a refused decision's input, shown again."""
    layers = selectors.pipeline_layers(project=task.project)
    layer = layers[task.review_layer - 1] if task.review_layer else None
    assignment = selectors.assignment_holding(task=task, layer=layer) if layer else None
    current = revision_current(task=task)
    judged = selectors.revision_judged_last(task=task, layer=layer.position) if layer else None
    changes = None
    if judged and current and judged.number != current.number:
        changes = snapshot_changes(judged.snapshot, current.snapshot)
    problem = (
        selectors.independence_problem(task=task, user=request.user, layer=layer)
        if layer
        else "not in review"
    )
    may_decide = (
        task.status == workflow.IN_REVIEW
        and problem is None
        and (layer.self_check or (assignment and assignment.reviewer_id == request.user.pk))
    )
    is_lead = has_role(request.user, task.project_id, Role.LEAD)
    typed = typed or {}
    snapshot = current.snapshot if current else task_snapshot(task)
    # Back at a layer that asked for changes: what it said last time, next to each blocker.
    previous = selectors.previous_round(task=task, layer=layer)
    keys = {b["id"] for b in snapshot["blockers"]}
    return {
        "task": task,
        "layer": layer,
        "layers": layers,
        "assignment": assignment,
        "revision": current,
        "judged": judged,
        "changes": changes,
        "snapshot": snapshot,
        "spec_sections": spec_sections(
            task.domain, snapshot.get("original_spec") or {}, snapshot["blocked_spec"]
        ),
        "blocker_rows": [
            (
                b,
                typed.get("comments", {}).get(b["id"], ""),
                previous["by_blocker"].get(b["id"], []),
            )
            for b in snapshot["blockers"]
        ],
        "previous_decisions": previous["decisions"],
        "previous_elsewhere": [
            (key, notes) for key, notes in previous["by_blocker"].items() if key not in keys
        ],
        "checklist_rows": (
            _checklist_rows(layer, typed.get("checklist", []), snapshot["blockers"])
            if layer
            else []
        ),
        "typed": typed,
        "gates": gate_results(task, layer.gates) if layer else [],
        "may_decide": may_decide,
        "why_not": problem,
        "is_lead": is_lead,
        "reject_reasons": selectors.policy_for(project=task.project).reject_reasons,
        # Withdrawn ones too, marked: the page tells the whole story, as the timeline does.
        "decisions": selectors.task_decisions(task=task),
        "withdrawable": selectors.decision_withdrawable(task=task, user=request.user),
        "candidates": (
            selectors.assignment_candidates(task=task, layer=layer) if is_lead and layer else []
        ),
        "threads": selectors.task_threads(task=task),
    }


def _checklist_rows(layer: ReviewLayer, typed: list[dict], blockers: list[dict]) -> list[dict]:
    """One row per checklist item, with the answer and note typed before a refusal. At the
    self-check, a quality criterion is asked of each blocker: the row holds one tick per
    blocker, first as the author attested it in the workspace."""
    answers = {a["item"]: a for a in typed}
    criteria = {label: key for key, label in QUALITY_CRITERIA}
    rows = []
    for item in layer.checklist:
        answer = answers.get(item, {})
        row = {"item": item, "passed": answer.get("passed"), "note": answer.get("note", "")}
        if layer.self_check and item in criteria and blockers:
            ticked = answer.get("ticked")
            attested = {
                b["id"]: (b.get("criteria") or {}).get(criteria[item]) or {} for b in blockers
            }
            row["per_blocker"] = [
                {
                    "key": b["id"],
                    "ticked": b["id"] in ticked
                    if ticked is not None
                    else bool(attested[b["id"]].get("ok")),
                    "attested": attested[b["id"]].get("note", ""),
                }
                for b in blockers
            ]
            row["keys"] = ",".join(b["id"] for b in blockers)
        rows.append(row)
    return rows


@login_required
@require_http_methods(["GET", "POST"])
def review_task(request, task_id: int):
    """The review page: the task as judged, gates, checklist, comments and the decision."""
    if request.method == "POST":
        typed = {}
        try:
            # The form is read against the layer it was shown for; the service checks, on
            # the locked row, that the task is still there (and judged at that revision).
            task = access_task(request.user, task_id)
            layer = selectors.pipeline_layers(project=task.project)[(task.review_layer or 1) - 1]
            typed = decision_typed(
                request.POST,
                checklist=layer.checklist,
                blocker_keys=selectors.blocker_keys(task=task),
            )
            data = decision_input(typed)
            services.review_decide(actor=request.user, task_id=task_id, **decision_arguments(data))
        except DomainError as exc:
            # The page again, with everything the reviewer typed: a refusal loses nothing.
            messages.error(request, str(exc))
            task = access_task(request.user, task_id)
            context = _review_context(request, task, typed)
            return render(request, "review/task.html", context, status=exc.status_code)
        messages.success(
            request,
            {
                "approve": "Approved.",
                "request_changes": "Sent back to the author.",
                "reject": "Rejected.",
            }[typed["outcome"]],
        )
        return redirect("review-queue")
    task = access_task(request.user, task_id)
    return render(request, "review/task.html", _review_context(request, task))


@login_required
@require_POST
def assign(request, task_id: int):
    """A lead assigns the task's layer: the form's data through the API's ``AssignIn``, then
    ``review_assign`` — what ``POST /api/tasks/<id>/assign`` does (``review.api.TaskAssignApi``)."""
    try:
        data = form_input(AssignIn, request.POST)
        services.review_assign(actor=request.user, task_id=task_id, reviewer=data["reviewer"])
        messages.success(request, f"Assigned to {data['reviewer']}.")
    except DomainError as exc:
        messages.error(request, str(exc))
    return redirect("review-task", task_id=task_id)


@login_required
@require_POST
def release(request, assignment_id: int):
    try:
        services.review_release(actor=request.user, assignment_id=assignment_id)
        messages.info(request, "Released: the task is back in the queue.")
    except DomainError as exc:
        messages.error(request, str(exc))
    return redirect("review-queue")


@login_required
@require_GET
def timeline(request, task_id: int):
    """Everything that happened to the task, oldest first. Read-only by construction."""
    task = access_task(request.user, task_id)
    entries = selectors.timeline_entries(task=task)
    return render(request, "review/timeline.html", {"task": task, "entries": entries})


@login_required
@require_POST
def comment_add(request, task_id: int):
    try:
        data = form_input(CommentIn, request.POST)
        services.comment_add(
            actor=request.user,
            task_id=task_id,
            body=data["body"],
            blocker_key=data["blocker_key"],
            parent_id=data["parent"],
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    return redirect_next(request, f"/tasks/{task_id}/#threads")


@login_required
@require_POST
def comment_resolve(request, comment_id: int):
    comment = access_comment(request.user, comment_id)  # 404 before anything is said
    try:
        data = form_input(ResolveIn, request.POST)
        services.comment_set_resolved(
            actor=request.user, comment_id=comment_id, resolved=data["resolved"]
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    return redirect_next(request, f"/tasks/{comment.task_id}/#threads")


@login_required
@require_http_methods(["GET", "POST"])
def notifications(request):
    if request.method == "POST":
        services.notifications_mark_read(user=request.user)
        return redirect("notifications")
    items = selectors.notifications_for(user=request.user)[:100]
    return render(request, "review/notifications.html", {"items": items})


def _pipeline_page(request, project, *, layers, policy, status: int = 200):
    counts = selectors.waiting_per_layer(project=project)
    for position, layer in enumerate(layers, start=1):
        layer["position"] = position
        layer["waiting"] = counts.get(position, 0)
    context = {
        "project": project,
        "layers": layers,
        "is_lead": has_role(request.user, project.pk, Role.LEAD),
        "policy": policy,
        "roles": ["author", "reviewer", "auditor", "lead"],
        "spare": len(layers),
    }
    return render(request, "review/pipeline.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def pipeline(request, project_id: int):
    project = access_project(request.user, project_id)
    if request.method == "POST":
        typed = pipeline_typed(request.POST)
        try:
            data = pipeline_input(typed)
            services.pipeline_update(
                actor=request.user, project_id=project.pk, **pipeline_arguments(data)
            )
        except DomainError as exc:
            # The form again as the lead typed it (removals still ticked): nothing is lost.
            messages.error(request, str(exc))
            typed_policy = {
                "lock_minutes": typed["lock_minutes"],
                "reject_reasons": typed["reject_reasons"],
            }
            return _pipeline_page(
                request,
                project,
                layers=typed["layers"],
                policy=typed_policy,
                status=exc.status_code,
            )
        messages.success(request, "Pipeline saved.")
        return redirect("review-pipeline", project_id=project.pk)
    layers = [
        {
            "name": layer.name,
            "role": layer.role,
            "self_check": layer.self_check,
            "checklist": layer.checklist,
            "gates": layer.gates,
        }
        for layer in selectors.pipeline_layers(project=project)
    ]
    return _pipeline_page(
        request, project, layers=layers, policy=selectors.policy_for(project=project)
    )


# Submit for review is pressed in the authoring workspace; its status line answers there.
WORKSPACE = "authoring/workspace.html"


@login_required
@require_POST
def workspace_submit(request, task_id: int):
    """The workspace's Submit for review: the same service as ``POST /api/tasks/{id}/submit``."""
    try:
        data = form_input(SubmitIn, request.POST)
        services.task_submit(
            actor=request.user, task_id=task_id, expected_version=data["expected_version"]
        )
    except DomainError as exc:
        if request.htmx:
            return render(request, f"{WORKSPACE}#save-status", {"error": str(exc)}, status=400)
        messages.error(request, str(exc))
        return redirect("workspace", task_id=task_id)
    messages.success(request, "Submitted for review.")
    url = reverse("task-detail", args=[task_id])
    if request.htmx:
        response = render(request, f"{WORKSPACE}#save-status", {"submitted": True})
        response["HX-Redirect"] = url
        return response
    return redirect(url)
