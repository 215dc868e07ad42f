"""The validators' panel on the task page: the latest run of the structural checks (not a
judge-recall measurement, which is a validation run too), or the button that starts one.
Registered in ``ValidatorsConfig.ready``."""

from hilbench_annotate.panels import register_task_panel

from .services import latest_run


def _context(*, task, user) -> dict:
    return {"validation_run": latest_run(task, structural=True)}


def register() -> None:
    register_task_panel(
        "structural_checks",
        template="validators/_task_panel.html",
        context=_context,
        position=10,
    )
