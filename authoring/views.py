"""The authoring workspace: one page, its htmx fragments from partials of the same template."""

import logging
import secrets

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from sqlglot.errors import SqlglotError

from authoring import checks, drafts, lint
from authoring.selectors import changes_requested_context
from authoring.services import (
    lint_waive,
    lint_waiver_withdraw,
    open_findings,
    workspace_save,
)
from hilbench_annotate import envspec, workflow
from hilbench_annotate.access import access_task, can_edit_task, require_task_editor
from hilbench_annotate.databases import gold_sql_output
from hilbench_annotate.errors import DomainError, StaleVersion
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.models import Revision
from hilbench_annotate.params import param_id
from hilbench_annotate.services import task_snapshot
from hilbench_annotate.spec import sections_for, spec_sections
from hilbench_annotate.toolkit import gitrepo, patches, sqlconsole, sqlsyntax
from hilbench_annotate.toolkit.textdiff import snapshot_changes, word_diff_html
from hilbench_annotate.vocabulary import (
    QUALITY_CRITERIA,
    SQL_SUBTYPES,
    Domain,
    Surface,
    blocker_types_for,
)

TEMPLATE = "authoring/workspace.html"
SAVE_LOST = (
    "Not saved: the connection to the database was lost. Nothing of this save was stored "
    "and your edit is still in the form; save again."
)
logger = logging.getLogger(__name__)


def _editor_task(request, task_id: int):
    task = access_task(request.user, task_id)
    require_task_editor(request.user, task)
    return task


def _vocabulary(task) -> dict:
    return {
        "blocker_types": blocker_types_for(task.domain),
        "subtypes": SQL_SUBTYPES if task.domain == Domain.SQL else {},
        "surfaces": Surface.choices,
        "criteria": QUALITY_CRITERIA,
    }


def _blocker_rows(blockers: list[dict]) -> list[dict]:
    """Blocker dicts with the form index each fieldset uses."""
    return [{**b, "index": i} for i, b in enumerate(blockers)]


def _lint_context(task, findings: list[dict]) -> dict:
    waivers = {w.fingerprint: w for w in task.lint_waivers.select_related("created_by")}
    for finding in findings:
        finding["waiver"] = waivers.get(finding["fingerprint"])
    blocking = open_findings(task, findings)
    return {"findings": findings, "blocking": blocking, "rules": lint.RULES}


def _revision_number(task) -> int:
    """The number people know a task's saved state by (the version is only the form's lock)."""
    return task.revisions.order_by("-number").values_list("number", flat=True).first() or 0


def _workspace_context(request, task, snapshot: dict, findings: list[dict]) -> dict:
    """The page for ``snapshot``: the saved task, or a refused save's draft shown again."""
    env = task.environment
    pks = list(task.blockers.order_by("position", "id").values_list("pk", flat=True))
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
        "current_revision": _revision_number(task),
        # The page's editing session: its autosaves fold into one revision; a refused form
        # shown again keeps the session it was in.
        "session_key": request.POST.get("session", "")[:64] or secrets.token_urlsafe(12),
        "returned": changes_requested_context(task),
        "console_limits": (settings.SQL_CONSOLE_TIMEOUT_S, settings.SQL_CONSOLE_ROW_CAP),
        **_vocabulary(task),
        **_lint_context(task, findings),
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


def _draft(request, task) -> dict:
    return drafts.draft_from_form(
        domain=task.domain, data=request.POST, environment=task_snapshot(task)["environment"]
    )


def _expected_version(request) -> int:
    try:
        return int(request.POST.get("expected_version", ""))
    except ValueError:
        raise DomainError(
            "The form did not say which state of the task it edits; reload it."
        ) from None


def _save_kind(request) -> dict:
    """The page's editing session, and whether this save is an autosave (the page's script
    says so; Ctrl+S, the Save button and a plain form post are explicit saves)."""
    return {
        "session": request.POST.get("session", "")[:64],
        "autosave": request.POST.get("autosave") == "1",
    }


@login_required
@require_POST
def workspace_save_view(request, task_id: int):
    """Autosave and Ctrl-S: a session's autosaves fold into one revision, an explicit save
    closes it; a stale save shows both versions and who saved the task meanwhile."""
    try:
        task = _editor_task(request, task_id)
        draft = _draft(request, task)
        result = workspace_save(
            task=task,
            actor=request.user,
            expected_version=_expected_version(request),
            draft=draft,
            **_save_kind(request),
        )
    except StaleVersion as exc:
        task = access_task(request.user, task_id)
        theirs = task_snapshot(task)
        mine = _draft(request, task)
        last = task.revisions.select_related("author").first()
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
        draft = _draft(request, task)
        findings = checks.as_dicts(checks.draft_findings(task, draft))
        context = _workspace_context(request, task, draft, findings)
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
    blocker_pks = task.blockers.order_by("position", "id").values_list("pk", flat=True)
    context = {
        "task": task,
        "revision": result.revision,
        "saved": True,
        "blocker_pks": list(zip(request.POST.getlist("blocker"), blocker_pks, strict=False)),
        **_lint_context(task, result.findings),
    }
    return render(request, f"{TEMPLATE}#save-result", context)


