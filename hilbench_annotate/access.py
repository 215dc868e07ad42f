"""``access_*`` helpers: an object is returned only if the user may see it.

Objects the user may not see are reported as absent (404), so ids do not leak which
tasks exist in other projects; objects the user may see but not change raise AccessDenied.
"""

from django.http import Http404

from hilbench_annotate.errors import AccessDenied
from hilbench_annotate.models import Blocker, Membership, Project, Task, TriggerQuestion
from hilbench_annotate.vocabulary import Role


def roles_in(user, project_id: int) -> set[str]:
    if not user.is_authenticated:
        return set()
    return set(
        Membership.objects.filter(user=user, project_id=project_id).values_list("role", flat=True)
    )


def access_project(user, project_id: int, *, roles: tuple[str, ...] = ()) -> Project:
    try:
        project = Project.objects.visible_to(user).get(pk=project_id)
    except (Project.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("No such project.") from None
    if roles and not user.is_superuser and not roles_in(user, project.pk) & set(roles):
        raise AccessDenied(
            f"You need one of the roles {', '.join(roles)} in project {project.name}."
        )
    return project


def access_task(user, task_id: int, *, for_update: bool = False) -> Task:
    """The task if ``user`` may read it.

    ``for_update`` also locks the row; the caller is then inside a transaction.
    """
    queryset = Task.objects.visible_to(user).select_related("project", "author")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    try:
        return queryset.get(pk=task_id)
    except (Task.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("No such task.") from None


def can_edit_task(user, task: Task) -> bool:
    if user.is_superuser:
        return True
    roles = roles_in(user, task.project_id)
    return Role.LEAD in roles or (Role.AUTHOR in roles and task.author_id == user.pk)


def require_task_editor(user, task: Task) -> None:
    if not can_edit_task(user, task):
        raise AccessDenied("Only the task's author or a project lead may change this task.")


def access_blocker(user, blocker_id: int, *, for_update: bool = False) -> Blocker:
    """The blocker if ``user`` may read its task; ``for_update`` locks the task row."""
    try:
        task_id = Blocker.objects.values_list("task_id", flat=True).get(pk=blocker_id)
    except (Blocker.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("No such blocker.") from None
    task = access_task(user, task_id, for_update=for_update)
    blocker = Blocker.objects.get(pk=blocker_id)
    blocker.task = task
    return blocker


def access_trigger_question(user, question_id: int, *, for_update: bool = False) -> TriggerQuestion:
    try:
        blocker_id = TriggerQuestion.objects.values_list("blocker_id", flat=True).get(
            pk=question_id
        )
    except (TriggerQuestion.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("No such trigger question.") from None
    blocker = access_blocker(user, blocker_id, for_update=for_update)
    question = TriggerQuestion.objects.get(pk=question_id)
    question.blocker = blocker
    return question
