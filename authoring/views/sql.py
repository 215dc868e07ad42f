"""The SQL task's environment in the workspace: the read-only console, formatting the gold
SQL, filling the golden output from it, and a table's schema with sample rows."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST
from sqlglot.errors import SqlglotError

from authoring import checks
from authoring.forms import SQL, form_typed
from authoring.serializers import ConsoleIn, GoldSqlIn
from authoring.views.common import TEMPLATE, editor_task
from hilbench_annotate.access import access_task, require_task_editor
from hilbench_annotate.databases import gold_sql_output
from hilbench_annotate.errors import DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.toolkit import sqlconsole, sqlsyntax
from hilbench_annotate.vocabulary import Domain


def _edit_script(task, user, posted: str | None) -> str:
    """The edit script the console runs on: the saved one unless the form sends another,
    which only the task's editors may run (each distinct script builds a database copy)."""
    if task.domain != Domain.SQL:
        raise Http404("Not a SQL task.")
    saved = task.sql_environment.edit_script or ""
    edit_script = saved if posted is None else posted
    if edit_script.strip() != saved.strip():
        require_task_editor(user, task)
    return edit_script


@login_required
@require_POST
def sql_query(request, task_id: int):
    """The read-only console: one SELECT, a time limit, a row cap and byte limits. The
    console's query (``console_sql``) answers under the console; the gold SQL
    (``env.gold_sql``, *Run gold SQL*) in the Gold SQL card, saying whose result it is. The
    form is read through ``ConsoleIn``."""
    task = access_task(request.user, task_id)
    typed = form_typed(request.POST, SQL)
    context = {"task": task}
    if "console_sql" not in typed:
        context.update(result_id="gold-query-result", result_of="the gold SQL")
    try:
        data = form_input(ConsoleIn, typed)
    except DomainError as exc:
        return render(
            request, f"{TEMPLATE}#query-result", {**context, "error": str(exc)}, status=400
        )
    edit_script = _edit_script(task, request.user, data.get("edit_script"))
    try:
        path = checks.edited_database_path(task, edit_script)
        if path is None:
            raise DomainError("This task has no database file to query.")
        context["result"] = sqlconsole.run_select(
            path,
            data.get("console_sql", data["gold_sql"]),
            timeout_s=settings.SQL_CONSOLE_TIMEOUT_S,
            row_cap=settings.SQL_CONSOLE_ROW_CAP,
        )
    except DomainError as exc:
        context["error"] = str(exc)
    return render(request, f"{TEMPLATE}#query-result", context)


def _gold_sql_card(request, task, typed, *, error: str, status: int = 200):
    """The Gold SQL card as typed, saying why the form was refused."""
    context = {
        "task": task,
        "gold_sql": typed.get("gold_sql", ""),
        "golden_output": typed.get("golden_output"),
        "format_error": error,
        "editable": True,
    }
    return render(request, f"{TEMPLATE}#gold-sql", context, status=status)


@login_required
@require_POST
def sql_format(request, task_id: int):
    """Format the gold SQL (the form read through ``GoldSqlIn``)."""
    task = editor_task(request, task_id)
    typed = form_typed(request.POST, SQL)
    try:
        data = form_input(GoldSqlIn, typed)
    except DomainError as exc:
        return _gold_sql_card(request, task, typed, error=str(exc), status=400)
    sql = data["gold_sql"]
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
            "golden_output": data.get("golden_output"),
        },
    )


@login_required
@require_POST
def sql_golden(request, task_id: int):
    """Fill golden_output.csv from the gold SQL's result (saved with the next save); the form
    read through ``GoldSqlIn``."""

    task = editor_task(request, task_id)
    typed = form_typed(request.POST, SQL)
    try:
        data = form_input(GoldSqlIn, typed)
    except DomainError as exc:
        return _gold_sql_card(request, task, typed, error=str(exc), status=400)
    gold_sql = data["gold_sql"]
    context = {
        "task": task,
        "gold_sql": gold_sql,
        "editable": True,
        "golden_output": data.get("golden_output", ""),
    }
    edit_script = _edit_script(task, request.user, data.get("edit_script"))
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
