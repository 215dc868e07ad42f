"""SQL nested far deeper than sqlglot can recurse (issue 24, item 5): every parse is refused
by ``toolkit.sqlsyntax`` with a message naming the limit, before sqlglot sees it, on every
path that reads task or user SQL — the console, Format, save, a BIRD import, validation and
the export — and an import's JSON nested as deep is refused the same way."""

import json
import time

import pytest
from django.urls import reverse

from exchange.importers import import_bird
from exchange.importers.records import MAX_JSON_DEPTH
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import SqlEnvironment, Task
from hilbench_annotate.toolkit import sqlsyntax
from hilbench_annotate.toolkit.sqlconsole import QueryRefused, check_select
from validators.sql import _check_parses

from ..exchange.bundle_helpers import export, members, seed_demo, sql_task
from .test_workspace import form_data, save

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
DEEP = "SELECT " + "(" * 3000 + "1" + ")" * 3000
LIMIT_SAID = f"at most {sqlsyntax.MAX_SQL_NESTING} are accepted"


def test_the_scan_counts_parentheses_and_case_outside_strings_and_comments():
    assert sqlsyntax.nesting_depth("SELECT 1") == 0
    assert sqlsyntax.nesting_depth("SELECT ((1)), (2)") == 2
    assert sqlsyntax.nesting_depth("SELECT CASE WHEN a THEN (CASE WHEN b THEN 1 END) END") == 3
    quoted = "SELECT '((((', \"(((\", [((], `((` -- ((((\n /* (((( */ FROM t"
    assert sqlsyntax.nesting_depth(quoted) == 0
    assert sqlsyntax.nesting_depth("SELECT 'it''s ((', (1)") == 1
    started = time.monotonic()
    with pytest.raises(sqlsyntax.SqlTooComplex, match="nests 3000 levels deep; " + LIMIT_SAID):
        sqlsyntax.parse(DEEP)
    with pytest.raises(sqlsyntax.SqlTooComplex, match="at most 20,000 are accepted"):
        sqlsyntax.parse("SELECT 1" + " " * 30_000)
    assert time.monotonic() - started < 0.5
    # Nesting the scan does not count still ends in the same refusal, not a RecursionError.
    with pytest.raises(sqlsyntax.SqlTooComplex, match="nests too deeply"):
        sqlsyntax.format_pretty("SELECT " + "NOT " * 2000 + "1")
    # What real gold SQL looks like parses as before.
    assert sqlsyntax.parse("SELECT CASE WHEN ((a)) THEN 1 END FROM t")[0] is not None


def test_the_console_refuses_it_naming_the_limit():
    with pytest.raises(QueryRefused, match=LIMIT_SAID):
        check_select(DEEP)


def test_a_reviewer_s_console_query_is_answered_with_the_limit(client, sql_task, reviewer):
    client.force_login(reviewer)
    started = time.monotonic()
    response = client.post(
        reverse("workspace-sql-query", args=[sql_task.pk]), {"console_sql": DEEP}, **HTMX
    )
    assert response.status_code == 200
    assert LIMIT_SAID in response.content.decode()
    assert time.monotonic() - started < 3


def test_format_says_why_it_did_not_format(client, sql_task, author):
    client.force_login(author)
    response = client.post(
        reverse("workspace-sql-format", args=[sql_task.pk]), {"env.gold_sql": DEEP}, **HTMX
    )
    assert response.status_code == 200
    assert LIMIT_SAID in response.content.decode()
    unterminated = client.post(
        reverse("workspace-sql-format", args=[sql_task.pk]),
        {"env.gold_sql": "SELECT 'open"},
        **HTMX,
    )
    assert unterminated.status_code == 200 and "Does not parse" in unterminated.content.decode()


def test_saving_it_stores_it_with_a_lint_finding_and_the_workspace_still_opens(
    client, sql_task, author
):
    client.force_login(author)
    response = save(client, sql_task, form_data(sql_task, **{"env.gold_sql": DEEP}), **HTMX)
    assert response.status_code == 200
    assert LIMIT_SAID in response.content.decode()
    sql_task.refresh_from_db()
    assert sql_task.sql_environment.gold_sql == DEEP
    assert client.get(reverse("workspace", args=[sql_task.pk])).status_code == 200


def test_validation_fails_the_parse_check_naming_the_limit():
    result = _check_parses(DEEP, None, "no database")
    assert result.outcome == "failed"
    assert LIMIT_SAID in result.message


def test_a_bird_import_refuses_the_record_naming_its_question_id(project, tmp_path, demo_data):
    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[1]["SQL"] = DEEP
    questions = tmp_path / "deep.json"
    questions.write_text(json.dumps(records))
    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=questions, databases=demo_data["sql"]["databases"])
    assert err.value.problems == [
        (
            1,
            f"question_id {records[1]['question_id']}: The SQL nests 3000 levels deep; "
            f"{LIMIT_SAID} (parentheses and CASE … END).",
        )
    ]
    assert not Task.objects.filter(project=project).exists()


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_record_nested_past_the_json_limit_is_refused_in_both_formats(
    project, tmp_path, demo_data, suffix
):
    records = json.loads(demo_data["sql"]["questions"].read_text())[:2]
    nested = "[" * 100_000 + "]" * 100_000
    lines = [json.dumps(r) for r in records]
    lines[1] = lines[1][:-1] + f', "extra": {nested}}}'
    questions = tmp_path / f"nested{suffix}"
    questions.write_text(("[" + ",".join(lines) + "]") if suffix == ".json" else "\n".join(lines))
    started = time.monotonic()
    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=questions, databases=demo_data["sql"]["databases"])
    assert time.monotonic() - started < 5
    ((where, reason),) = err.value.problems
    assert where == 1
    assert (f"deeper than {MAX_JSON_DEPTH}" in reason) if suffix == ".json" else "nests" in reason


def test_an_export_with_such_a_task_finishes(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    task = sql_task(project)
    # As an older import stored it, before the limit.
    SqlEnvironment.objects.filter(task=task).update(gold_sql=DEEP)
    bundle = export(project, tmp_path / "deep.tar.gz", tasks=[task])
    assert members(bundle)
