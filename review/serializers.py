"""Input and output shapes of the review API; every rule beyond shape lives in the services."""

from rest_framework import serializers

from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role
from review.models import Comment, Notification, ReviewAssignment, ReviewDecision, ReviewLayer

# --- pipeline -----------------------------------------------------------------------------------


class LayerOut(serializers.ModelSerializer):
    class Meta:
        model = ReviewLayer
        fields = ["position", "name", "role", "self_check", "checklist", "gates"]


class PipelineOut(serializers.Serializer):
    project = serializers.IntegerField()
    layers = LayerOut(many=True)
    lock_minutes = serializers.IntegerField()
    reject_reasons = serializers.ListField(child=serializers.CharField())


class LayerIn(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    role = serializers.ChoiceField(choices=Role.choices)
    self_check = serializers.BooleanField(default=False)
    checklist = serializers.ListField(
        child=serializers.CharField(allow_blank=True), required=False, default=list
    )
    gates = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=list,
        help_text="Names of automated checks that must be green before approving (lint_clean)",
    )


class PipelineIn(serializers.Serializer):
    layers = LayerIn(many=True)
    lock_minutes = serializers.IntegerField(
        min_value=1,
        # The column's range (PostgreSQL's integer): a larger number was a 500, not a refusal.
        max_value=2_147_483_647,
        label="Lock time",
        # The pipeline editor's words, which the API now says too.
        error_messages={"invalid": "The lock time is a whole number of minutes."},
    )
    reject_reasons = serializers.ListField(child=serializers.CharField(allow_blank=True))


def pipeline_arguments(data: dict) -> dict:
    """``pipeline_update``'s keyword arguments from a valid ``PipelineIn``: the pipeline editor
    and the API pass the same."""
    return {
        "layers": [dict(layer) for layer in data["layers"]],
        "lock_minutes": data["lock_minutes"],
        "reject_reasons": data["reject_reasons"],
    }


# --- submission and assignment ------------------------------------------------------------------


class SubmitIn(serializers.Serializer):
    expected_version = serializers.IntegerField(
        min_value=1, help_text="The task version being submitted (optimistic lock)"
    )


class TaskReviewStateOut(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = ["id", "status", "version", "review_layer", "layer_entered_at"]


class AssignmentOut(serializers.ModelSerializer):
    task_title = serializers.CharField(source="task.title")
    reviewer = serializers.CharField(source="reviewer.username")
    assigned_by = serializers.CharField(source="assigned_by.username", default=None)
    # Plain text, not an enum: the schema already has a "status" enum (the task's).
    status = serializers.CharField(help_text="active, done, released or expired")

    class Meta:
        model = ReviewAssignment
        fields = [
            "id",
            "task",
            "task_title",
            "layer",
            "reviewer",
            "assigned_by",
            "status",
            "assigned_at",
            "expires_at",
        ]


class TakeNextIn(serializers.Serializer):
    project = serializers.IntegerField()
    layer = serializers.IntegerField(min_value=1, help_text="Layer position, 1 is the first")


class AssignIn(serializers.Serializer):
    reviewer = serializers.CharField(help_text="Username of the person to assign")


class QueueLayerOut(serializers.Serializer):
    project = serializers.IntegerField()
    project_name = serializers.CharField()
    layer = serializers.IntegerField()
    name = serializers.CharField()
    role = serializers.CharField()
    self_check = serializers.BooleanField()
    eligible = serializers.IntegerField(help_text="Tasks waiting here that you may take")
    assignments = AssignmentOut(many=True, help_text="Your active assignments at this layer")


# --- decisions ----------------------------------------------------------------------------------


class ChecklistAnswerIn(serializers.Serializer):
    item = serializers.CharField()
    passed = serializers.BooleanField(allow_null=True, default=None)
    note = serializers.CharField(allow_blank=True, required=False, default="")


class DecisionIn(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=ReviewDecision.Outcome.choices)
    revision = serializers.IntegerField(min_value=1, help_text="The revision number judged")
    summary = serializers.CharField(allow_blank=True, required=False, default="")
    checklist = ChecklistAnswerIn(many=True, required=False, default=list)
    blocker_comments = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="Blocker id → comment",
    )
    reject_reason = serializers.CharField(allow_blank=True, required=False, default="")


def decision_arguments(data: dict) -> dict:
    """``review_decide``'s keyword arguments from a valid ``DecisionIn``: the review page and
    the API pass the same."""
    return {
        "outcome": data["outcome"],
        "revision_number": data["revision"],
        "summary": data["summary"],
        "checklist": [dict(answer) for answer in data["checklist"]],
        "blocker_comments": data["blocker_comments"],
        "reject_reason": data["reject_reason"],
    }


class ChecklistAnswerOut(serializers.Serializer):
    item = serializers.CharField()
    passed = serializers.BooleanField()
    note = serializers.CharField()


class DecisionOut(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.username")
    revision = serializers.IntegerField(source="revision.number")
    checklist = ChecklistAnswerOut(many=True)
    blocker_comments = serializers.DictField(child=serializers.CharField())

    class Meta:
        model = ReviewDecision
        fields = [
            "id",
            "task",
            "layer",
            "layer_name",
            "reviewer",
            "revision",
            "outcome",
            "summary",
            "reject_reason",
            "checklist",
            "blocker_comments",
            "created_at",
            "withdrawn_at",
        ]


# --- threads and notifications ------------------------------------------------------------------


class CommentIn(serializers.Serializer):
    body = serializers.CharField()
    blocker_key = serializers.CharField(allow_blank=True, required=False, default="")
    parent = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Comment replied to"
    )


class CommentOut(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username")

    class Meta:
        model = Comment
        fields = ["id", "task", "blocker_key", "parent", "author", "body", "resolved", "created_at"]


class ResolveIn(serializers.Serializer):
    resolved = serializers.BooleanField()


class NotificationOut(serializers.ModelSerializer):
    class Meta:
        model = Notification
        fields = ["id", "task", "kind", "text", "read_at", "created_at"]


class NotificationsReadIn(serializers.Serializer):
    ids = serializers.ListField(
        # Bounded like the id column, so SQLite and PostgreSQL refuse the same values.
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
        required=False,
        allow_null=True,
        default=None,
        help_text="Notifications to mark read; all unread ones when absent",
    )


class NotificationsReadOut(serializers.Serializer):
    marked = serializers.IntegerField()
