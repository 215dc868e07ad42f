"""``access_*`` for exchange objects, on the core permission family: an import job is read by
whoever reads its project, an export job only by the project's leads. A job the user may not
read is a 404, the same answer as a missing one. The page and the API both reach jobs here."""

from django.shortcuts import get_object_or_404

from exchange.models import ExportJob, ImportJob
from hilbench_annotate.models import Project
from hilbench_annotate.vocabulary import Role


def import_projects(user):
    """The projects ``user`` may import tasks into (authors and leads)."""
    return Project.objects.with_role(user, Role.AUTHOR, Role.LEAD)


def export_projects(user):
    """The projects ``user`` may export (leads only)."""
    return Project.objects.with_role(user, Role.LEAD)


def access_import_job(user, job_id: int) -> ImportJob:
    """The job if ``user`` reads its project."""
    return get_object_or_404(
        ImportJob.objects.select_related("project", "created_by"),
        pk=job_id,
        project__in=Project.objects.visible_to(user),
    )


def access_export_job(user, job_id: int) -> ExportJob:
    """The job if ``user`` leads its project (exports are for leads only), without its report:
    the page and the API show its ``summary`` (the report lists every task left out)."""
    return get_object_or_404(
        ExportJob.objects.select_related("project", "created_by").defer("report"),
        pk=job_id,
        project__in=export_projects(user),
    )
