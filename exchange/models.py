"""The jobs of the exchange: imports and bundle exports, run by workers."""

from django.conf import settings
from django.db import models

from hilbench_annotate.jobs import Job
from hilbench_annotate.models import Project


class ImportJob(Job):
    """An import started from the browser; the worker runs it and writes the report here."""

    class Kind(models.TextChoices):
        BIRD = "bird", "BIRD questions + databases"
        SWEBENCH = "swebench", "SWE-bench instances + repository"
        HILBENCH = "hilbench", "HiL-Bench task folders"
        BUNDLE = "bundle", "Export bundle (ours or the release's)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    upload_dir = models.CharField(max_length=300, help_text="Relative to UPLOAD_STORE")
    options = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True)

    class Meta(Job.Meta):
        db_table = "hilbench_annotate_importjob"  # made before the exchange app existed

    def __str__(self) -> str:
        return f"{self.get_kind_display()} import #{self.pk}"


class ExportJob(Job):
    """A bundle export started by a lead (browser, API or command); the worker writes it.

    ``selection`` is what the lead asked for (task ids, states, domain); ``report`` lists the
    exported folders and the tasks left out with the reason. The bundle file lives under
    ``settings.BUNDLE_STORE`` until ``expires_at``.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.EXPIRED)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="export_jobs")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    selection = models.JSONField(default=dict, blank=True)
    draft = models.BooleanField(
        default=False, help_text="Include tasks that did not pass every gate; the manifest says so"
    )
    reveal_reviewers = models.BooleanField(
        default=False, help_text="Name reviewers in review.json instead of pseudonyms"
    )
    allow_internet = models.BooleanField(
        default=False,
        help_text="Let the tasks' containers reach the internet (task.toml allow_internet)",
    )
    llm_judge = models.JSONField(
        default=dict,
        blank=True,
        help_text="The release's LLM judge for tasks kept from the release ({endpoint, model}); "
        "empty: the app's embedded judge (exchange.bundles.judge_choice)",
    )
    phase = models.CharField(
        max_length=20,
        blank=True,
        help_text="The step the workers are at: check, write or assemble (exchange.services)",
    )
    out_path = models.CharField(
        max_length=500, blank=True, help_text="Where the command writes the bundle, if not here"
    )
    file_path = models.CharField(max_length=300, blank=True, help_text="Relative to BUNDLE_STORE")
    size_bytes = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    # The tasks left out (each with why), the files written and how many tasks; the tasks
    # written are in the write step's chunks (``selectors.export_entries``). A job finished
    # before the report stopped listing them lists them here too, as ``exported``.
    report = models.JSONField(default=dict, blank=True)
    # What a read of the finished job shows (``report_summary``): the first tasks written
    # and left out, and how many.
    summary = models.JSONField(default=dict, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # Set when a Harbor run exported its tasks for itself (a draft it unpacks and runs):
    # the lists name the run, not the lead who started it, as the maker.
    harbor_run = models.ForeignKey(
        "evaluation.EvaluationRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The Harbor run that exported its own tasks (internally), if any",
    )

    class Meta(Job.Meta):
        db_table = "hilbench_annotate_exportjob"  # made before the exchange app existed

    def __str__(self) -> str:
        return f"export #{self.pk} of {self.project_id}"

    @property
    def path(self):
        return settings.BUNDLE_STORE / self.file_path if self.file_path else None

    @property
    def report_summary(self) -> dict:
        """The report as the page and the API show it (``export_report_summary``): the
        stored summary of a finished job, else made from the report (a job still running,
        whose report holds only the tasks left out so far)."""
        return self.summary or export_report_summary(self.report)


# A read of an export shows this many of the tasks written and of those left out; the
# bundle's manifest.json lists every one.
REPORT_HEAD = 200


def export_report_summary(report: dict) -> dict:
    """``report`` with its lists cut to their first ``REPORT_HEAD`` entries and their lengths
    beside them (``exported_count``, ``skipped_count``); a report that gives
    ``exported_count`` (a finished export's: its ``exported`` is the head only) keeps it."""
    exported, skipped = report.get("exported") or [], report.get("skipped") or []
    return {
        **report,
        "exported": exported[:REPORT_HEAD],
        "skipped": skipped[:REPORT_HEAD],
        "exported_count": report.get("exported_count", len(exported)),
        "skipped_count": len(skipped),
    }


class ExportChunk(Job):
    """One step of an export over a chunk of its tasks, which any worker may take: check
    (which tasks a bundle that is not a draft carries), write (their files into a part of the
    archive) or assemble (the parts joined into the bundle). The row is the truth the reaper
    reads, as for every job; ``result`` is what the step hands to the next one."""

    class Phase(models.TextChoices):
        CHECK = "check", "Check"
        WRITE = "write", "Write"
        ASSEMBLE = "assemble", "Assemble"

    export = models.ForeignKey(ExportJob, on_delete=models.CASCADE, related_name="chunks")
    phase = models.CharField(max_length=20, choices=Phase.choices)
    number = models.PositiveIntegerField()
    tasks = models.JSONField(
        default=list, help_text="Task ids (check) or [task id, folder] pairs (write), in order"
    )
    result = models.JSONField(default=dict, blank=True)

    class Meta(Job.Meta):
        ordering = ["export", "phase", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["export", "phase", "number"], name="one_export_chunk_per_number"
            )
        ]

    def __str__(self) -> str:
        return f"{self.phase} chunk {self.number} of export #{self.export_id}"


class ReleaseFile(models.Model):
    """A file of a task as the HiL-Bench release shipped it, kept byte for byte.

    ``fingerprint`` hashes what the file derives from in the task at import
    (``bundles/release.py``); empty when the app never rewrites the file. An export writes
    the kept bytes while the task's inputs still match, so an unedited task round-trips.
    """

    task = models.ForeignKey(
        "hilbench_annotate.Task", on_delete=models.CASCADE, related_name="release_files"
    )
    path = models.CharField(max_length=300, help_text="Relative to the task folder")
    content = models.BinaryField()
    fingerprint = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["task", "path"]
        constraints = [
            models.UniqueConstraint(fields=["task", "path"], name="one_release_file_per_path")
        ]

    def __str__(self) -> str:
        return f"{self.path} of task {self.task_id}"


class VerifierAcceptance(models.Model):
    """A reviewer's acceptance of a task folder's own verifier (the ``<mode>/tests/`` an
    uploaded release folder carried). Until one matches the task's current uploaded tests
    (``fingerprint``), a run's trials are scored by the verifier the app generates and the
    uploaded one's reward is only recorded beside it (``exchange/bundles/trial_files.py``)."""

    task = models.ForeignKey(
        "hilbench_annotate.Task", on_delete=models.CASCADE, related_name="verifier_acceptances"
    )
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the uploaded tests")
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    accepted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-accepted_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "fingerprint"], name="one_acceptance_per_verifier"
            )
        ]

    def __str__(self) -> str:
        return f"verifier of task {self.task_id} accepted by {self.accepted_by_id}"
