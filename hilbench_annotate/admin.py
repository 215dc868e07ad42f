from django.contrib import admin

from hilbench_annotate import models


class ReadOnlyAdmin(admin.ModelAdmin):
    """For append-only rows: visible to admins, never changed through the app."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]


@admin.register(models.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user", "project"]


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]


class TriggerQuestionInline(admin.TabularInline):
    model = models.TriggerQuestion
    extra = 0


@admin.register(models.Blocker)
class BlockerAdmin(admin.ModelAdmin):
    list_display = ["key", "task", "type", "subtype"]
    list_filter = ["type"]
    search_fields = ["key", "description"]
    raw_id_fields = ["task"]
    inlines = [TriggerQuestionInline]


@admin.register(models.TriggerQuestion)
class TriggerQuestionAdmin(admin.ModelAdmin):
    list_display = ["text", "blocker"]
    raw_id_fields = ["blocker"]
    search_fields = ["text"]


@admin.register(models.Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "domain", "status", "author", "version", "updated_at"]
    list_filter = ["domain", "status", "project", "source"]
    search_fields = ["title", "source_id"]
    raw_id_fields = ["author"]
    readonly_fields = ["version", "blocker_count", "created_at", "updated_at"]
    list_select_related = ["project", "author"]


@admin.register(models.SqlEnvironment)
class SqlEnvironmentAdmin(admin.ModelAdmin):
    list_display = ["db_id", "task"]
    raw_id_fields = ["task", "database"]


@admin.register(models.SweEnvironment)
class SweEnvironmentAdmin(admin.ModelAdmin):
    list_display = ["repo_name", "base_commit", "task"]
    raw_id_fields = ["task", "repository"]


@admin.register(models.Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = ["name", "origin", "mirrored_at"]


@admin.register(models.SqlDatabase)
class SqlDatabaseAdmin(admin.ModelAdmin):
    list_display = ["db_id", "sha256", "size_bytes", "created_at"]
    readonly_fields = ["sha256", "size_bytes", "storage_path"]


@admin.register(models.Revision)
class RevisionAdmin(ReadOnlyAdmin):
    list_display = ["task", "number", "author", "reason", "created_at"]
    raw_id_fields = ["task"]


@admin.register(models.TaskEvent)
class TaskEventAdmin(ReadOnlyAdmin):
    list_display = ["kind", "project", "task", "actor", "created_at"]
    list_filter = ["kind"]
