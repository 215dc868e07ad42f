from django.conf import settings
from django.db import models

from hilbench_annotate.models import Task


class LintWaiver(models.Model):
    """An author's reasoned decision to submit despite one lint finding.

    Matched to findings by ``fingerprint`` (rule and field), so it holds across saves
    until the finding disappears or the waiver is withdrawn.
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="lint_waivers")
    fingerprint = models.CharField(max_length=300)
    reason = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "fingerprint"], name="waiver_unique_finding"),
            models.CheckConstraint(condition=~models.Q(reason=""), name="waiver_needs_reason"),
        ]

    def __str__(self) -> str:
        return f"{self.fingerprint} waived on task {self.task_id}"


class LintResult(models.Model):
    """Lint findings of a saved task state, kept by a hash of everything they depend on
    (``authoring.lint_cache``): an export reads the lint gate of thousands of tasks, and a
    task that has not changed since it was last linted is not linted again."""

    key = models.CharField(max_length=64, unique=True)
    findings = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"lint {self.key[:12]}"
