"""A project's data for analysis (``exchange.analysis``): the page that offers its tables,
and their download, for anyone who reads the project; the task list's filters narrow both."""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from exchange.analysis import FORMATS, TABLES, analysis_stream
from hilbench_annotate.access import access_project
from hilbench_annotate.selectors import task_filters_clean


def _filters(request, project) -> dict[str, str]:
    """The task list's filters of the request, the project fixed by the URL."""
    return {**task_filters_clean(filters=request.GET), "project": str(project.pk)}


def _narrowing(filters: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in filters.items() if v and k != "project"}


@login_required
@require_GET
def project_data(request, project_id: int):
    project = access_project(request.user, project_id)
    narrowing = _narrowing(_filters(request, project))
    query = f"?{urlencode(narrowing)}" if narrowing else ""
    context = {
        "project": project,
        "tables": TABLES.values(),
        "formats": list(FORMATS),
        "narrowing": narrowing,
        "query": query,
    }
    return render(request, "exchange/project_data.html", context)


def data_response(*, user, project, table: str, fmt: str, filters) -> StreamingHttpResponse:
    """The table streamed as a file (shared by the page's download and the API)."""
    response = StreamingHttpResponse(
        analysis_stream(user=user, table=table, fmt=fmt, filters=filters),
        content_type=FORMATS[fmt],
    )
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{table}.{fmt}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_GET
def project_data_download(request, project_id: int, table: str, fmt: str):
    project = access_project(request.user, project_id)
    if table not in TABLES or fmt not in FORMATS:
        raise Http404("No such table or format.")
    return data_response(
        user=request.user,
        project=project,
        table=table,
        fmt=fmt,
        filters=_filters(request, project),
    )
