"""Review's panel on the task page: the task's threads, each with its replies, and the form
that starts one. Registered in ``ReviewConfig.ready``."""

from hilbench_annotate.panels import register_task_panel

from .selectors import task_threads


def _context(*, task, user) -> dict:
    return {"threads": task_threads(task=task)}


def register() -> None:
    register_task_panel("threads", template="review/_threads.html", context=_context, position=20)
