from django.contrib import admin

from judge.models import AskHumanCall, AskHumanRun, JudgeCacheEntry


@admin.register(AskHumanRun)
class AskHumanRunAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "judge_version", "answer_cap", "created_by", "created_at"]
    raw_id_fields = ["task", "revision"]


@admin.register(AskHumanCall)
class AskHumanCallAdmin(admin.ModelAdmin):
    list_display = ["run", "question", "blocker_key", "duplicate", "capped", "error", "created_at"]
    list_filter = ["duplicate", "capped"]


@admin.register(JudgeCacheEntry)
class JudgeCacheEntryAdmin(admin.ModelAdmin):
    list_display = ["judge_version", "registry_hash", "question", "blocker_key"]
