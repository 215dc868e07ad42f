from rest_framework import serializers

from hilbench_annotate.models import (
    Blocker,
    Project,
    SqlEnvironment,
    SweEnvironment,
    Task,
    TriggerQuestion,
)
from hilbench_annotate.params import MAX_ID
from hilbench_annotate.vocabulary import ALL_SUBTYPES, BlockerType, Surface


class ProjectOut(serializers.ModelSerializer):
    class Meta:
        model = Project
        fields = ["id", "name", "slug", "description"]


class TriggerQuestionOut(serializers.ModelSerializer):
    class Meta:
        model = TriggerQuestion
        fields = ["id", "position", "text"]


class BlockerOut(serializers.ModelSerializer):
    trigger_questions = TriggerQuestionOut(many=True, read_only=True)

    class Meta:
        model = Blocker
        fields = [
            "id",
            "task",
            "key",
            "position",
            "type",
            "subtype",
            "description",
            "resolution",
            "surfaces_in",
            "criteria",
            "trigger_questions",
        ]


class TaskListOut(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", default=None)
    resource = serializers.SerializerMethodField()
    tags = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = Task
        fields = [
            "id",
            "project",
            "domain",
            "source",
            "source_id",
            "title",
            "status",
            "author",
            "version",
            "blocker_count",
            "resource",
            "tags",
            "updated_at",
        ]

    def get_resource(self, task) -> str:
        env = task.environment
        if isinstance(env, SqlEnvironment):
            return env.db_id
        if isinstance(env, SweEnvironment):
            return env.repo_name
        return ""


class SqlEnvironmentOut(serializers.ModelSerializer):
    database_sha256 = serializers.CharField(source="database.sha256", default=None)

    class Meta:
        model = SqlEnvironment
        exclude = ["id", "task", "database"]


class SweEnvironmentOut(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.name", default=None)

    class Meta:
        model = SweEnvironment
        exclude = ["id", "task"]


class TaskDetailOut(TaskListOut):
    blockers = BlockerOut(many=True, read_only=True)
    sql_environment = SqlEnvironmentOut(read_only=True, allow_null=True)
    swe_environment = SweEnvironmentOut(read_only=True, allow_null=True)

    class Meta(TaskListOut.Meta):
        fields = TaskListOut.Meta.fields + [
            "original_spec",
            "blocked_spec",
            "source_metadata",
            "import_notes",
            "created_at",
            "sql_environment",
            "swe_environment",
            "blockers",
        ]


class VersionedIn(serializers.Serializer):
    expected_version = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,  # beyond the column: no task is at it (SQLite cannot even compare it)
        help_text="The task version the change was made on (optimistic lock)",
    )


class TaskUpdateIn(VersionedIn):
    title = serializers.CharField(required=False, max_length=300)
    blocked_spec = serializers.DictField(
        child=serializers.CharField(allow_blank=True), required=False
    )


class BlockerFieldsIn(serializers.Serializer):
    key = serializers.SlugField(max_length=120)
    type = serializers.ChoiceField(choices=BlockerType.choices)
    subtype = serializers.ChoiceField(
        choices=[(s, s) for s in ALL_SUBTYPES], required=False, allow_blank=True
    )
    description = serializers.CharField()
    resolution = serializers.CharField()
    surfaces_in = serializers.ChoiceField(choices=Surface.choices, required=False, allow_blank=True)
    criteria = serializers.DictField(required=False)


class BlockerCreateIn(VersionedIn, BlockerFieldsIn):
    trigger_questions = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=20
    )


class BlockerUpdateIn(VersionedIn, BlockerFieldsIn):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if name != "expected_version":
                field.required = False


class TriggerQuestionIn(VersionedIn):
    text = serializers.CharField()


# --- the task list's and the task page's actions, which no API takes yet: their pages read
# their forms through these (``forminput.form_input``), so an API of the same action would
# accept the same input.


class TaskBulkIn(serializers.Serializer):
    """A bulk action over ticked tasks or the filter's. The action's own fields
    (``bulk_actions.bulk_params``) and the list's filters (``selectors.task_filters_clean``)
    are read by the readers the service's callers share."""

    # An unknown action and ids that are no id are the service's to report ("Choose an
    # action", "2 were not found"), as for a bulk action started by any caller.
    action = serializers.CharField(allow_blank=True, required=False, default="")
    ids = serializers.ListField(
        child=serializers.CharField(allow_blank=True), required=False, default=list
    )
    scope = serializers.ChoiceField(
        choices=[("all", "every task the filter matches")],
        allow_blank=True,
        required=False,
        default="",
        help_text="all: every task the filter matches, not the ids",
    )
    # Only where the list goes back to: a page it cannot show is its first.
    page = serializers.CharField(allow_blank=True, required=False, default="")


class TaskTagsIn(serializers.Serializer):
    # What a name may be is the service's (``tag_names_clean``), in its words.
    tags = serializers.ListField(child=serializers.CharField(), required=False, default=list)


class TokenRevokeIn(serializers.Serializer):
    revoke = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        allow_null=True,
        required=False,
        default=None,
        label="Token",
        help_text="The token to revoke; none: the form creates one",
    )
