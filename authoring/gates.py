"""The authoring gate: no lint error on the current revision is left neither fixed nor waived.
Registered in ``AuthoringConfig.ready``."""

from hilbench_annotate.gates import register_gate
from hilbench_annotate.selectors import current_snapshots
from hilbench_annotate.services import task_snapshots

from .lint_cache import snapshot_findings
from .services import open_findings_many


def _lint_clean_many(tasks) -> dict[int, tuple[bool, str]]:
    """Lint errors of each task's current revision (linted once per state, ``lint_cache``)
    not covered by a waiver: what blocks submission and export."""
    snapshots = current_snapshots(task_ids=(task.pk for task in tasks))
    unrevised = [task for task in tasks if task.pk not in snapshots]
    if unrevised:
        snapshots |= task_snapshots(unrevised)
    blocking = open_findings_many(snapshot_findings(tasks, snapshots))
    return {
        pk: (False, f"{len(errors)} lint error(s) neither fixed nor waived")
        if errors
        else (True, "no open lint errors")
        for pk, errors in blocking.items()
    }


def register() -> None:
    register_gate(
        "lint_clean",
        description="no open lint error (fixed or waived)",
        check_many=_lint_clean_many,
    )
