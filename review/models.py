from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.vocabulary import Role

DEFAULT_REJECT_REASONS = [
    "Blockers are guessable or inferable from the environment",
    "Task is not solvable with full information",
    "Resolution is not exact",
    "Base task is broken or ambiguous beyond the planted blockers",
    "Duplicate of another task",
]


class ReviewPolicy(models.Model):
    """A project's review settings, editable by its leads."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="review_policy")
    lock_minutes = models.PositiveIntegerField(
        default=60, help_text="How long a taken task stays locked to its reviewer"
    )
    reject_reasons = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"Review policy of {self.project}"


class ReviewLayer(models.Model):
    """One human review layer of a project's pipeline, in order (position 1 is first)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="review_layers")
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=20, choices=Role.choices)
    self_check = models.BooleanField(
        default=False, help_text="Done by the task's own author (the author self-check)"
    )
    checklist = models.JSONField(default=list, help_text="Items answered pass/fail with a note")
    gates = models.JSONField(default=list, help_text="Automated checks that must be green first")

    class Meta:
        ordering = ["project", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "position"], name="layer_unique_position"),
            models.CheckConstraint(condition=Q(position__gte=1), name="layer_position_pos"),
        ]

    def __str__(self) -> str:
        return f"{self.position}. {self.name}"


class ReviewAssignmentQuerySet(models.QuerySet):
    def live(self, *, now=None):
        """Assignments that hold their task now: active and not yet expired. An active row
        past its ``expires_at`` still exists until a take expires it, but holds nothing.
        One filter call, so both tests apply to the same row inside a subquery."""
        return self.filter(
            status=ReviewAssignment.Status.ACTIVE, expires_at__gt=now or timezone.now()
        )


class ReviewAssignment(models.Model):
    """A task locked to one reviewer at one layer until it expires or is decided."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        DONE = "done", "Decided"
        RELEASED = "released", "Released"
        EXPIRED = "expired", "Expired"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="assignments")
    layer = models.PositiveSmallIntegerField()
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_assignments"
    )
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    assigned_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    objects = ReviewAssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-assigned_at"]
        constraints = [
            # The database, not only the service, keeps a task to one active reviewer.
            models.UniqueConstraint(
                fields=["task"], condition=Q(status="active"), name="one_active_assignment_per_task"
            ),
        ]
        indexes = [models.Index(fields=["reviewer", "status"])]

    def __str__(self) -> str:
        return f"task {self.task_id} layer {self.layer} → {self.reviewer}"


class StandingDecisions(models.Manager):
    """Decisions not withdrawn: what every read of "the decisions" means (the review page's
    last round, independence, the dashboard, the export's provenance). A withdrawn decision
    is kept for the audit trail and read through ``ReviewDecision.all_objects`` (the
    timeline, the API's list); the base manager, which reverse relations such as a
    revision's protection use, still sees every row."""

    def get_queryset(self):
        return super().get_queryset().filter(withdrawn_at__isnull=True)


class ReviewDecision(models.Model):
    """A reviewer's verdict at a layer, naming the revision judged. Never edited; only
    marked withdrawn (``review_withdraw``), by the reviewer who made it by mistake."""

    class Outcome(models.TextChoices):
        APPROVE = "approve", "Approve"
        REQUEST_CHANGES = "request_changes", "Request changes"
        REJECT = "reject", "Reject"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="decisions")
    layer = models.PositiveSmallIntegerField()
    layer_name = models.CharField(max_length=100)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_decisions"
    )
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="decisions")
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    summary = models.TextField(blank=True)
    reject_reason = models.CharField(max_length=200, blank=True)
    checklist = models.JSONField(default=list, help_text='[{"item", "passed", "note"}]')
    blocker_comments = models.JSONField(default=dict, help_text="{blocker id: comment}")
    created_at = models.DateTimeField(auto_now_add=True)
    withdrawn_at = models.DateTimeField(
        null=True, blank=True, help_text="When its reviewer withdrew it as made by mistake"
    )

    objects = StandingDecisions()
    all_objects = models.Manager()  # noqa: DJ012 (a manager, which ruff reads as a field)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["task", "layer"])]

    def __str__(self) -> str:
        return f"{self.outcome} at layer {self.layer} on task {self.task_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("Decisions are never edited.")
        super().save(*args, **kwargs)


class Comment(models.Model):
    """A thread on a task, or on one of its blockers; replies hang off the first comment."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="comments")
    blocker_key = models.CharField(max_length=120, blank=True)
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="replies"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    body = models.TextField()
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.body[:60]


class Notification(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, null=True, blank=True)
    kind = models.CharField(max_length=30)
    text = models.CharField(max_length=300)
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "read_at"])]

    def __str__(self) -> str:
        return self.text
