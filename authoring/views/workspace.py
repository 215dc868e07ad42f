"""The authoring workspace: one page, its htmx fragments from partials of the same template;
saving it, a section's diff, an empty blocker fieldset and the instructions preview."""

import logging
import secrets

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from authoring import checks
from authoring.forms import SAVE, form_typed, spec_section
from authoring.selectors import (
    blocker_pks,
    changes_requested_context,
    last_revision,
    revision_number,
)
from authoring.serializers import SpecTextIn, WorkspaceSaveIn
from authoring.services import workspace_save
from authoring.views.common import (
    TEMPLATE,
    editor_task,
    form_draft,
    lint_context,
    vocabulary,
)
from hilbench_annotate import envspec, workflow
from hilbench_annotate.access import access_task, can_edit_task
from hilbench_annotate.errors import DomainError, StaleVersion
from hilbench_annotate.forminput import form_input
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.services import task_snapshot
from hilbench_annotate.spec import sections_for, spec_sections
from hilbench_annotate.toolkit import sqlconsole
from hilbench_annotate.toolkit.textdiff import snapshot_changes, word_diff_html
from hilbench_annotate.vocabulary import SQL_SUBTYPES, Domain, blocker_types_for

SAVE_LOST = (
    "Not saved: the connection to the database was lost. Nothing of this save was stored "
    "and your edit is still in the form; save again."
)
logger = logging.getLogger(__name__)


def _blocker_rows(blockers: list[dict]) -> list[dict]:
    """Blocker dicts with the form index each fieldset uses."""
    return [{**b, "index": i} for i, b in enumerate(blockers)]


def _workspace_context(
    request, task, snapshot: dict, findings: list[dict], *, session: str = ""
) -> dict:
    """The page for ``snapshot``: the saved task, or a refused save's draft shown again (in
    the editing ``session`` it was typed in)."""
    env = task.environment
    pks = blocker_pks(task=task)
    context = {
        "task": task,
        "env": env,
        "snapshot": snapshot,
        "sections": spec_sections(task.domain, task.original_spec, snapshot["blocked_spec"]),
        "blockers": _blocker_rows(
            # A refused draft names its own rows' pks (None for new ones); a saved snapshot
            # lists the rows in position order.
            [
                {"pk": pks[i] if i < len(pks) else None, **b}
                for i, b in enumerate(snapshot["blockers"])
            ]
        ),
        "editable": task.status in workflow.EDITABLE,
        "current_revision": revision_number(task=task),
        # The page's editing session: its autosaves fold into one revision; a refused form
        # shown again keeps the session it was in.
        "session_key": session[:64] or secrets.token_urlsafe(12),
        "returned": changes_requested_context(task=task),
        "console_limits": (settings.SQL_CONSOLE_TIMEOUT_S, settings.SQL_CONSOLE_ROW_CAP),
        **vocabulary(task),
        **lint_context(task, findings),
    }
    if task.domain == Domain.SQL:
        context["tables"], context["database_error"] = _tables(
            task, snapshot["environment"].get("edit_script", "")
        )
        context["business_info_text"] = "\n".join(snapshot["environment"].get("business_info", []))
        context["descriptions"] = sorted(
            (snapshot["environment"].get("descriptions") or {}).items()
        )
    else:
        context["spec_languages"] = envspec.LANGUAGES
        context["log_parsers"] = sorted(envspec.LOG_PARSERS.items())
        context["log_parser_names"] = list(envspec.LOG_PARSERS)
    return context


def _tables(task, edit_script: str) -> tuple[list, str]:
    """The schema to browse, and why there is none when the database cannot be read."""
    try:
        path = checks.edited_database_path(task, edit_script)
    except DomainError:
        path = None
    try:
        path = path or checks.edited_database_path(task, "")
        return (sqlconsole.read_schema(path) if path else []), ""
    except DomainError as exc:
        return [], str(exc)


@login_required
@require_GET
@never_cache  # "back" must reload the saved state, never show a stale form
def workspace(request, task_id: int):
    task = access_task(request.user, task_id)
    if not can_edit_task(request.user, task):
        messages.info(
            request, "Only the task's author or a lead can edit it; here it is read-only."
        )
        return redirect("task-detail", task_id=task.pk)
    snapshot = task_snapshot(task)
    findings = checks.as_dicts(checks.draft_findings(task, snapshot))
    return render(request, TEMPLATE, _workspace_context(request, task, snapshot, findings))


