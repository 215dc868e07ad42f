from django.contrib import admin

from authoring.models import LintWaiver


@admin.register(LintWaiver)
class LintWaiverAdmin(admin.ModelAdmin):
    list_display = ["task", "fingerprint", "created_by", "created_at"]
    raw_id_fields = ["task"]
