"""Every write of the evaluation app: model endpoints and selection thresholds
(``endpoints``), built-in SQL runs (``runs``), imported results (``results_import``), the
support-seeking study (``support_study``), the failure taxonomy and its labels
(``failures``)."""

from .endpoints import endpoint_create, selection_policy_update
from .failures import (
    failure_label_set,
    labelling_run_execute,
    labelling_run_start,
    rubric,
    taxonomy,
    taxonomy_update,
)
from .harbor import evaluation_run_cancel, harbor_run_start
from .results_import import results_import_start, results_upload_start
from .runs import evaluation_run_execute, evaluation_run_start, sql_task_context
from .support_study import (
    support_import,
    support_study_execute,
    support_study_start,
    support_upload,
)

__all__ = [
    "endpoint_create",
    "evaluation_run_cancel",
    "harbor_run_start",
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
