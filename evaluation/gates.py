"""The evaluation gate: the project's selection thresholds keep the task (models solve it
with full information and fail without), decided by at least the distinct models the policy
asks for — two unless a lead lowered it with a reason (``evaluation.selection``). Its message
names the models that decided (identity and runs), or what is missing. Registered in
``EvaluationConfig.ready``."""

from hilbench_annotate.gates import register_gate

from .selectors import task_selections


def _pass_rate_many(tasks) -> dict[int, tuple[bool, str]]:
    return {
        pk: (selection["decision"] == "keep", f"{selection['decision']}: {selection['reason']}")
        for pk, selection in task_selections(tasks=tasks).items()
    }


def register() -> None:
    register_gate(
        "pass_rate",
        description="model runs keep the task: solved with full information, not without, "
        "by at least two distinct models unless a lead lowered it with a reason",
        check_many=_pass_rate_many,
    )
