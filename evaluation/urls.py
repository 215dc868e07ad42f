from django.urls import path

from evaluation.views import failures, runs

urlpatterns = [
    path("evaluation/", runs.evaluation_home, name="evaluation-home"),
    path(
        "projects/<int:project_id>/evaluation/", runs.project_evaluation, name="evaluation-project"
    ),
    path(
        "projects/<int:project_id>/evaluation/endpoints/",
        runs.endpoint_add,
        name="evaluation-endpoint-add",
    ),
    path("projects/<int:project_id>/evaluation/runs/", runs.run_start, name="evaluation-run-start"),
    path(
        "projects/<int:project_id>/evaluation/studies/",
        runs.study_start,
        name="evaluation-study-start",
    ),
    path(
        "projects/<int:project_id>/evaluation/results/",
        runs.results_upload,
        name="evaluation-results-upload",
    ),
    path(
        "projects/<int:project_id>/evaluation/scores/",
        runs.scores_upload,
        name="evaluation-scores-upload",
    ),
    path(
        "projects/<int:project_id>/evaluation/policy/",
        runs.policy_update,
        name="evaluation-policy",
    ),
    path(
        "projects/<int:project_id>/evaluation/leaderboard.csv",
        runs.leaderboard_csv,
        name="evaluation-leaderboard-csv",
    ),
    path("evaluation/runs/<int:run_id>/", runs.run_detail, name="evaluation-run"),
    path("evaluation/runs/<int:run_id>/cancel/", runs.run_cancel, name="evaluation-run-cancel"),
    path(
        "projects/<int:project_id>/evaluation/harbor-runs/",
        runs.harbor_run_start_view,
        name="evaluation-harbor-run-start",
    ),
    path(
        "tasks/<int:task_id>/selection/",
        runs.task_selection_view,
        name="evaluation-task-selection",
    ),
]

urlpatterns += [
    path("evaluation/passes/<int:pass_id>/", failures.pass_detail, name="evaluation-pass"),
    path(
        "evaluation/passes/<int:pass_id>/label/",
        failures.pass_label,
        name="evaluation-pass-label",
    ),
    path("evaluation/compare/", failures.pass_compare, name="evaluation-compare"),
    path("projects/<int:project_id>/failures/", failures.failures, name="evaluation-failures"),
    path(
        "projects/<int:project_id>/failures.csv",
        failures.failures_csv,
        name="evaluation-failures-csv",
    ),
    path(
        "projects/<int:project_id>/failures/taxonomy/",
        failures.taxonomy_edit,
        name="evaluation-taxonomy",
    ),
    path(
        "projects/<int:project_id>/failures/llm/",
        failures.llm_labelling_start,
        name="evaluation-llm-labelling",
    ),
]
