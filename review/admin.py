from django.contrib import admin

from review import models


@admin.register(models.ReviewLayer)
class ReviewLayerAdmin(admin.ModelAdmin):
    list_display = ["project", "position", "name", "role", "self_check"]
    list_filter = ["project"]


@admin.register(models.ReviewPolicy)
class ReviewPolicyAdmin(admin.ModelAdmin):
    list_display = ["project", "lock_minutes"]


@admin.register(models.ReviewAssignment)
class ReviewAssignmentAdmin(admin.ModelAdmin):
    list_display = ["task", "layer", "reviewer", "status", "expires_at"]
    list_filter = ["status"]
    raw_id_fields = ["task"]


@admin.register(models.ReviewDecision)
class ReviewDecisionAdmin(admin.ModelAdmin):
    list_display = ["task", "layer", "reviewer", "outcome", "created_at"]
    list_filter = ["outcome"]
    raw_id_fields = ["task", "revision"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Comment)
class CommentAdmin(admin.ModelAdmin):
    """Threads are part of a task's history: readable here, never rewritten."""

    list_display = ["task", "author", "blocker_key", "resolved", "created_at"]
    raw_id_fields = ["task", "parent"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["user", "kind", "text", "read_at", "created_at"]
