from django.urls import path

from authoring import views, views_restore

urlpatterns = [
    path("", views.workspace, name="workspace"),
    path("save/", views.workspace_save_view, name="workspace-save"),
    path("lint/", views.workspace_lint, name="workspace-lint"),
    path("diff/<slug:section>/", views.spec_diff, name="workspace-spec-diff"),
    path("blocker-form/", views.blocker_form, name="workspace-blocker-form"),
    path("waive/", views.waive, name="workspace-waive"),
    path("preview/", views.preview, name="workspace-preview"),
    path("revisions/", views.revisions, name="workspace-revisions"),
    path("revisions/restore/", views_restore.restore, name="workspace-revision-restore"),
    path("sql/query/", views.sql_query, name="workspace-sql-query"),
    path("sql/format/", views.sql_format, name="workspace-sql-format"),
    path("sql/golden/", views.sql_golden, name="workspace-sql-golden"),
    path("sql/tables/<str:table>/", views.sql_table, name="workspace-sql-table"),
    path("repo/", views.repo_browse, name="workspace-repo"),
    path("repo/edit/", views.repo_edit, name="workspace-repo-edit"),
    path("setup-patch/upload/", views.setup_patch_upload, name="workspace-setup-patch-upload"),
]
