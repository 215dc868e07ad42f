"""The SWE task's repository in the workspace: browsing it at the base commit, a file edited in
the browser folded into the setup patch, and an uploaded setup patch."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from authoring import checks
from authoring.forms import REPO_EDIT, SETUP_PATCH, form_typed
from authoring.serializers import RepoEditIn, SetupPatchIn
from authoring.views.common import TEMPLATE, editor_task
from hilbench_annotate import workflow
from hilbench_annotate.access import access_task, can_edit_task
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.toolkit import gitrepo, patches
from hilbench_annotate.vocabulary import Domain


def _swe(task):
    if task.domain != Domain.SWE or task.swe_environment.repository is None:
        raise Http404("No repository for this task.")
    return task.swe_environment


@login_required
@require_GET
def repo_browse(request, task_id: int):
    """Browse the repository at the base commit, from git objects (no checkout)."""
    task = access_task(request.user, task_id)
    env = _swe(task)
    path = request.GET.get("path", "").strip("/")
    context = {"task": task, "path": path, "parts": _crumbs(path)}
    try:
        if request.GET.get("file"):
            setup_patch = request.GET.get("setup_patch")
            context["file"] = path
            context["content"] = patches.file_after(
                env.repository.path,
                env.base_commit,
                env.setup_patch if setup_patch is None else setup_patch,
                path,
            )
            context["editable"] = (
                can_edit_task(request.user, task) and task.status in workflow.EDITABLE
            )
        else:
            context["entries"] = gitrepo.list_tree(env.repository.path, env.base_commit, path)
    except DomainError as exc:
        context["error"] = str(exc)
    return render(request, f"{TEMPLATE}#repo", context)


def _crumbs(path: str) -> list[tuple[str, str]]:
    parts = [p for p in path.split("/") if p]
    return [(name, "/".join(parts[: i + 1])) for i, name in enumerate(parts)]


@login_required
@require_POST
def repo_edit(request, task_id: int):
    """Turn a file edited in the browser into that file's section of the setup patch.

    Returns the new setup patch for the form (saved by the next save, like any edit). The
    form is read through ``RepoEditIn``.
    """
    task = editor_task(request, task_id)
    env = _swe(task)
    typed = form_typed(request.POST, REPO_EDIT)
    try:
        data = form_input(RepoEditIn, typed)
    except DomainError as exc:
        context = {
            "task": task,
            "editable": True,
            "setup_patch": typed.get("setup_patch", env.setup_patch),
            "error": str(exc),
        }
        return render(request, f"{TEMPLATE}#setup-patch", context, status=400)
    path = data["path"]
    setup_patch = data.get("setup_patch", env.setup_patch).replace("\r\n", "\n")
    new_text = data["content"].replace("\r\n", "\n")
    context = {"task": task, "editable": True}
    try:
        base = (
            gitrepo.read_file(env.repository.path, env.base_commit, path)
            if gitrepo.file_exists(env.repository.path, env.base_commit, path)
            else None
        )
        section = patches.file_diff(path, base, new_text)
        context["setup_patch"] = patches.replace_file_diff(setup_patch, path, section)
        context["message"] = (
            f"{path}: edit folded into the setup patch; it is saved with the next save."
        )
    except DomainError as exc:
        context["setup_patch"] = setup_patch
        context["error"] = str(exc)
    return render(request, f"{TEMPLATE}#setup-patch", context)


@login_required
@require_POST
def setup_patch_upload(request, task_id: int):
    """An uploaded setup patch replaces the form's; one that leaves the repository is refused.
    The form's setup patch is read through ``SetupPatchIn`` (the file is not a form field)."""
    task = editor_task(request, task_id)
    env = _swe(task)
    upload = request.FILES.get("patch_file")
    typed = form_typed(request.POST, SETUP_PATCH)
    context = {
        "task": task,
        "editable": True,
        "setup_patch": typed.get("setup_patch", env.setup_patch),
    }
    status = 200
    try:
        form_input(SetupPatchIn, typed)
        if upload is None:
            raise DomainError("Choose a patch file to upload.")
        if upload.size > 5 * 1024 * 1024:
            raise DomainError(f"{upload.name} is larger than 5 MB; a setup patch should be small.")
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise DomainError(f"{upload.name} is not UTF-8 text.") from None
        text = text.replace("\r\n", "\n")
        problems = checks.setup_patch_problems(env, text)
        if problems:
            raise DomainError(f"{upload.name} is refused: " + "; ".join(problems))
        patches.check_applies(env.repository.path, env.base_commit, [("setup patch", text)])
        context["setup_patch"] = text
        context["message"] = f"{upload.name} applies cleanly; it is saved with the next save."
    except DomainError as exc:
        context["error"] = str(exc)
        status = 400
    return render(request, f"{TEMPLATE}#setup-patch", context, status=status)
