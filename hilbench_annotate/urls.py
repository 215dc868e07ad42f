from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from hilbench_annotate import views

urlpatterns = [
    path("", views.task_list, name="task-list"),
    path("tasks/bulk/", views.task_bulk, name="task-bulk"),
    path("tasks/<int:task_id>/", views.task_detail, name="task-detail"),
    path("tasks/<int:task_id>/tags/", views.task_tags, name="task-tags"),
    path("tasks/<int:task_id>/edit/", include("authoring.urls")),
    path("tokens/", views.token_list, name="token-list"),
    path("login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("review.urls")),
    path("", include("validators.urls")),
    path("", include("judge.urls")),
    path("", include("evaluation.urls")),
    path("", include("exchange.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("hilbench_annotate.api")),
    path("api/", include("exchange.api")),
    path("api/", include("review.api")),
    path("api/", include("judge.api")),
    path("api/", include("evaluation.api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline <script> (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