@login_required
@require_POST
def workspace_lint(request, task_id: int):
    """Live lint of the unsaved form (nothing is stored)."""
    task = _editor_task(request, task_id)
    findings = checks.as_dicts(checks.draft_findings(task, _draft(request, task)))
    return render(
        request, f"{TEMPLATE}#lint-panel", {"task": task, **_lint_context(task, findings)}
    )


@login_required
@require_POST
def spec_diff(request, task_id: int, section: str):
    task = _editor_task(request, task_id)
    if section not in dict(sections_for(task.domain)):
        raise Http404("No such section.")
    html = word_diff_html(
        task.original_spec.get(section, ""), request.POST.get(f"spec.{section}", "")
    )
    return render(request, f"{TEMPLATE}#spec-diff", {"section": {"key": section, "diff": html}})


@login_required
@require_GET
def blocker_form(request, task_id: int):
    """An empty blocker fieldset for "Add blocker"."""
    task = _editor_task(request, task_id)
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
    context = {"task": task, "blocker": blocker, "editable": True, **_vocabulary(task)}
    return render(request, f"{TEMPLATE}#blocker", context)


@login_required
@require_POST
def waive(request, task_id: int):
    refused = None
    task = _editor_task(request, task_id)
    fingerprint = request.POST.get("fingerprint", "")
    try:
        if request.POST.get("withdraw"):
            lint_waiver_withdraw(task=task, actor=request.user, fingerprint=fingerprint)
        else:
            lint_waive(
                task=task,
                actor=request.user,
                fingerprint=fingerprint,
                reason=request.POST.get("reason", ""),
            )
    except DomainError as exc:
        refused = {
            "fingerprint": fingerprint,
            "reason": request.POST.get("reason", ""),
            "error": str(exc),
        }
    if request.htmx:
        # A refusal is said beside the finding, whose reason field keeps what was typed.
        findings = checks.as_dicts(checks.draft_findings(task, _draft(request, task)))
        context = {"task": task, "refused": refused, **_lint_context(task, findings)}
        return render(request, f"{TEMPLATE}#lint-panel", context, status=400 if refused else 200)
    if refused:
        messages.error(request, refused["error"])
    return redirect("workspace", task_id=task_id)


@login_required
@require_GET
def preview(request, task_id: int):
    """The three modes' instruction texts of the saved task, exactly as exported."""
    task = access_task(request.user, task_id)
    texts = task_instructions(task_snapshot(task))
    context = {
        "task": task,
        "modes": [(mode, texts[mode]) for mode in MODES],
        "current_revision": _revision_number(task),
    }
    if request.htmx:
        return render(request, f"{TEMPLATE}#preview", context)
    return render(request, "authoring/preview.html", context)


@login_required
@require_GET
def revisions(request, task_id: int):
    """Revision history; ``?a=N&b=M`` compares any two revisions."""
    task = access_task(request.user, task_id)
    history = list(task.revisions.select_related("author").defer("snapshot").order_by("-number"))
    context = {"task": task, "history": history, "can_edit": can_edit_task(request.user, task)}
    numbers = [r.number for r in history]
    latest = numbers[0] if numbers else None
    previous = numbers[1] if len(numbers) > 1 else latest
    a = param_id(request.GET["a"]) if request.GET.get("a") else previous
    b = param_id(request.GET["b"]) if request.GET.get("b") else latest
    if a and b:
        pair = {r.number: r for r in Revision.objects.filter(task=task, number__in=[a, b])}
        if a in pair and b in pair:
            context.update(
                a=pair[a], b=pair[b], changes=snapshot_changes(pair[a].snapshot, pair[b].snapshot)
            )
    return render(request, "authoring/revisions.html", context)


# --- SQL environment -------------------------------------------------------------------------


def _edit_script(task, request) -> str:
    """The edit script the console runs on: the saved one unless the form sends another,
    which only the task's editors may run (each distinct script builds a database copy)."""
    if task.domain != Domain.SQL:
        raise Http404("Not a SQL task.")
    saved = task.sql_environment.edit_script or ""
    edit_script = request.POST.get("env.edit_script", saved)
    if edit_script.strip() != saved.strip():
        require_task_editor(request.user, task)
    return edit_script


