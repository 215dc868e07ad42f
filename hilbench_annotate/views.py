"""HTML views: function-based; htmx requests get a partial of the same template."""

from urllib.parse import parse_qs, urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from hilbench_annotate import selectors, services
from hilbench_annotate.access import access_task, can_edit_task
from hilbench_annotate.bulk_actions import bulk_menu, bulk_params
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.forms import TokenForm, tags_input, tags_typed
from hilbench_annotate.panels import task_panels
from hilbench_annotate.serializers import TaskBulkIn, TokenRevokeIn
from hilbench_annotate.services.tokens import api_token_create, api_token_revoke
from hilbench_annotate.spec import sections_for
from hilbench_annotate.vocabulary import QUALITY_CRITERIA, Domain, TaskStatus
from hilbench_annotate.workflow import EDITABLE

PAGE_SIZE = 25


@login_required
@require_GET
def task_list(request):
    filters = selectors.task_filters_clean(filters=request.GET)
    if request.htmx and _project_changed(request, filters):
        # The filter menus are the chosen project's and htmx swaps the results only: a
        # change of project loads the whole page, menus and all.
        return HttpResponseClientRedirect(request.get_full_path())
    ignored = [
        k for k in selectors.TASK_FILTERS if request.GET.get(k, "").strip() and not filters[k]
    ]
    if ignored and not request.htmx:
        messages.info(request, f"Ignored the filter(s) {', '.join(ignored)}: no task can match.")
    tasks = selectors.task_list(user=request.user, filters=filters)
    # The page's ids first (the task table alone, in its list order), then their rows with
    # what a row shows: joined before the sort, every task of the projects was read.
    ids = selectors.task_ids(tasks=tasks)
    page = Paginator(ids, PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = selectors.task_rows(ids=list(page.object_list))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "page": page,
        "filters": filters,
        "filtered": any(filters.values()),
        "query": query.urlencode(),
        "domains": Domain.choices,
        "statuses": TaskStatus.choices,
    }
    context["bulk"] = bulk_menu(request.user)
    if request.htmx:
        return render(request, "tasks/list.html#results", context)
    context["choices"] = selectors.filter_choices(user=request.user, project=filters["project"])
    return render(request, "tasks/list.html", context)


def _project_changed(request, filters) -> bool:
    """Whether an htmx request of the list asks for another project than the page shows
    (htmx names the page in HX-Current-URL)."""
    if not request.htmx.current_url:
        return False
    shown = parse_qs(urlsplit(request.htmx.current_url).query).get("project", [""])[0]
    return selectors.task_filters_clean(filters={"project": shown})["project"] != filters["project"]


@login_required
@require_POST
def task_bulk(request):
    """Apply a bulk action to the tasks ticked on the list, or to every task its filter
    matches (``scope=all``); back to the list, as filtered, with what was done."""
    filters = selectors.task_filters_clean(filters=request.POST)
    page = ""
    try:
        data = form_input(TaskBulkIn, request.POST)
        page = data["page"]
        report = services.task_bulk_apply(
            actor=request.user,
            action=data["action"],
            params=bulk_params(data["action"], request.POST),
            ids=data["ids"],
            filters=filters if data["scope"] == "all" else None,
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.add_message(request, report.level, report.text)
    query = {k: v for k, v in filters.items() if v}
    if page.isdigit() and page != "1":
        query["page"] = page
    return redirect(reverse("task-list") + (f"?{urlencode(query)}" if query else ""))


@login_required
@require_http_methods(["POST"])
def task_tags(request, task_id: int):
    """Replace a task's tags (its author or a lead)."""
    task = access_task(request.user, task_id, edit=True)
    typed = tags_typed(request.POST)
    try:
        names = services.task_tags_set(task=task, actor=request.user, names=tags_input(typed))
    except DomainError as exc:
        # The page again with the tags as typed, so fixing one name loses none of the others.
        messages.error(request, str(exc))
        return _task_page(request, task_id, typed_tags=typed, status=400)
    messages.success(request, "Tags: " + (", ".join(names) or "none") + ".")
    return redirect("task-detail", task_id=task.pk)


@login_required
@require_GET
def task_detail(request, task_id: int):
    return _task_page(request, task_id)


def _task_page(request, task_id: int, *, typed_tags: str | None = None, status: int = 200):
    task = selectors.task_detail(user=request.user, task_id=task_id)
    sections = [
        (label, task.original_spec.get(key, ""), task.blocked_spec.get(key, ""))
        for key, label in sections_for(task.domain)
    ]
    revisions = selectors.recent_revisions(task=task)
    context = {
        "task": task,
        "env": task.environment,
        "sections": sections,
        "revisions": revisions,
        "revision": revisions[0] if revisions else None,
        "criteria": QUALITY_CRITERIA,
        "can_edit": can_edit_task(request.user, task),
        "editable": task.status in EDITABLE,
        "typed_tags": typed_tags,
    }
    context.update(task_panels(task=task, user=request.user, page=context))
    return render(request, "tasks/detail.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    """The user's API tokens: a post names a token to revoke (``TokenRevokeIn``), or else
    creates one (``TokenForm``)."""
    form = TokenForm(request.POST or None)
    new_key = None
    if request.method == "POST":
        try:
            revoke = form_input(TokenRevokeIn, request.POST)["revoke"]
        except DomainError as exc:
            messages.error(request, str(exc))
            return _token_page(request, TokenForm(), status=exc.status_code)
        if revoke is not None:
            try:
                token = api_token_revoke(user=request.user, token_id=revoke)
            except DomainError:
                raise Http404("No such token.") from None
            messages.success(request, f"Token {token.name} revoked.")
            return redirect("token-list")
        if form.is_valid():
            _token, new_key = api_token_create(user=request.user, name=form.cleaned_data["name"])
            form = TokenForm()
    return _token_page(request, form, new_key=new_key)


def _token_page(request, form, *, new_key=None, status: int = 200):
    tokens = selectors.api_tokens(user=request.user)
    context = {"form": form, "tokens": tokens, "new_key": new_key}
    return render(request, "tokens.html", context, status=status)
