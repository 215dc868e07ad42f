from django.conf import settings
from django.db import models

from hilbench_annotate.models import Revision, Task


class JudgeCacheEntry(models.Model):
    """A judge's verdict, kept so the same (judge version, registry, question) always gets the
    same answer — the judge is deterministic by construction, not only by hope."""

    judge_version = models.CharField(max_length=100)
    registry_hash = models.CharField(max_length=64)
    question = models.TextField(help_text="Normalised question")
    blocker_key = models.CharField(max_length=120, null=True, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge_version", "registry_hash", "question"], name="judge_cache_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.judge_version}: {self.question[:60]} → {self.blocker_key}"


class AskHumanRun(models.Model):
    """One evaluation run of one task in ask_human mode: its calls are logged here."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="ask_human_runs")
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    judge_version = models.CharField(max_length=100)
    answer_cap = models.PositiveSmallIntegerField(help_text="Answered questions allowed; 0: no cap")
    label = models.CharField(max_length=200, blank=True, help_text="Model / pass, for the caller")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"ask_human run {self.pk} of task {self.task_id}"


class AskHumanCall(models.Model):
    run = models.ForeignKey(AskHumanRun, on_delete=models.CASCADE, related_name="calls")
    question = models.TextField()
    blocker_key = models.CharField(max_length=120, null=True, blank=True)
    response = models.TextField(blank=True)
    duplicate = models.BooleanField(default=False)
    capped = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]

    def __str__(self) -> str:
        return f"{self.question[:60]} → {self.blocker_key or 'irrelevant'}"
