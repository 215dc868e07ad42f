"""The validators' gates: each check group green on the current revision, and "structural"
(every structural group of the task's domain). Registered in ``ValidatorsConfig.ready``."""

from hilbench_annotate.gates import register_gate

from .registry import GROUPS, groups_for
from .services import gate_many_for, group_verdicts


def _structural_many(tasks) -> dict[int, tuple[bool, str]]:
    """Every structural check group of each task's domain passed on its current revision."""
    verdicts = {}
    for domain in {task.domain for task in tasks}:
        groups = groups_for(domain)
        of_domain = [task for task in tasks if task.domain == domain]
        for pk, by_group in group_verdicts(of_domain, groups).items():
            reds = [f"{g}: {by_group[g][1]}" for g in groups if not by_group[g][0]]
            verdicts[pk] = (
                not reds,
                "; ".join(reds) or "every structural check passed on the current revision",
            )
    return verdicts


def register() -> None:
    register_gate(
        "structural",
        description="every structural check of the task's domain passed on this revision",
        check_many=_structural_many,
    )
    for name, group in GROUPS.items():
        if group.structural:
            register_gate(
                name,
                description=f"the {name} checks passed on this revision",
                check_many=gate_many_for(name),
            )
