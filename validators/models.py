from django.conf import settings
from django.db import models

from hilbench_annotate.jobs import Job
from hilbench_annotate.models import Revision, Task


class ValidationRun(Job):
    """One run of structural checks on one revision of a task; the worker fills it in.

    Its outcome is its status (passed, failed: a check failed; error: a check or the run
    crashed), so it has statuses of its own.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        ERROR = "error", "Error"

    FINISHED = (Status.PASSED, Status.FAILED, Status.ERROR)
    CRASHED = Status.ERROR

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="validation_runs")
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="validation_runs")
    checks = models.JSONField(help_text="Names of the check groups to run")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    log = models.TextField(blank=True)

    class Meta(Job.Meta):
        indexes = [models.Index(fields=["task", "-created_at"]), models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"run {self.pk} of task {self.task_id} ({self.status})"


class ValidationResult(models.Model):
    """One check's outcome within a run; at most one per check, so redelivery adds nothing."""

    run = models.ForeignKey(ValidationRun, on_delete=models.CASCADE, related_name="results")
    group = models.CharField(max_length=50)
    check_name = models.CharField(max_length=80)
    outcome = models.CharField(max_length=10)
    message = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "check_name"], name="one_result_per_check"),
        ]

    def __str__(self) -> str:
        return f"{self.check_name}: {self.outcome}"


class EnvironmentBuild(Job):
    """One build of the environment a specification describes (``envspec.build_key``).

    Builds are cached by key under ``SANDBOX_ROOT/environments/<key>`` and shared by every
    task whose specification builds the same thing; a row records each attempt, its steps'
    log, and which step failed.
    """

    key = models.CharField(max_length=64, db_index=True)
    backend = models.CharField(max_length=20, default="local")
    spec = models.JSONField(default=dict)
    repository = models.ForeignKey(
        "hilbench_annotate.Repository", on_delete=models.SET_NULL, null=True, blank=True
    )
    commit = models.CharField(max_length=64, help_text="The repository is installed at this commit")
    task = models.ForeignKey(
        Task,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="environment_builds",
        help_text="The task it was started from",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    step = models.CharField(max_length=40, blank=True, help_text="The step running, or failed")
    log = models.TextField(blank=True)
    interpreter = models.CharField(max_length=200, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    rebuild = models.BooleanField(default=False, help_text="Asked to build it again")

    class Meta(Job.Meta):
        indexes = [models.Index(fields=["key", "-created_at"])]

    def __str__(self) -> str:
        return f"environment {self.key} ({self.status})"
