"""A project's data for analysis through the API: the files the Data for analysis page
offers (``exchange.analysis``), streamed, with the task list's filters."""

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from exchange.analysis import FORMATS, TABLES
from exchange.views_data import data_response
from hilbench_annotate.access import access_project
from hilbench_annotate.selectors import task_filters_clean


class DataQuery(serializers.Serializer):
    fmt = serializers.ChoiceField(choices=list(FORMATS), default="jsonl")


class ProjectDataApi(APIView):
    @extend_schema(
        tags=["exports"],
        summary="A project's tasks, blockers, judge labels or review decisions, as a file",
        description=(
            "One table of the tasks the caller may read in the project, streamed as CSV or "
            "JSON Lines and joined to the others by task_id. The task list's filters "
            "(q, domain, status, author, resource, tag) narrow it. Judge labels: of settled "
            "questions only."
        ),
        parameters=[
            OpenApiParameter("table", str, OpenApiParameter.PATH, enum=list(TABLES)),
            OpenApiParameter("fmt", str, enum=list(FORMATS), default="jsonl"),
            *(
                OpenApiParameter(name, str, description="as the task list's filter")
                for name in ("q", "domain", "status", "author", "resource", "tag")
            ),
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, a header"),
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR, description="one JSON object a line"
            ),
            404: OpenApiResponse(description="no such project (or not readable) or table"),
        },
    )
    def get(self, request, project_id: int, table: str):
        project = access_project(request.user, project_id)
        if table not in TABLES:
            raise Http404("No such table.")
        query = DataQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = {**task_filters_clean(filters=request.query_params), "project": str(project.pk)}
        return data_response(
            user=request.user,
            project=project,
            table=table,
            fmt=query.validated_data["fmt"],
            filters=filters,
        )