@login_required
@require_POST
def workspace_save_view(request, task_id: int):
    """Autosave and Ctrl-S: a session's autosaves fold into one revision, an explicit save
    closes it; a stale save shows both versions and who saved the task meanwhile. Beside
    the draft, the form is read through ``WorkspaceSaveIn``."""
    typed = form_typed(request.POST, SAVE)
    try:
        task = editor_task(request, task_id)
        draft = form_draft(request, task)
        data = form_input(WorkspaceSaveIn, typed)
        result = workspace_save(
            task=task,
            actor=request.user,
            expected_version=data["expected_version"],
            draft=draft,
            session=data["session"],
            autosave=data["autosave"],
        )
    except StaleVersion as exc:
        task = access_task(request.user, task_id)
        theirs = task_snapshot(task)
        mine = form_draft(request, task)
        last = last_revision(task=task)
        context = {
            "task": task,
            "conflict": exc,
            "changes": snapshot_changes(theirs, mine),
            "last_revision": last,
            "saved_by_me": last is not None and last.author_id == request.user.pk,
        }
        if request.htmx:
            return render(request, f"{TEMPLATE}#save-conflict", context, status=409)
        return render(request, "authoring/conflict.html", context, status=409)
    except DomainError as exc:
        if request.htmx:
            return render(request, f"{TEMPLATE}#save-status", {"error": str(exc)}, status=400)
        # Without htmx the whole page comes back, showing the refused form as it was sent.
        messages.error(request, str(exc))
        task = access_task(request.user, task_id)
        draft = form_draft(request, task)
        findings = checks.as_dicts(checks.draft_findings(task, draft))
        context = _workspace_context(
            request, task, draft, findings, session=typed.get("session", "")
        )
        return render(request, TEMPLATE, context, status=exc.status_code)
    except (OperationalError, InterfaceError):
        # The database went away mid-save: the transaction rolled back, so nothing of this
        # save is stored and the same form (same expected_version) may simply be sent again.
        logger.exception("workspace save of task %s lost its database connection", task_id)
        # Rendered without the request: its context processors would query the database.
        body = render_to_string(f"{TEMPLATE}#save-status", {"error": SAVE_LOST})
        return HttpResponse(body, status=503, headers={"Retry-After": "1"})
    if not request.htmx:
        messages.success(request, "Saved." if result.revision else "Nothing had changed.")
        return redirect("workspace", task_id=task.pk)
    # Positions follow page order; give each fieldset (by its form index) its row's pk, so
    # the next save updates these rows instead of making new ones.
    pks = blocker_pks(task=task)
    context = {
        "task": task,
        "revision": result.revision,
        "saved": True,
        "blocker_pks": list(zip(data["blocker"], pks, strict=False)),
        **lint_context(task, result.findings),
    }
    return render(request, f"{TEMPLATE}#save-result", context)


@login_required
@require_POST
def spec_diff(request, task_id: int, section: str):
    task = editor_task(request, task_id)
    if section not in dict(sections_for(task.domain)):
        raise Http404("No such section.")
    try:
        text = form_input(SpecTextIn, form_typed(request.POST, spec_section(section)))["text"]
    except DomainError as exc:
        # Said where the diff would be: the fragment has no other place for it.
        html = format_html('<span class="error" role="alert">{}</span>', exc)
        context = {"section": {"key": section, "diff": html}}
        return render(request, f"{TEMPLATE}#spec-diff", context, status=400)
    html = word_diff_html(task.original_spec.get(section, ""), text)
    return render(request, f"{TEMPLATE}#spec-diff", {"section": {"key": section, "diff": html}})


@login_required
@require_GET
def blocker_form(request, task_id: int):
    """An empty blocker fieldset for "Add blocker"."""
    task = editor_task(request, task_id)
    try:
        index = int(request.GET.get("index", "0"))
    except ValueError:
        index = 0
    types = blocker_types_for(task.domain)
    blocker = {
        "index": index,
        "pk": None,
        "id": f"blocker_{index + 1}",
        "type": types[0],
        "subtype": SQL_SUBTYPES[types[0]][0] if task.domain == Domain.SQL else "",
        "description": "",
        "resolution": "",
        "surfaces_in": "",
        "criteria": {},
        "trigger_questions": ["", "", ""],
    }
    context = {"task": task, "blocker": blocker, "editable": True, **vocabulary(task)}
    return render(request, f"{TEMPLATE}#blocker", context)


@login_required
@require_GET
def preview(request, task_id: int):
    """The three modes' instruction texts of the saved task, exactly as exported."""
    task = access_task(request.user, task_id)
    texts = task_instructions(task_snapshot(task))
    context = {
        "task": task,
        "modes": [(mode, texts[mode]) for mode in MODES],
        "current_revision": revision_number(task=task),
    }
    if request.htmx:
        return render(request, f"{TEMPLATE}#preview", context)
    return render(request, "authoring/preview.html", context)
