"""The validators' bulk task action on the task list: run the structural checks of each
selected task, one job per task, as the task page's button does. Registered in
``ValidatorsConfig.ready``."""

from hilbench_annotate.bulk_actions import BulkOutcome, register_bulk_action
from hilbench_annotate.vocabulary import Role

from .services import validation_runs_start


def _start(*, user, tasks, params) -> BulkOutcome:
    # The task page offers the button to whoever may change the task; the service asks the
    # same rule of each task and skips, with why, those ``user`` may not change.
    runs, skipped = validation_runs_start(tasks=tasks, actor=user)
    return BulkOutcome(done=len(runs), skipped=skipped)


def register() -> None:
    register_bulk_action(
        "structural_checks",
        label="Run structural checks",
        apply=_start,
        roles=(Role.AUTHOR, Role.LEAD),
        done_text="Structural checks started for {tasks} (one job each)",
        position=40,
    )
