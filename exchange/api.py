"""Import and export API: send records to import (authors, leads) or start an export (leads),
and follow the job; the same services as the Import and Export pages."""

from django.urls import path, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from exchange.access import access_export_job, access_import_job
from exchange.api_data import ProjectDataApi
from exchange.models import REPORT_HEAD, ExportJob, ImportJob
from exchange.serializers import (
    ExportIn,
    JobWaitIn,
    RecordsImportIn,
    export_arguments,
    import_options,
)
from exchange.services.exports import bundle_export_start
from exchange.services.imports import RECORD_KINDS, import_start_records
from exchange.views import bundle_download
from hilbench_annotate.access import access_project
from hilbench_annotate.jobs import job_wait
from hilbench_annotate.vocabulary import Role

TAGS = ["exports"]
JSON_LINES_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")


class ImportOut(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True, help_text="queued, running, succeeded, failed")
    url = serializers.SerializerMethodField()

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "project",
            "kind",
            "status",
            "done",
            "total",
            "report",
            "error",
            "created_at",
            "finished_at",
            "url",
        ]

    def get_url(self, job) -> str:
        return reverse("api-import-detail", args=[job.pk])


class _Raw(BaseParser):
    """The body is read by the service as a stream, never parsed here."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return stream


class RecordsImportApi(APIView):
    parser_classes = [_Raw]

    @extend_schema(
        tags=["imports"],
        request={
            "application/json": {"type": "array", "items": {"type": "object"}},
            "application/x-ndjson": {"type": "string", "description": "one record a line"},
        },
        parameters=[
            OpenApiParameter("kind", str, enum=sorted(RECORD_KINDS), description="bird (default)"),
            OpenApiParameter(
                "skip_missing_databases",
                bool,
                description="bird: import questions whose database the project lacks",
            ),
            OpenApiParameter("repo_url", str, description="swebench: the repository to mirror"),
        ],
        responses={202: ImportOut},
        summary="Import records in bulk (authors and leads of the project)",
        description="The body is a JSON array or JSON lines (Content-Type application/x-ndjson) "
        "of BIRD questions, whose databases the project's tasks already have, or of SWE-bench "
        "instances of one repository. It is stored as it streams in and imported by a worker "
        "as the Import page's files are: every record checked first, nothing written if one "
        "is bad. Follow the job at its url.",
    )
    def post(self, request, project_id: int):
        project = access_project(request.user, project_id, roles=(Role.AUTHOR, Role.LEAD))
        params = RecordsImportIn(data=request.query_params)
        params.is_valid(raise_exception=True)
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        job = import_start_records(
            project=project,
            actor=request.user,
            kind=params.validated_data["kind"] or ImportJob.Kind.BIRD,
            body=request._request,  # the WSGI body, read in chunks by the service
            json_lines=content_type in JSON_LINES_TYPES,
            options=import_options(params.validated_data),
        )
        return Response(ImportOut(job).data, status=status.HTTP_202_ACCEPTED)


def _followed(request, access, job_id: int):
    """The job as ``access`` reads it for the user; with ``?wait=``, read again once it has
    finished or the wait is over (``job_wait``). A bad value is a 400 naming it."""
    job = access(request.user, job_id)
    params = JobWaitIn(data=request.query_params)
    params.is_valid(raise_exception=True)
    if job.is_finished or not params.validated_data["wait"]:
        return job
    job_wait(job, params.validated_data["wait"])
    return access(request.user, job_id)


class ImportDetailApi(APIView):
    @extend_schema(
        tags=["imports"], parameters=[JobWaitIn], responses=ImportOut,
        summary="An import job's progress",
    )  # fmt: skip
    def get(self, request, job_id: int):
        job = _followed(request, access_import_job, job_id)
        return Response(ImportOut(job).data)


class ExportOut(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True, help_text="queued, running, succeeded, …")
    download = serializers.SerializerMethodField()
    report = serializers.JSONField(
        source="report_summary",
        read_only=True,
        help_text=f"The tasks written (exported) and left out (skipped), the first {REPORT_HEAD} "
        "of each, their numbers (exported_count, skipped_count) and the bundle's files: the "
        "bundle's manifest.json lists every task",
    )

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
            "llm_judge",
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
        return reverse("api-export-download", args=[job.pk])


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
        data = serializer.validated_data
        project = access_project(request.user, data["project"], roles=(Role.LEAD,))
        job = bundle_export_start(project=project, actor=request.user, **export_arguments(data))
        return Response(ExportOut(job).data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(APIView):
    @extend_schema(
        tags=TAGS, parameters=[JobWaitIn], responses=ExportOut,
        summary="An export job's progress and link",
    )  # fmt: skip
    def get(self, request, job_id: int):
        job = _followed(request, access_export_job, job_id)
        return Response(ExportOut(job).data)


class ExportDownloadApi(APIView):
    """The bundle itself, to the same token that started the export: the page's download
    link asks for a signed-in session, which an API client has not."""

    @extend_schema(
        tags=TAGS,
        responses={
            (200, "application/gzip"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="The export has not produced a bundle (yet)."),
            410: OpenApiResponse(description="The bundle has expired; export it again."),
        },
        summary="Download an export's bundle (.tar.gz)",
    )
    def get(self, request, job_id: int):
        return bundle_download(access_export_job(request.user, job_id))


urlpatterns = [
    path(
        "projects/<int:project_id>/tasks/import",
        RecordsImportApi.as_view(),
        name="api-records-import",
    ),
    path("imports/<int:job_id>/", ImportDetailApi.as_view(), name="api-import-detail"),
    path("exports/", ExportStartApi.as_view(), name="api-export-start"),
    path("exports/<int:job_id>/", ExportDetailApi.as_view(), name="api-export-detail"),
    path("exports/<int:job_id>/download", ExportDownloadApi.as_view(), name="api-export-download"),
    path(
        "projects/<int:project_id>/data/<str:table>",
        ProjectDataApi.as_view(),
        name="api-project-data",
    ),
]
