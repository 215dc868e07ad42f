from django.urls import path

from validators import views

urlpatterns = [
    path("tasks/<int:task_id>/validation/", views.run_start, name="validation-start"),
    path("tasks/<int:task_id>/validation/<int:run_id>/", views.run_detail, name="validation-run"),
]
