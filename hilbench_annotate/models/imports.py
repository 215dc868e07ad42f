from django.conf import settings
from django.db import models

from .projects import Project


class ImportJob(models.Model):
    """An import started from the browser; the worker runs it and writes the report here."""

    class Kind(models.TextChoices):
        BIRD = "bird", "BIRD questions + databases"
        SWEBENCH = "swebench", "SWE-bench instances + repository"
        HILBENCH = "hilbench", "HiL-Bench task folders"
        BUNDLE = "bundle", "Export bundle (ours or the release's)"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    upload_dir = models.CharField(max_length=300, help_text="Relative to UPLOAD_STORE")
    options = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} import #{self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED}
