"""Every write of the evaluation app: model runs and imports (``runs``), the failure
taxonomy and its labels (``failures``)."""

from .failures import (
    failure_label_set,
    labelling_run_execute,
    labelling_run_start,
    rubric,
    taxonomy,
    taxonomy_update,
)
from .runs import (
    endpoint_create,
    evaluation_run_execute,
    evaluation_run_start,
    results_import_start,
    results_upload_start,
    selection_policy_update,
    sql_task_context,
    support_import,
    support_study_execute,
    support_study_start,
    support_upload,
)

__all__ = [
    "endpoint_create",
    "evaluation_run_execute",
    "evaluation_run_start",
    "failure_label_set",
    "labelling_run_execute",
    "labelling_run_start",
    "results_import_start",
    "results_upload_start",
    "rubric",
    "selection_policy_update",
    "sql_task_context",
    "support_import",
    "support_study_execute",
    "support_study_start",
    "support_upload",
    "taxonomy",
    "taxonomy_update",
]
