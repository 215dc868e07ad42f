"""The validators' panels on the task page: whether the task's environment is built (a SWE
task's build, a SQL task's database) with the way to build it, and the latest run of the
structural checks (not a judge-recall measurement, which is a validation run too), or the
button that starts one. Registered in ``ValidatorsConfig.ready``."""

from __future__ import annotations

from hilbench_annotate.errors import DomainError
from hilbench_annotate.panels import register_task_panel

from .environments import environment_key, ready_environment
from .models import EnvironmentBuild
from .services import latest_run


def _context(*, task, user) -> dict:
    return {"validation_run": latest_run(task, structural=True)}


def environment_state(task) -> dict:
    """What the task page says of the task's environment: ``state`` (SWE: built, building,
    failed or not built; SQL: ready or absent), when, the build to link and why, if it cannot
    be built. Two queries; a built SWE environment is found on disk (its ready link)."""
    if task.domain == "sql":
        env = getattr(task, "sql_environment", None)
        database = env.database if env is not None else None
        if database is None:
            return {"state": "absent", "why": "The task has no database: import it again."}
        if not database.path.is_file():
            return {"state": "absent", "why": f"The database file of {database} is missing."}
        return {"state": "ready", "when": database.created_at, "database": database}
    env = getattr(task, "swe_environment", None)
    if env is None or env.repository is None:
        return {"state": "absent", "why": "The task has no repository, so nothing to build."}
    try:
        key = environment_key(env)
    except DomainError as exc:
        return {"state": "absent", "why": str(exc)}
    builds = list(EnvironmentBuild.objects.filter(key=key).order_by("-created_at", "-id")[:20])
    latest = builds[0] if builds else None
    try:
        built = ready_environment(key) is not None
    except (DomainError, OSError) as exc:  # the sandbox folder unreachable: say so, no 500
        return {"state": "absent", "why": f"Whether it is built cannot be read here: {exc}"}
    succeeded = next((b for b in builds if b.status == EnvironmentBuild.Status.SUCCEEDED), None)
    if latest is not None and not latest.is_finished:
        state = "building"
    elif built:
        state = "built"
    elif latest is not None and latest.status == EnvironmentBuild.Status.FAILED:
        state = "failed"
    else:
        state = "not_built"
    when = None
    if state == "built" and succeeded is not None:
        when = succeeded.finished_at
    elif latest is not None:
        when = latest.finished_at or latest.started_at or latest.created_at
    return {"state": state, "when": when, "build": latest, "built": built, "key": key}


def _environment_context(*, task, user) -> dict:
    return {"environment_state": environment_state(task)}


def register() -> None:
    register_task_panel(
        "environment_state",
        template="validators/_environment_panel.html",
        context=_environment_context,
        position=5,
    )
    register_task_panel(
        "structural_checks",
        template="validators/_task_panel.html",
        context=_context,
        position=10,
    )
