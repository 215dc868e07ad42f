"""The authoring gate: no lint error on the current revision is left neither fixed nor waived.
Registered in ``AuthoringConfig.ready``."""

from hilbench_annotate.gates import register_gate
from hilbench_annotate.services import task_snapshot

from .checks import as_dicts, draft_findings
from .services import open_findings


def _lint_clean(task) -> tuple[bool, str]:
    blocking = open_findings(task, as_dicts(draft_findings(task, task_snapshot(task))))
    if blocking:
        return False, f"{len(blocking)} lint error(s) neither fixed nor waived"
    return True, "no open lint errors"


def register() -> None:
    register_gate("lint_clean", _lint_clean, description="no open lint error (fixed or waived)")
