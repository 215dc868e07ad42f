from django.urls import path

from evaluation import views, views_failures

urlpatterns = [
    path("evaluation/", views.evaluation_home, name="evaluation-home"),
    path(
        "projects/<int:project_id>/evaluation/", views.project_evaluation, name="evaluation-project"
    ),
    path(
        "projects/<int:project_id>/evaluation/endpoints/",
        views.endpoint_add,
        name="evaluation-endpoint-add",
    ),
    path(
        "projects/<int:project_id>/evaluation/runs/", views.run_start, name="evaluation-run-start"
    ),
    path(
        "projects/<int:project_id>/evaluation/studies/",
        views.study_start,
        name="evaluation-study-start",
    ),
    path(
        "projects/<int:project_id>/evaluation/results/",
        views.results_upload,
        name="evaluation-results-upload",
    ),
    path(
        "projects/<int:project_id>/evaluation/scores/",
        views.scores_upload,
        name="evaluation-scores-upload",
    ),
    path(
        "projects/<int:project_id>/evaluation/policy/",
        views.policy_update,
        name="evaluation-policy",
    ),
    path(
        "projects/<int:project_id>/evaluation/leaderboard.csv",
        views.leaderboard_csv,
        name="evaluation-leaderboard-csv",
    ),
    path("evaluation/runs/<int:run_id>/", views.run_detail, name="evaluation-run"),
    path(
        "tasks/<int:task_id>/selection/",
        views.task_selection_view,
        name="evaluation-task-selection",
    ),
]

urlpatterns += [
    path("evaluation/passes/<int:pass_id>/", views_failures.pass_detail, name="evaluation-pass"),
    path(
        "evaluation/passes/<int:pass_id>/label/",
        views_failures.pass_label,
        name="evaluation-pass-label",
    ),
    path("evaluation/compare/", views_failures.pass_compare, name="evaluation-compare"),
    path(
        "projects/<int:project_id>/failures/", views_failures.failures, name="evaluation-failures"
    ),
    path(
        "projects/<int:project_id>/failures.csv",
        views_failures.failures_csv,
        name="evaluation-failures-csv",
    ),
    path(
        "projects/<int:project_id>/failures/taxonomy/",
        views_failures.taxonomy_edit,
        name="evaluation-taxonomy",
    ),
    path(
        "projects/<int:project_id>/failures/llm/",
        views_failures.llm_labelling_start,
        name="evaluation-llm-labelling",
    ),
]
