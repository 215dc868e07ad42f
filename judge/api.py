"""The ask_human service for evaluation runs (token-authenticated machine users)."""

from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from .access import access_ask_human_run, task_for_ask_human
from .limits import harness_session
from .mcp import McpApi
from .services import ask_human, ask_human_run_start


class RunIn(serializers.Serializer):
    task = serializers.IntegerField(help_text="Task id")
    label = serializers.CharField(required=False, allow_blank=True, max_length=200)


class RunOut(serializers.Serializer):
    run = serializers.IntegerField()
    task = serializers.IntegerField()
    revision = serializers.IntegerField()
    judge_version = serializers.CharField()
    answer_cap = serializers.IntegerField()


class AskIn(serializers.Serializer):
    run = serializers.IntegerField()
    question = serializers.CharField(max_length=4000, trim_whitespace=True)


class AskOut(serializers.Serializer):
    response = serializers.CharField()


class LimitOut(serializers.Serializer):
    detail = serializers.CharField()
    limit = serializers.ChoiceField(
        choices=["rate_per_token", "run_rate_per_task", "session_answer_cap"]
    )
    retry_after = serializers.IntegerField(required=False, help_text="Seconds (rate limits)")


LIMITS = {
    403: OpenApiResponse(LimitOut, description="The session's answer cap for the task"),
    429: OpenApiResponse(LimitOut, description="A rate limit; Retry-After says when to retry"),
}


class AskHumanRunApi(APIView):
    @extend_schema(request=RunIn, responses={201: RunOut, **LIMITS})
    def post(self, request):
        data = RunIn(data=request.data)
        data.is_valid(raise_exception=True)
        # Harness users may not read tasks: any member may name one; the service checks role.
        task = task_for_ask_human(request.user, data.validated_data["task"])
        run = ask_human_run_start(
            task=task,
            actor=request.user,
            label=data.validated_data.get("label", ""),
            session=harness_session(request.user, request.auth),
        )
        body = {
            "run": run.pk,
            "task": task.pk,
            "revision": run.revision.number,
            "judge_version": run.judge_version,
            "answer_cap": run.answer_cap,
        }
        return Response(RunOut(body).data, status=status.HTTP_201_CREATED)


class AskHumanApi(APIView):
    @extend_schema(request=AskIn, responses={200: AskOut, **LIMITS})
    def post(self, request):
        data = AskIn(data=request.data)
        data.is_valid(raise_exception=True)
        run = access_ask_human_run(request.user, data.validated_data["run"])
        call = ask_human(run=run, actor=request.user, question=data.validated_data["question"])
        return Response(AskOut({"response": call.response}).data)


urlpatterns = [
    path("ask_human/runs", AskHumanRunApi.as_view(), name="api-ask-human-run"),
    path("ask_human", AskHumanApi.as_view(), name="api-ask-human"),
    path("mcp", McpApi.as_view(), name="api-mcp"),
]
