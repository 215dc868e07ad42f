from django.conf import settings
from django.db import models

from .tasks import Task


class Repository(models.Model):
    """A bare git mirror in the app's repository store, shared by the tasks on it.

    A mirror belongs to one project: an import writes only to its own project's mirror of
    a name, so one project's import never moves another project's branches. A mirror
    without a project (made before mirrors belonged to projects and used by several, or
    whose project was deleted) is still read by its tasks but no import writes to it.
    """

    project = models.ForeignKey(
        "hilbench_annotate.Project",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="repositories",
    )
    name = models.CharField(max_length=200, help_text='e.g. "ansible/ansible"')
    origin = models.CharField(max_length=500, help_text="Where it was mirrored from")
    storage_path = models.CharField(
        max_length=300, help_text="Relative to settings.REPOSITORY_STORE"
    )
    mirrored_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "repositories"
        ordering = ["name", "project"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="repository_name_per_project")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def path(self):
        return settings.REPOSITORY_STORE / self.storage_path


class SqlDatabase(models.Model):
    """A SQLite database file, stored content-addressed in the database store.

    Task databases are opened read-only; edits are scripts run on a copy.
    """

    db_id = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField()
    storage_path = models.CharField(max_length=300, help_text="Relative to DATABASE_STORE")
    descriptions = models.JSONField(
        default=dict, help_text="database_description CSVs as imported: {table: csv text}"
    )
    description_encodings = models.JSONField(
        default=dict,
        blank=True,
        help_text="Each description CSV's source encoding but plain UTF-8: "
        "{table: 'utf-8-sig' | 'cp1252'} (toolkit/textbytes.py)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["db_id"]
        constraints = [
            models.UniqueConstraint(fields=["db_id", "sha256"], name="sqldatabase_unique_content")
        ]

    def __str__(self) -> str:
        return f"{self.db_id} ({self.sha256[:8]})"

    @property
    def path(self):
        return settings.DATABASE_STORE / self.storage_path


class SweEnvironment(models.Model):
    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="swe_environment")
    repository = models.ForeignKey(
        Repository, on_delete=models.PROTECT, null=True, blank=True, related_name="environments"
    )
    repo_name = models.CharField(
        max_length=200, help_text="Kept even when the repository is absent"
    )
    base_commit = models.CharField(max_length=64)
    setup_patch = models.TextField(blank=True)
    gold_patch = models.TextField(blank=True)
    test_patch = models.TextField(blank=True)
    fail_to_pass = models.JSONField(default=list)
    pass_to_pass = models.JSONField(default=list)
    test_command = models.TextField(blank=True)
    environment_spec = models.JSONField(
        default=dict, blank=True, help_text="What the tests need (hilbench_annotate/envspec.py)"
    )

    def __str__(self) -> str:
        return f"{self.repo_name}@{self.base_commit[:10]}"


class SqlEnvironment(models.Model):
    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="sql_environment")
    database = models.ForeignKey(
        SqlDatabase, on_delete=models.PROTECT, null=True, blank=True, related_name="environments"
    )
    db_id = models.CharField(max_length=200, db_index=True)
    descriptions = models.JSONField(
        default=dict, help_text="The task's database_description CSVs: {table: csv text}"
    )
    description_encodings = models.JSONField(
        default=dict,
        blank=True,
        help_text="Each description CSV's source encoding but plain UTF-8, written back at "
        "export: {table: 'utf-8-sig' | 'cp1252'} (toolkit/textbytes.py)",
    )
    edit_script = models.TextField(
        blank=True, help_text="SQL run on a copy of the database (new tables, new code values)"
    )
    business_info = models.JSONField(default=list, help_text="Documentation sentences")
    original_sql = models.TextField(blank=True, help_text="The base task's gold SQL")
    gold_sql = models.TextField(blank=True, help_text="Gold SQL of the blocked task")
    golden_output = models.TextField(blank=True, help_text="golden_output.csv")
    difficulty = models.CharField(max_length=20, blank=True)

    def __str__(self) -> str:
        return self.db_id
