from django.urls import path

from judge import views

urlpatterns = [
    path("tasks/<int:task_id>/judge/", views.questions, name="judge-questions"),
    path(
        "tasks/<int:task_id>/judge/questions/",
        views.question_create,
        name="judge-question-add",
    ),
    path("tasks/<int:task_id>/judge/generate/", views.generate, name="judge-generate"),
    path(
        "tasks/<int:task_id>/judge/questions/<int:question_id>/label/",
        views.label,
        name="judge-label",
    ),
    path(
        "tasks/<int:task_id>/judge/questions/<int:question_id>/label/change/",
        views.label_change_view,
        name="judge-label-change",
    ),
    path(
        "tasks/<int:task_id>/judge/questions/<int:question_id>/label/withdraw/",
        views.label_withdraw_view,
        name="judge-label-withdraw",
    ),
    path("tasks/<int:task_id>/judge/measure/", views.measure, name="judge-measure"),
    path("tasks/<int:task_id>/judge/accept/", views.accept, name="judge-accept"),
    path("projects/<int:project_id>/judge-report/", views.report, name="judge-report"),
    path("projects/<int:project_id>/judge-calibrate/", views.calibrate, name="judge-calibrate"),
]
