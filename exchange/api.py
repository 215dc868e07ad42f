"""Export API (leads): start an export job, read its progress; the same service as the page."""

from django.db import transaction
from django.urls import path, reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from exchange.models import ExportJob
from exchange.services.exports import bundle_export_start
from exchange.views import access_export_job
from hilbench_annotate.access import access_project
from hilbench_annotate.vocabulary import Role, TaskStatus

TAGS = ["exports"]


class ExportIn(serializers.Serializer):
    project = serializers.IntegerField()
    tasks = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    states = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="Task states (" + ", ".join(TaskStatus.values) + "); checked by the service",
    )
    # Checked by the service ("", "sql" or "swe"); a plain string keeps the OpenAPI enums
    # of "domain" to the one the task endpoints define.
    domain = serializers.CharField(required=False, default="", allow_blank=True)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=40),
        required=False,
        default=list,
        help_text="Tasks carrying any of these tags",
    )
    draft = serializers.BooleanField(required=False, default=False)
    reveal_reviewers = serializers.BooleanField(required=False, default=False)
    allow_internet = serializers.BooleanField(
        required=False, default=False, help_text="task.toml allow_internet (default false)"
    )


class ExportOut(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True, help_text="queued, running, succeeded, …")
    download = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "project",
            "status",
            "selection",
            "draft",
            "reveal_reviewers",
            "allow_internet",
            "total",
            "done",
            "size_bytes",
            "sha256",
            "report",
            "error",
            "created_at",
            "finished_at",
            "expires_at",
            "download",
        ]

    def get_download(self, job) -> str | None:
        if job.status != ExportJob.Status.SUCCEEDED or not job.file_path:
            return None
        return reverse("export-download", args=[job.pk])


class ExportStartApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=ExportIn,
        responses={202: ExportOut},
        summary="Start a bundle export (project leads)",
    )
    def post(self, request):
        serializer = ExportIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        project = access_project(request.user, data.pop("project"), roles=(Role.LEAD,))
        with transaction.atomic():
            job = bundle_export_start(
                project=project,
                actor=request.user,
                selection={k: data.pop(k) for k in ("tasks", "states", "domain", "tags")},
                **data,
            )
        return Response(ExportOut(job).data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(APIView):
    @extend_schema(tags=TAGS, responses=ExportOut, summary="An export job's progress and link")
    def get(self, request, job_id: int):
        return Response(ExportOut(access_export_job(request.user, job_id)).data)


urlpatterns = [
    path("exports/", ExportStartApi.as_view(), name="api-export-start"),
    path("exports/<int:job_id>/", ExportDetailApi.as_view(), name="api-export-detail"),
]
