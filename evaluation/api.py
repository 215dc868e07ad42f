"""Evaluation API: the shaped reward for a training loop, the leaderboard, results upload."""

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from hilbench_annotate.access import READER_ROLES, access_project, access_task
from hilbench_annotate.params import param_choice
from hilbench_annotate.vocabulary import Domain
from judge.access import access_ask_human_run, require_ask_human_caller

from .selectors import ask_human_run_reward, leaderboard, task_selection
from .serializers import ResultsIn
from .services import results_upload_start


class RewardIn(serializers.Serializer):
    run = serializers.IntegerField(help_text="An ask_human run (POST /api/ask_human/runs)")


class RewardOut(serializers.Serializer):
    run = serializers.IntegerField()
    reward = serializers.FloatField(help_text="Σ per-question rewards + terminal coverage")
    steps = serializers.ListField(child=serializers.FloatField())
    terminal = serializers.FloatField()
    discovered = serializers.ListField(child=serializers.CharField())
    ask_precision = serializers.FloatField()
    ask_recall = serializers.FloatField()
    ask_f1 = serializers.FloatField()


class RewardApi(APIView):
    """+0.3 per question that targets a registered blocker, −0.1 per irrelevant or duplicate
    one, plus the share of blockers discovered (the paper's shaped Ask-F1 reward)."""

    @extend_schema(request=RewardIn, responses=RewardOut)
    def post(self, request):
        data = RewardIn(data=request.data)
        data.is_valid(raise_exception=True)
        run = access_ask_human_run(request.user, data.validated_data["run"])
        require_ask_human_caller(request.user, run)
        return Response(RewardOut(ask_human_run_reward(ask_run=run)).data)


class LeaderboardRow(serializers.Serializer):
    model = serializers.CharField()
    mode = serializers.CharField()
    tasks = serializers.IntegerField()
    passes = serializers.IntegerField()
    pass_at_1 = serializers.FloatField(allow_null=True, required=False)
    pass_at_2 = serializers.FloatField(allow_null=True, required=False)
    pass_at_3 = serializers.FloatField(allow_null=True, required=False)
    # The release's pass@k above (any of the first k passes); the unbiased estimate here.
    pass_at_1_unbiased = serializers.FloatField(allow_null=True, required=False)
    pass_at_2_unbiased = serializers.FloatField(allow_null=True, required=False)
    pass_at_3_unbiased = serializers.FloatField(allow_null=True, required=False)
    ask_precision = serializers.FloatField(required=False)
    ask_recall = serializers.FloatField(required=False)
    ask_f1 = serializers.FloatField(required=False)
    questions_per_pass = serializers.FloatField(required=False)
    duplicate_rate = serializers.FloatField(allow_null=True, required=False)
    reward_mean = serializers.FloatField(required=False)
    # Harbor tries the release leaves out of every figure (evaluation/tries.py), and why.
    tries_excluded = serializers.IntegerField(required=False)
    excluded_why = serializers.CharField(required=False, allow_blank=True)
    audbc = serializers.DictField(child=serializers.FloatField(allow_null=True))


class LeaderboardApi(APIView):
    @extend_schema(responses=LeaderboardRow(many=True))
    def get(self, request, project_id: int):
        project = access_project(request.user, project_id, roles=READER_ROLES)
        domain = param_choice(request.query_params.get("domain"), Domain.values) or None
        return Response(LeaderboardRow(leaderboard(project=project, domain=domain), many=True).data)


class ResultsRunOut(serializers.Serializer):
    run = serializers.IntegerField()
    model = serializers.CharField()
    passes = serializers.IntegerField()


class ResultsApi(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(request=ResultsIn, responses={202: ResultsRunOut(many=True)})
    def post(self, request, project_id: int):
        project = access_project(request.user, project_id, roles=("lead",))
        data = ResultsIn(data=request.data)
        data.is_valid(raise_exception=True)
        runs = results_upload_start(
            project=project,
            actor=request.user,
            upload=data.validated_data["file"],
            model_name=data.validated_data.get("model", ""),
        )
        body = [{"run": r.pk, "model": r.model_name, "passes": r.total} for r in runs]
        return Response(body, status=status.HTTP_202_ACCEPTED)


class SelectionApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, task_id: int):
        task = access_task(request.user, task_id)
        return Response(task_selection(task=task))


urlpatterns = [
    path("reward", RewardApi.as_view(), name="api-reward"),
    path(
        "projects/<int:project_id>/leaderboard",
        LeaderboardApi.as_view(),
        name="api-leaderboard",
    ),
    path("projects/<int:project_id>/results", ResultsApi.as_view(), name="api-results"),
    path("tasks/<int:task_id>/selection", SelectionApi.as_view(), name="api-task-selection"),
]
