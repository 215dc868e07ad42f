from django.contrib import admin

from validators.models import ValidationResult, ValidationRun


class ResultInline(admin.TabularInline):
    model = ValidationResult
    extra = 0
    readonly_fields = ["group", "check_name", "outcome", "message"]


@admin.register(ValidationRun)
class ValidationRunAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "status", "checks", "worker", "attempts", "created_at"]
    list_filter = ["status"]
    raw_id_fields = ["task", "revision"]
    inlines = [ResultInline]
