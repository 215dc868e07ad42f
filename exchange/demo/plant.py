"""Planting the demo's blockers in its blocked SQL task: the specification as blocked and
each blocker, through the core services (the demo seed and the judge benchmark alike)."""

from exchange.demo.blocked_task import BLOCKED_QUESTION, DEMO_BLOCKERS
from hilbench_annotate import services
from hilbench_annotate.models import Task


def plant_demo_blockers(task: Task, actor) -> Task:
    """The blocked question and ``DEMO_BLOCKERS`` on ``task`` (inside the caller's
    transaction), one revision each."""
    services.task_update(
        task=task,
        actor=actor,
        expected_version=task.version,
        blocked_spec={"question": BLOCKED_QUESTION, "evidence": ""},
    )
    for blocker in DEMO_BLOCKERS:
        services.blocker_create(task=task, actor=actor, expected_version=task.version, **blocker)
    return task
