"""The evaluation gate: the project's selection thresholds keep the task (models solve it
with full information and fail without). Registered in ``EvaluationConfig.ready``."""

from hilbench_annotate.gates import register_gate

from .selectors import task_selection


def _pass_rate(task) -> tuple[bool, str]:
    selection = task_selection(task)
    return selection["decision"] == "keep", f"{selection['decision']}: {selection['reason']}"


def register() -> None:
    register_gate(
        "pass_rate",
        _pass_rate,
        description="model runs keep the task: solved with full information, not without",
    )
