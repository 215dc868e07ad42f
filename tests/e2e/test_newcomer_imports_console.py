"""Issue 30, items 4 and 5: an import error names the file the user uploaded and the place in
it; in the SQL console, each result is shown with the query that produced it."""

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .conftest import login
from .test_imports import eager_jobs  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

BROKEN_LINE = '  {"question_id": 2, "db_id": "retail_bank" "question": "Clients?", "SQL": "x"},'
MALFORMED = "\n".join(
    [
        "[",
        '  {"question_id": 1, "db_id": "retail_bank", "question": "How many loans?", "SQL": "x"},',
        BROKEN_LINE,
        "]",
        "",
    ]
)


def test_a_malformed_upload_is_named_with_the_line_and_column(
    page,
    live_server,
    demo,
    eager_jobs,  # noqa: F811
    tmp_path,
):
    """Item 4: the error named ``questions.json`` (the name the server stores the upload
    under) and called the JSON syntax error "record 0", its caret on a blank line. It names
    the uploaded file and the line and column, with that line and a caret under the column."""
    upload = tmp_path / "malformed.json"
    upload.write_text(MALFORMED)
    column = BROKEN_LINE.index('"question"') + 1  # where the comma is missing
    before = Task.objects.count()

    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/imports/")
    page.select_option("#id_kind", "bird")
    page.select_option("#id_project", label="Demo benchmark")
    page.set_input_files("#id_questions", str(upload))
    page.check("#id_skip_missing_databases")
    page.click("button:has-text('Start import')")

    status = page.locator("#job-status")
    expect(status.locator(".status")).to_have_text("Failed", timeout=30_000)
    report = status.locator(".error-report")
    expect(report).to_contain_text(f"malformed.json: not valid JSON at line 3, column {column}")
    text = report.inner_text()
    assert "questions.json" not in text
    assert "record 0" not in text
    lines = text.splitlines()
    shown = next(i for i, line in enumerate(lines) if '{"question_id": 2, ' in line)
    caret = lines[shown + 1]
    assert caret.strip() == "^"
    assert lines[shown][caret.index("^")] == '"'
    assert lines[shown][caret.index("^") :].startswith('"question"')
    assert Task.objects.count() == before


def test_the_gold_sql_result_is_shown_with_the_gold_sql(page, live_server, demo):
    """Item 5: after the console's query failed, *Run gold SQL* put the gold query's result
    where the console's answer goes, under the console's text: it read as the answer to
    ``SELECT * FROM nosuchtable``. The gold run answers in the Gold SQL card, saying so, and
    the console keeps its own query's answer."""
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/0")
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    page.click("[data-tab=env]")

    console = page.locator(".card", has=page.locator("#console-sql"))
    gold = page.locator(".card", has=page.locator("#gold-sql-text"))
    page.fill("#console-sql", "SELECT * FROM nosuchtable")
    console.locator("button:text-is('Run')").click()
    expect(console.locator(".error")).to_contain_text("nosuchtable")

    gold.locator("button:text-is('Run gold SQL')").click()
    answer = gold.locator(".query-result")
    expect(answer.locator("table.result")).to_be_visible()
    expect(answer).to_contain_text("Result of the gold SQL")
    # The console still answers its own query, and shows no other one's result.
    expect(console.locator(".error")).to_contain_text("nosuchtable")
    expect(console.locator("table.result")).to_have_count(0)
    expect(page.locator("#console-sql")).to_have_value("SELECT * FROM nosuchtable")
