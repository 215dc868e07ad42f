"""A BIRD import from the Import page whose file has two kinds of problem: the report names
both at once, in the page's own words."""

import json
import zipfile

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .conftest import new_page

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_jobs():
    """Import jobs run in the web process, right after the commit that queues them."""
    from hilbench_annotate.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_a_bad_record_and_a_missing_database_are_reported_together(
    browser, live_server, demo, demo_data, eager_jobs, tmp_path
):
    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[3]["SQL"] = 42
    records.append({**records[0], "question_id": 900, "db_id": "harbour_fees"})
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps(records))
    databases = tmp_path / "dbs.zip"
    root = demo_data["sql"]["databases"]
    with zipfile.ZipFile(databases, "w") as archive:
        for path in root.rglob("*"):
            if path.is_file():
                archive.write(path, path.relative_to(root.parent))
    before = Task.objects.count()

    page = new_page(browser, live_server, "author")
    page.goto(f"{live_server.url}/imports/")
    page.select_option("#id_kind", "bird")
    page.select_option("#id_project", label="Demo benchmark")
    page.set_input_files("#id_questions", str(questions))
    page.set_input_files("#id_databases", str(databases))
    page.click("button:has-text('Start import')")

    status = page.locator("#job-status")
    expect(status.locator(".status")).to_have_text("Failed", timeout=30_000)
    report = status.locator(".error-report")
    expect(report).to_contain_text("1 bad record(s); missing database file(s) harbour_fees")
    expect(report).to_contain_text("record 3: SQL must be non-empty text")
    expect(report).to_contain_text(
        "database harbour_fees: harbour_fees/harbour_fees.sqlite is missing (1 question(s) "
        "use it); add it, or tick “Import questions whose database is absent (noted on the "
        "task)” to import its questions without it"
    )
    assert "--skip-missing-databases" not in report.inner_text()
    expect(status).to_contain_text("Nothing was imported")
    assert Task.objects.count() == before
    page.context.close()


def test_the_page_shows_the_fields_of_the_chosen_kind_from_the_importer_registry(
    browser, live_server, demo
):
    from exchange.services.imports import IMPORTERS

    page = new_page(browser, live_server, "author")
    page.goto(f"{live_server.url}/imports/")
    every = {name for importer in IMPORTERS.values() for name in importer.fields}
    for kind, importer in IMPORTERS.items():
        page.select_option("#id_kind", kind)
        for name in every:
            field = page.locator(f".kind-field[data-field={name}]")
            if name in importer.fields:
                expect(field).to_be_visible()
            else:
                expect(field).to_be_hidden()
    page.context.close()
