"""Start a validation run and watch it (the task page's validation card, polled by htmx); build
a SWE task's environment and follow the build's log.

Runs that execute a task's code — structural checks, environment builds — are started by the
task's author or a project lead (``access_task(..., edit=True)``); every reader of the task
sees their results."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from hilbench_annotate.access import BAD_ID, access_task, can_edit_task, not_found
from hilbench_annotate.envspec import spec_clean
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input

from .environments import environment_build_start, environment_key, ready_environment
from .models import EnvironmentBuild
from .requirements import conda_unavailable, requirements_at
from .selectors import (
    build_in_progress,
    earlier_builds,
    environment_build,
    latest_build,
    project_swe_environments,
    validation_run,
)
from .serializers import EnvironmentBuildIn, ValidationRunIn
from .services import validation_run_start

TEMPLATE = "validators/run.html"


@login_required
@require_POST
def run_start(request, task_id: int):
    task = access_task(request.user, task_id, edit=True)
    try:
        checks = form_input(ValidationRunIn, request.POST)["checks"] or None
        run = validation_run_start(task=task, actor=request.user, checks=checks)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("task-detail", task_id=task.pk)
    if request.htmx:
        return render(request, TEMPLATE + "#run", {"task": task, "run": run, "can_edit": True})
    return redirect("validation-run", task_id=task.pk, run_id=run.pk)


@login_required
@require_GET
def run_detail(request, task_id: int, run_id: int):
    task = access_task(request.user, task_id)
    run = validation_run(task=task, run_id=run_id)
    context = {"task": task, "run": run, "can_edit": can_edit_task(request.user, task)}
    if not run.is_finished:
        context["building"] = build_in_progress(task=task)
    if request.htmx:
        response = render(request, TEMPLATE + "#run", context)
        if run.is_finished:
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, TEMPLATE, context)


BUILD_TEMPLATE = "validators/build.html"


def environment_context(task) -> dict:
    """The Environment tab's build card: the current specification's build, if any."""
    env = task.swe_environment
    try:
        key = environment_key(env)
        spec = spec_clean(env.environment_spec)
    except DomainError as exc:
        return {"build_problem": str(exc)}
    return {
        **_what_installs(env, spec),
        "build_key": key,
        "built": ready_environment(key) is not None,
        "build": latest_build(key=key),
        "sharing": _tasks_sharing(task, key),
    }


def _what_installs(env, spec: dict) -> dict:
    """What the build installs that the form does not show as lines: the repository's
    requirement files resolved (every line pip will read), or why an environment of this
    kind cannot build here."""
    context: dict = {}
    if spec["conda_files"]:
        context["unbuildable"] = conda_unavailable(spec["conda_files"])
    if spec["requirement_files"] and env.repository is not None:
        commit = spec["requirements_commit"] or env.base_commit
        found, problem = requirements_at(
            env.repository.path, commit, tuple(spec["requirement_files"])
        )
        context.update(requirements=found, requirements_problem=problem)
    return context


def _tasks_sharing(task, key: str) -> int:
    """How many SWE tasks of the project build this same environment."""
    count = 0
    for env in project_swe_environments(task=task):
        try:
            count += environment_key(env) == key
        except DomainError:
            continue
    return count


@login_required
@require_POST
def build_start(request, task_id: int):
    task = access_task(request.user, task_id, edit=True)
    if task.domain != "swe":
        raise not_found("environment")
    try:
        data = form_input(EnvironmentBuildIn, request.POST)
        build = environment_build_start(
            swe_environment=task.swe_environment, actor=request.user, force=data["rebuild"]
        )
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("workspace", task_id=task.pk)
    return redirect("environment-build", build_id=build.pk)


@login_required
@require_GET
def build_detail(request, build_id: int):
    try:
        build = environment_build(build_id=build_id)
    except (EnvironmentBuild.DoesNotExist, *BAD_ID):
        raise not_found("environment build") from None
    if build.task_id is None:
        raise not_found("environment build")
    task = access_task(request.user, build.task_id)
    context = {
        "build": build,
        "task": task,
        "can_edit": can_edit_task(request.user, task),
        "earlier": earlier_builds(build=build, limit=10),
    }
    if request.htmx:
        response = render(request, BUILD_TEMPLATE + "#build", context)
        return HttpResponseStopPolling(response.content) if build.is_finished else response
    return render(request, BUILD_TEMPLATE, context)


@login_required
@require_GET
def environment_card(request, task_id: int):
    """The Environment tab's build card (loaded by htmx): the current specification's
    environment, built or not, and the button that builds it."""
    task = access_task(request.user, task_id)
    if task.domain != "swe":
        raise not_found("environment")
    context = {"task": task, "can_edit": can_edit_task(request.user, task)}
    context.update(environment_context(task))
    return render(request, BUILD_TEMPLATE + "#card", context)
