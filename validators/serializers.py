"""Input shapes of the validators' page actions, which no API takes yet: a page reads its
form through them (``hilbench_annotate.forminput.form_input``), and an API of the same action
would validate its body with the same schema, so the two could not drift. Which checks a task
may run is the service's question (``validation_run_start`` names the unknown ones)."""

from rest_framework import serializers


class ValidationRunIn(serializers.Serializer):
    checks = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="Check groups to run; none: the task's structural groups",
    )


class EnvironmentBuildIn(serializers.Serializer):
    rebuild = serializers.BooleanField(
        default=False, help_text="Build again though this environment is built"
    )
