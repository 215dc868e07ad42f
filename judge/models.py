from django.conf import settings
from django.db import models

from hilbench_annotate.jobs import Job
from hilbench_annotate.models import Revision, Task

from .base import VERSION_MAX_LENGTH


class JudgeCacheEntry(models.Model):
    """A judge's verdict, kept so the same (judge version, registry, question) always gets the
    same answer — the judge is deterministic by construction, not only by hope."""

    judge_version = models.CharField(max_length=VERSION_MAX_LENGTH)
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
    judge_version = models.CharField(max_length=VERSION_MAX_LENGTH)
    answer_cap = models.PositiveSmallIntegerField(help_text="Answered questions allowed; 0: no cap")
    label = models.CharField(max_length=200, blank=True, help_text="Model / pass, for the caller")
    # What the per-task cap across runs and the rate limits count by (judge/limits.py).
    session = models.CharField(
        max_length=40,
        blank=True,
        help_text="Harness session: token:<id> (an API token), user:<id> (a signed-in "
        "caller); empty for runs the app starts itself (built-in runner, imported results)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["session", "task"], name="ask_run_session_task"),
            models.Index(fields=["session", "created_at"], name="ask_run_session_time"),
            models.Index(fields=["created_by", "task", "created_at"], name="ask_run_caller_task"),
        ]

    def __str__(self) -> str:
        return f"ask_human run {self.pk} of task {self.task_id}"


class AskHumanCall(models.Model):
    run = models.ForeignKey(AskHumanRun, on_delete=models.CASCADE, related_name="calls")
    question = models.TextField()
    blocker_key = models.CharField(max_length=120, null=True, blank=True)
    response = models.TextField(blank=True)
    duplicate = models.BooleanField(default=False)
    capped = models.BooleanField(default=False)
    # Which limit refused the call (judge/limits.py: a rate limit, the run's or the session's
    # answer cap); empty when none did. A refused call is a call of the run all the same:
    # it matched nothing, so Ask-F1 counts it as the release counts an irrelevant question.
    refused_by = models.CharField(max_length=30, blank=True, default="")
    reason = models.TextField(blank=True)
    error = models.TextField(blank=True)
    client_time = models.CharField(
        max_length=40, blank=True, help_text="When the agent asked, as its harness reported it"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]

    def __str__(self) -> str:
        return f"{self.question[:60]} → {self.blocker_key or 'irrelevant'}"


class ValidationQuestion(models.Model):
    """A held-out question for measuring the judge on one task: a paraphrase or partial
    overlap of a blocker (positive) or an adjacent, broad or off-task one (negative).

    Its gold label comes from two independent labellers, or a third when they disagree.
    A question whose wording became a trigger question leaves the held-out split, so no
    question is both a trigger and a test item; it counts as a miss until a fresh question
    replaces it (``judge.floor``).
    """

    class Split(models.TextChoices):
        HELD_OUT = "held_out", "Held out (measures the judge)"
        RETIRED = "retired", "Retired (its wording became a trigger question)"

    class Style(models.TextChoices):
        """How the question is worded, chosen by its writer: the floor needs each style
        among a task's counted questions (``judge.floor``)."""

        TERSE = "terse", "terse, as an agent would ask (not naming the task's words)"
        TASK_WORDS = "task_words", "naming the task's words"
        PARAPHRASE = "paraphrase", "paraphrase"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="validation_questions")
    text = models.TextField()
    source = models.CharField(max_length=20, default="author")
    split = models.CharField(max_length=10, choices=Split.choices, default=Split.HELD_OUT)
    style = models.CharField(
        max_length=12,
        choices=Style.choices,
        blank=True,
        default="",
        help_text="Chosen by its writer; empty: not recorded (written before styles were asked)",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # When its wording became a trigger question: a fresh question written after this
    # replaces it in the recall (judge.floor); until then it counts as a miss.
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task", "id"]

    def __str__(self) -> str:
        return self.text[:80]


class QuestionLabel(models.Model):
    """One labeller's answer for one validation question: a blocker id, or none (irrelevant)."""

    class Role(models.TextChoices):
        LABELLER = "labeller", "Independent labeller"
        ADJUDICATOR = "adjudicator", "Adjudicator (third person)"

    question = models.ForeignKey(
        ValidationQuestion, on_delete=models.CASCADE, related_name="labels"
    )
    labeller = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.LABELLER)
    blocker_key = models.CharField(max_length=120, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "labeller"], name="one_label_per_person"),
        ]

    def __str__(self) -> str:
        return f"{self.labeller_id}: {self.blocker_key or 'irrelevant'}"


class JudgeCalibration(models.Model):
    """Thresholds of the embedded judge calibrated on a project's labelled questions.

    Its ``version`` is the judge version that uses it (``<shipped judge version>/p<project>-
    cal<n>``), so cached verdicts of one calibration are never served under another, and a
    calibration made for other weights is not used.
    """

    project = models.ForeignKey(
        "hilbench_annotate.Project", on_delete=models.CASCADE, related_name="judge_calibrations"
    )
    version = models.CharField(max_length=VERSION_MAX_LENGTH, unique=True)
    thresholds = models.JSONField(
        default=dict, help_text="Logit threshold per domain (sql, swe) of the embedded judge"
    )
    # The first judge's similarity threshold and margin (calibrations made before its
    # learned scorer); kept for the record, not used.
    default_threshold = models.FloatField(null=True, blank=True)
    margin = models.FloatField(null=True, blank=True)
    precision = models.FloatField(null=True)
    recall = models.FloatField(null=True)
    questions = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.version


class JudgeEmbedding(models.Model):
    """A sentence embedding of a registry text (trigger question, description, task-text
    sentence), kept so that every process builds a task's judge index without running the
    model again: filled when the registry is saved (``judge.services.judge_index_prepare``)."""

    model = models.CharField(max_length=60)
    digest = models.CharField(max_length=64, help_text="sha256 of the text")
    vector = models.BinaryField(help_text="float32, normalised")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "digest"], name="judge_embedding_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model}:{self.digest[:12]}"


class CalibrationJob(Job):
    """A lead's "Calibrate the judge", run by a worker: a calibration scores its fixed
    negatives against up to ten tasks' registries a domain (0.9 s on a project of 100,000
    tasks), too long for a request. ``calibration``: what it made, once it has succeeded;
    ``error``: why it could not (too few settled questions, the judge not loaded)."""

    project = models.ForeignKey(
        "hilbench_annotate.Project", on_delete=models.CASCADE, related_name="calibration_jobs"
    )
    calibration = models.ForeignKey(
        JudgeCalibration, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta(Job.Meta):
        indexes = [models.Index(fields=["project", "-created_at"])]