@login_required
@require_POST
def sql_query(request, task_id: int):
    """The read-only console: one SELECT, a time limit, a row cap and byte limits. The
    console's query (``console_sql``) answers under the console; the gold SQL
    (``env.gold_sql``, *Run gold SQL*) in the Gold SQL card, saying whose result it is."""
    task = access_task(request.user, task_id)
    if "console_sql" in request.POST:
        context = {"task": task, "sql": request.POST["console_sql"]}
    else:
        context = {
            "task": task,
            "sql": request.POST.get("env.gold_sql", ""),
            "result_id": "gold-query-result",
            "result_of": "the gold SQL",
        }
    sql = context["sql"]
    edit_script = _edit_script(task, request)
    try:
        path = checks.edited_database_path(task, edit_script)
        if path is None:
            raise DomainError("This task has no database file to query.")
        context["result"] = sqlconsole.run_select(
            path,
            sql,
            timeout_s=settings.SQL_CONSOLE_TIMEOUT_S,
            row_cap=settings.SQL_CONSOLE_ROW_CAP,
        )
    except DomainError as exc:
        context["error"] = str(exc)
    return render(request, f"{TEMPLATE}#query-result", context)


@login_required
@require_POST
def sql_format(request, task_id: int):
    task = _editor_task(request, task_id)
    sql = request.POST.get("env.gold_sql", "")
    try:
        text = ";\n".join(sqlsyntax.format_pretty(sql))
        error = ""
    except sqlsyntax.SqlTooComplex as exc:
        text, error = sql, str(exc)
    except SqlglotError as exc:
        text, error = sql, f"Does not parse: {exc}"
    return render(
        request,
        f"{TEMPLATE}#gold-sql",
        {
            "task": task,
            "gold_sql": text,
            "format_error": error,
            "editable": True,
            "golden_output": request.POST.get("env.golden_output"),
        },
    )


@login_required
@require_POST
def sql_golden(request, task_id: int):
    """Fill golden_output.csv from the gold SQL's result (saved with the next save)."""

    task = _editor_task(request, task_id)
    gold_sql = request.POST.get("env.gold_sql", "")
    context = {
        "task": task,
        "gold_sql": gold_sql,
        "editable": True,
        "golden_output": request.POST.get("env.golden_output", ""),
    }
    edit_script = _edit_script(task, request)
    try:
        path = checks.edited_database_path(task, edit_script)
        if path is None:
            raise DomainError("This task has no database file to run the gold SQL on.")
        context["golden_output"] = gold_sql_output(path, gold_sql)
    except DomainError as exc:
        context["format_error"] = str(exc)
    return render(request, f"{TEMPLATE}#gold-sql", context)


@login_required
@require_GET
def sql_table(request, task_id: int, table: str):
    task = access_task(request.user, task_id)
    if task.domain != Domain.SQL:
        raise Http404("Not a SQL task.")
    try:
        path = checks.edited_database_path(task, task.sql_environment.edit_script)
        if path is None:
            raise Http404("No database.")
        info = next((t for t in sqlconsole.read_schema(path) if t.name == table), None)
        if info is None:
            raise Http404("No such table.")
        sample = sqlconsole.sample_rows(path, table, limit=8)
    except DomainError as exc:
        return render(request, f"{TEMPLATE}#table", {"task": task, "table_error": str(exc)})
    context = {
        "task": task,
        "table": info,
        "sample": sample,
        "description_rows": _description_rows(task.sql_environment.descriptions.get(table, "")),
    }
    return render(request, f"{TEMPLATE}#table", context)


def _description_rows(csv_text: str) -> list[list[str]]:
    import csv
    import io

    return list(csv.reader(io.StringIO(csv_text)))


# --- SWE environment -------------------------------------------------------------------------


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

    Returns the new setup patch for the form (saved by the next save, like any edit).
    """
    task = _editor_task(request, task_id)
    env = _swe(task)
    path = request.POST.get("path", "")
    setup_patch = request.POST.get("env.setup_patch", env.setup_patch).replace("\r\n", "\n")
    new_text = request.POST.get("content", "").replace("\r\n", "\n")
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
    """An uploaded setup patch replaces the form's; one that leaves the repository is refused."""
    task = _editor_task(request, task_id)
    env = _swe(task)
    upload = request.FILES.get("patch_file")
    context = {
        "task": task,
        "editable": True,
        "setup_patch": request.POST.get("env.setup_patch", env.setup_patch),
    }
    status = 200
    try:
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
