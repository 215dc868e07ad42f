from django.db import models
from django.db.models import Q

from hilbench_annotate.vocabulary import SQL_SUBTYPES, BlockerType, Surface

from .tasks import Task


def _subtype_matches_type() -> Q:
    """A SQL blocker's subtype belongs to its type; SWE blockers carry none (or any legacy one)."""
    condition = Q(subtype="")
    for blocker_type, subtypes in SQL_SUBTYPES.items():
        condition |= Q(type=blocker_type, subtype__in=subtypes)
    return condition


class BlockerQuerySet(models.QuerySet):
    def insert(self, *, task, position: int, trigger_questions=(), **fields) -> "Blocker":
        """A blocker row and its trigger questions; the caller validated them and holds the
        task's row lock (services.blockers and services.tasks.task_create)."""
        blocker = self.create(task=task, position=position, **fields)
        TriggerQuestion.objects.bulk_create(
            TriggerQuestion(blocker=blocker, position=i, text=text)
            for i, text in enumerate(trigger_questions)
        )
        return blocker


class Blocker(models.Model):
    """One information gap planted in a task, registered with its exact resolution.

    ``criteria`` holds the seven quality-criteria attestations:
    ``{criterion_key: {"ok": bool, "note": str}}`` (keys in ``vocabulary.QUALITY_CRITERIA``).
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="blockers")
    key = models.SlugField(max_length=120, help_text="The registry id, unique in the task")
    position = models.PositiveSmallIntegerField(default=0)
    type = models.CharField(max_length=40, choices=BlockerType.choices)
    subtype = models.CharField(max_length=60, blank=True)
    # May be empty while a draft is being written; lint blocks submission until filled.
    description = models.TextField(blank=True, help_text="The standalone gap; the judge sees it")
    resolution = models.TextField(blank=True, help_text="The exact answer; the judge never sees it")
    surfaces_in = models.CharField(max_length=30, choices=Surface.choices, blank=True)
    criteria = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BlockerQuerySet.as_manager()

    class Meta:
        ordering = ["task", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "key"], name="blocker_unique_key_in_task"),
            models.CheckConstraint(
                condition=Q(type__in=BlockerType.values), name="blocker_type_valid"
            ),
            models.CheckConstraint(condition=_subtype_matches_type(), name="blocker_subtype_valid"),
            models.CheckConstraint(condition=~Q(key=""), name="blocker_key_not_empty"),
        ]

    def __str__(self) -> str:
        return self.key


class TriggerQuestion(models.Model):
    """A question an agent might ask that should be matched to the blocker."""

    blocker = models.ForeignKey(Blocker, on_delete=models.CASCADE, related_name="trigger_questions")
    position = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()

    class Meta:
        ordering = ["blocker", "position", "id"]
        constraints = [
            models.CheckConstraint(condition=~Q(text=""), name="trigger_question_not_empty"),
        ]

    def __str__(self) -> str:
        return self.text[:80]
