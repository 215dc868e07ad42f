from django.urls import path

from exchange import views, views_data

urlpatterns = [
    path("imports/", views.import_list, name="import-list"),
    path("imports/<int:job_id>/", views.import_detail, name="import-detail"),
    path("exports/", views.export_list, name="export-list"),
    path("exports/<int:job_id>/", views.export_detail, name="export-detail"),
    path("exports/<int:job_id>/download/", views.export_download, name="export-download"),
    path("projects/<int:project_id>/data/", views_data.project_data, name="project-data"),
    path(
        "projects/<int:project_id>/data/<str:table>.<str:fmt>",
        views_data.project_data_download,
        name="project-data-download",
    ),
    path(
        "tasks/<int:task_id>/verifier/accept",
        views.verifier_accept_view,
        name="verifier-accept",
    ),
    path(
        "tasks/<int:task_id>/verifier/withdraw",
        views.verifier_withdraw_view,
        name="verifier-withdraw",
    ),
]
