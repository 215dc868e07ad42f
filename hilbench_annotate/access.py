"""Who may see and do what: the one permission family every view, API endpoint and service uses.

- ``access_*`` return an object only if the user may see it. Objects the user may not see are
  reported as absent (404), so ids do not leak which tasks exist in other projects.
- ``has_role`` / ``require_role`` answer "may this user act here"; a user who sees the object
  but may not change it gets ``AccessDenied`` (403), with a message naming the missing role.
- ``AccessDeniedMiddleware`` turns ``AccessDenied`` into a 403 (and ``Http404`` into a 404) for
  HTML views, htmx fragments included, as the API's exception handler does for the API: views
  and services raise, nothing else maps.

Feature apps build their own ``access_<entity>`` on these (``judge/access.py``,
``evaluation/access.py``); none re-implements a role check.
"""

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.utils.html import format_html
from django.views.defaults import permission_denied

from hilbench_annotate.errors import AccessDenied
from hilbench_annotate.models import Blocker, Membership, Project, Task, TriggerQuestion
from hilbench_annotate.vocabulary import READER_ROLES, Role

__all__ = [
    "READER_ROLES",
    "AccessDeniedMiddleware",
    "ProjectRoles",
    "access_blocker",
    "access_project",
    "access_task",
    "access_trigger_question",
    "can_edit_task",
    "editable_tasks",
    "has_role",
    "is_machine_user",
    "member_project_ids",
    "not_found",
    "require_role",
    "require_task_editor",
    "roles_in",
]

# Lookups that fail on a malformed id: an id that is not a number is just "no such object".
BAD_ID = (ValueError, TypeError, OverflowError)


def not_found(what: str) -> Http404:
    """The one message shape for an object the user may not see or that does not exist."""
    return Http404(f"No such {what}.")


def roles_in(user, project_id: int) -> set[str]:
    if not user.is_authenticated:
        return set()
    return set(
        Membership.objects.filter(user=user, project_id=project_id).values_list("role", flat=True)
    )


class ProjectRoles:
    """A user's roles in every project, read in one query, for pages that list many projects;
    ``has`` answers as ``has_role`` does."""

    def __init__(self, user):
        self.user = user
        self.by_project: dict[int, set[str]] = {}
        if user.is_authenticated:
            rows = Membership.objects.filter(user=user).values_list("project_id", "role")
            for project_id, role in rows:
                self.by_project.setdefault(project_id, set()).add(role)

    def has(self, project_id: int, *roles: str) -> bool:
        if not self.user.is_authenticated:
            return False
        return self.user.is_superuser or bool(self.by_project.get(project_id, set()) & set(roles))

    def has_anywhere(self, *roles: str) -> bool:
        """One of ``roles`` in some project (a site admin: always)."""
        if not self.user.is_authenticated:
            return False
        return self.user.is_superuser or any(set(r) & set(roles) for r in self.by_project.values())

    def can_edit(self, task: Task) -> bool:
        """``can_edit_task``, answered from the roles read once."""
        if not self.user.is_authenticated:
            return False
        return _may_edit(self.user, self.by_project.get(task.project_id, set()), task)


def has_role(user, project_id: int, *roles: str) -> bool:
    """True for a site admin, or a member with one of ``roles`` in the project."""
    if not user.is_authenticated:
        return False
    return user.is_superuser or bool(roles_in(user, project_id) & set(roles))


def require_role(user, project: Project | int, *roles: str, action: str = "") -> None:
    """AccessDenied naming the roles unless ``has_role``; ``action`` says what was refused."""
    project_id = project if isinstance(project, int) else project.pk
    if has_role(user, project_id, *roles):
        return
    name = project.name if isinstance(project, Project) else f"project {project_id}"
    needed = " or ".join(str(r) for r in roles)
    prefix = f"Only a {needed} of {name} may {action}" if action else ""
    raise AccessDenied(
        prefix + "." if prefix else f"You need the {needed} role in {name}.",
    )


def is_machine_user(user) -> bool:
    """A harness account: it calls the API with a token and never logs in with a password."""
    return Membership.objects.filter(user=user, role=Role.HARNESS).exists()


def member_project_ids(user, *roles: str):
    """The ids of projects where ``user`` has one of ``roles`` (any role when none is given),
    as a subquery."""
    memberships = Membership.objects.filter(user=user)
    if roles:
        memberships = memberships.filter(role__in=roles)
    return memberships.values("project_id")


