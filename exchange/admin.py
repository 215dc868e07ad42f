from django.contrib import admin

from exchange import models


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "project", "status", "created_by", "created_at"]
    list_filter = ["kind", "status"]
