from django.urls import path

from authoring.views import lint, repository, revisions, sql, workspace

urlpatterns = [
    path("", workspace.workspace, name="workspace"),
    path("save/", workspace.workspace_save_view, name="workspace-save"),
    path("lint/", lint.workspace_lint, name="workspace-lint"),
    path("diff/<slug:section>/", workspace.spec_diff, name="workspace-spec-diff"),
    path("blocker-form/", workspace.blocker_form, name="workspace-blocker-form"),
    path("waive/", lint.waive, name="workspace-waive"),
    path("preview/", workspace.preview, name="workspace-preview"),
    path("revisions/", revisions.revisions, name="workspace-revisions"),
    path("revisions/restore/", revisions.restore, name="workspace-revision-restore"),
    path("sql/query/", sql.sql_query, name="workspace-sql-query"),
    path("sql/format/", sql.sql_format, name="workspace-sql-format"),
    path("sql/golden/", sql.sql_golden, name="workspace-sql-golden"),
    path("sql/tables/<str:table>/", sql.sql_table, name="workspace-sql-table"),
    path("repo/", repository.repo_browse, name="workspace-repo"),
    path("repo/edit/", repository.repo_edit, name="workspace-repo-edit"),
    path("setup-patch/upload/", repository.setup_patch_upload, name="workspace-setup-patch-upload"),
]
