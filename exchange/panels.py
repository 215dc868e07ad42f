"""The exchange's panel on the task page: a task folder's own verifier (``tests/``) beside
the one the app generates, and its acceptance. Registered in ``ExchangeConfig.ready``."""

from hilbench_annotate.panels import register_task_panel

from .selectors import uploaded_verifier


def _context(*, task, user) -> dict:
    return {"uploaded_verifier": uploaded_verifier(task=task, user=user)}


def register() -> None:
    register_task_panel(
        "uploaded_verifier",
        template="exchange/_verifier_panel.html",
        context=_context,
        position=15,
    )
