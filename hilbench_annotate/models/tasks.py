from django.conf import settings
from django.db import models

from hilbench_annotate.querysets import TaskQuerySet
from hilbench_annotate.vocabulary import Domain, TaskSource, TaskStatus

from .projects import Project


class Tag(models.Model):
    """A label a project's people put on tasks (a batch, a topic, a release) to select them,
    e.g. for an export. Tags are metadata, not content: setting them makes no revision."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=40)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="tag_name_unique_in_project")
        ]

    def __str__(self) -> str:
        return self.name


class Task(models.Model):
    """A benchmark task: a fully specified base task on its way to a blocked one.

    ``original_spec`` and ``blocked_spec`` map section names to text — SQL: ``question`` and
    ``evidence``; SWE: ``problem_statement``, ``requirements``, ``interface`` — so each
    section can be edited and diffed on its own and rendered in the release's layout.
    Every write goes through ``hilbench_annotate.services``; ``version`` is the optimistic
    lock a save must name.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tasks")
    domain = models.CharField(max_length=3, choices=Domain.choices)
    source = models.CharField(max_length=20, choices=TaskSource.choices)
    source_id = models.CharField(max_length=300, help_text="Id in the source dataset")
    title = models.CharField(max_length=300)
    original_spec = models.JSONField(default=dict)
    blocked_spec = models.JSONField(default=dict)
    source_metadata = models.JSONField(default=dict, blank=True)
    import_notes = models.TextField(
        blank=True, help_text="What the import could not bring in (e.g. an absent database)"
    )
    status = models.CharField(
        max_length=20, choices=TaskStatus.choices, default=TaskStatus.DRAFT, db_index=True
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="authored_tasks",
    )
    version = models.PositiveIntegerField(default=1)
    # While in review: the pipeline layer (1-based position) the task waits at, and since when.
    # Kept on changes_requested, so the task returns to the layer that asked.
    review_layer = models.PositiveSmallIntegerField(null=True, blank=True)
    layer_entered_at = models.DateTimeField(null=True, blank=True)
    blocker_count = models.PositiveSmallIntegerField(
        default=0, help_text="Kept by the services that add and remove blockers; for lists"
    )
    tags = models.ManyToManyField(Tag, blank=True, related_name="tasks")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "source", "source_id"], name="task_unique_source_record"
            ),
            models.CheckConstraint(
                condition=models.Q(domain__in=Domain.values), name="task_domain_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=TaskStatus.values), name="task_status_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(source__in=TaskSource.values), name="task_source_valid"
            ),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="task_version_pos"),
        ]
        indexes = [
            models.Index(fields=["status", "review_layer", "layer_entered_at"]),
            models.Index(fields=["project", "domain", "status"]),
            models.Index(fields=["project", "-updated_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.get_domain_display()} · {self.title}"

    @property
    def environment(self):
        """The domain's environment row, or None when it was never made."""
        name = "sql_environment" if self.domain == Domain.SQL else "swe_environment"
        return getattr(self, name, None)


class Revision(models.Model):
    """A snapshot of a task and its blockers, made at every save, never changed.

    The autosaves of one workspace editing session fold into one revision: an autosave
    replaces the task's latest revision (same number, a new row) while that revision is
    still open in the same session (``session``), by the same author, saved less than
    ``AUTOSAVE_SESSION_MINUTES`` ago and referenced by nothing (no decision, validation run,
    ask_human run or model pass names it). A row itself is written once; ``session`` is
    cleared (the session closed) by an explicit save or an export (``revisions_close``).
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    snapshot = models.JSONField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True
    )
    reason = models.CharField(max_length=200, blank=True)
    summary = models.CharField(
        max_length=500, blank=True, help_text="What changed since the previous revision"
    )
    session = models.CharField(
        max_length=64,
        blank=True,
        help_text="The workspace session whose next autosave may fold into it; empty: closed",
    )
    saves = models.PositiveIntegerField(default=1, help_text="Saves folded into this revision")
    lint_findings = models.JSONField(
        default=list, blank=True, help_text="Lint findings of this revision, as made at save"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="revision_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} r{self.number}"

    def save(self, *args, **kwargs):
        # Guard, not a side effect: revisions are written once and never changed.
        if self.pk is not None:
            raise ValueError("Revisions are immutable; make a new one instead.")
        super().save(*args, **kwargs)


class TaskEvent(models.Model):
    """Append-only log of everything that happened to a task (or a project)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="events")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    kind = models.CharField(max_length=50)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # Timelines read a task's events in order; the dashboard pairs status changes.
        indexes = [models.Index(fields=["task", "kind", "created_at"])]

    def __str__(self) -> str:
        return f"{self.kind} on {self.task_id or self.project_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("Events are append-only.")
        super().save(*args, **kwargs)
