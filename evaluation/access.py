"""Who reads the evaluation pages: every human role of the project (not the harness, a
machine user that reads no task), and the page-side form of ``access_project``."""

from django.core.exceptions import PermissionDenied

from hilbench_annotate.access import access_project
from hilbench_annotate.errors import AccessDenied
from hilbench_annotate.models import Project
from hilbench_annotate.vocabulary import Role

READERS = (Role.AUTHOR, Role.REVIEWER, Role.AUDITOR, Role.LEAD)


def project_for_page(request, project_id: int, roles: tuple[str, ...] = READERS) -> Project:
    """The project if the user has one of ``roles`` in it; 404 if it is not theirs to see,
    403 (an HTML page) if they see it without such a role."""
    try:
        return access_project(request.user, project_id, roles=roles)
    except AccessDenied as error:
        raise PermissionDenied(str(error)) from error
