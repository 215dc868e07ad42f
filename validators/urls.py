from django.urls import path

from validators import views

urlpatterns = [
    path("tasks/<int:task_id>/validation/", views.run_start, name="validation-start"),
    path("tasks/<int:task_id>/validation/<int:run_id>/", views.run_detail, name="validation-run"),
    path(
        "tasks/<int:task_id>/environment/build/", views.build_start, name="environment-build-start"
    ),
    path("environments/builds/<int:build_id>/", views.build_detail, name="environment-build"),
    path("tasks/<int:task_id>/environment/", views.environment_card, name="environment-card"),
]
