"""The validators' gates: each check group green on the current revision, and "structural"
(every structural group of the task's domain). Registered in ``ValidatorsConfig.ready``."""

from hilbench_annotate.gates import register_gate

from .registry import GROUPS, groups_for
from .services import gate_for


def _structural(task) -> tuple[bool, str]:
    """Every structural check group of the task's domain passed on the current revision."""
    reds = []
    for group in groups_for(task.domain):
        green, message = gate_for(group)(task)
        if not green:
            reds.append(f"{group}: {message}")
    return (not reds, "; ".join(reds) or "every structural check passed on the current revision")


def register() -> None:
    register_gate(
        "structural",
        _structural,
        description="every structural check of the task's domain passed on this revision",
    )
    for name, group in GROUPS.items():
        if group.structural:
            register_gate(
                name, gate_for(name), description=f"the {name} checks passed on this revision"
            )