def access_project(user, project_id: int, *, roles: tuple[str, ...] = ()) -> Project:
    """The project if ``user`` reads it; AccessDenied unless they also hold one of ``roles``."""
    try:
        project = Project.objects.visible_to(user).get(pk=project_id)
    except (Project.DoesNotExist, *BAD_ID):
        raise not_found("project") from None
    if roles and not has_role(user, project.pk, *roles):
        raise AccessDenied(
            f"You need one of the roles {', '.join(roles)} in project {project.name}."
        )
    return project


def access_task(user, task_id: int, *, for_update: bool = False, edit: bool = False) -> Task:
    """The task if ``user`` may read it; with ``edit``, AccessDenied unless they may change it.

    ``for_update`` also locks the row; the caller is then inside a transaction.
    """
    queryset = Task.objects.visible_to(user).select_related("project", "author")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    try:
        task = queryset.get(pk=task_id)
    except (Task.DoesNotExist, *BAD_ID):
        raise not_found("task") from None
    if edit:
        require_task_editor(user, task)
    return task


EDIT_REFUSED = "Only the task's author or a project lead may change this task."


def _may_edit(user, roles: set[str], task: Task) -> bool:
    """The one rule of who changes a task, given the user's roles in its project."""
    if user.is_superuser:
        return True
    return Role.LEAD in roles or (Role.AUTHOR in roles and task.author_id == user.pk)


def can_edit_task(user, task: Task) -> bool:
    if user.is_superuser:
        return True
    return _may_edit(user, roles_in(user, task.project_id), task)


def require_task_editor(user, task: Task) -> None:
    if not can_edit_task(user, task):
        raise AccessDenied(EDIT_REFUSED)


def editable_tasks(user, tasks) -> tuple[list[Task], list[tuple[Task, str]]]:
    """``tasks`` split into those ``user`` may change (as ``require_task_editor`` decides) and
    the others, each with the refusal's words; the user's roles are read once for all."""
    roles = ProjectRoles(user)
    allowed, refused = [], []
    for task in tasks:
        if roles.can_edit(task):
            allowed.append(task)
        else:
            refused.append((task, EDIT_REFUSED))
    return allowed, refused


def access_blocker(user, blocker_id: int, *, for_update: bool = False) -> Blocker:
    """The blocker if ``user`` may read its task; ``for_update`` locks the task row."""
    try:
        task_id = Blocker.objects.values_list("task_id", flat=True).get(pk=blocker_id)
    except (Blocker.DoesNotExist, *BAD_ID):
        raise not_found("blocker") from None
    try:
        task = access_task(user, task_id, for_update=for_update)
    except Http404:
        raise not_found("blocker") from None
    blocker = Blocker.objects.get(pk=blocker_id)
    blocker.task = task
    return blocker


def access_trigger_question(user, question_id: int, *, for_update: bool = False) -> TriggerQuestion:
    try:
        blocker_id = TriggerQuestion.objects.values_list("blocker_id", flat=True).get(
            pk=question_id
        )
    except (TriggerQuestion.DoesNotExist, *BAD_ID):
        raise not_found("trigger question") from None
    try:
        blocker = access_blocker(user, blocker_id, for_update=for_update)
    except Http404:
        raise not_found("trigger question") from None
    question = TriggerQuestion.objects.get(pk=question_id)
    question.blocker = blocker
    return question


# What an htmx request is told for a 404: the same words whether the object is missing or
# hidden, so they reveal nothing about which ids exist.
NOT_FOUND_TEXT = "Not found: it does not exist, or you may not see it."


class AccessDeniedMiddleware:
    """HTML views: the one place where a refusal raised by a view or a service becomes a
    response. ``AccessDenied`` (and Django's ``PermissionDenied``) is a 403 naming the reason,
    ``Http404`` a 404.

    A page request gets the 403 page (a 404 is left to Django's own page). An htmx request gets
    a one-line fragment with the same status instead: the workspace swaps 4xx fragments into
    the panel that asked, where a whole page would nest a page in a page.

    The API maps the same errors in its exception handler (``api_errors``), which DRF calls
    before any middleware sees the exception.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, AccessDenied | PermissionDenied):
            status, text = 403, str(exception) or "You may not do this here."
        elif isinstance(exception, Http404):
            status, text = 404, NOT_FOUND_TEXT
        else:
            return None
        if getattr(request, "htmx", False):
            fragment = format_html('<p class="error-report" role="alert">{}</p>', text)
            return HttpResponse(fragment, status=status)
        if status == 403:
            return permission_denied(request, PermissionDenied(text))
        return None
