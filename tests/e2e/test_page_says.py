"""Issue 45, item 6: what a page forgot or did not say, each seen where the need arises.

(a) *Measure the judge*'s figures stay on the Judge validation page after a reload, with
when and which judge measured them, and say when they went stale; (b) the task page says
whether the task's environment is built and links its build; (c) the export a Harbor run
made for itself reads as the run's in *Recent exports*, not as the lead's; (d) the blocker
form says which blocker types and subtypes are *missing*, *ambiguous* or *contradictory*
information, and says why a subtype changes with the type instead of hiding it silently.
"""

import shutil
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from hilbench_annotate import services as core
from hilbench_annotate.models import Task
from validators.models import EnvironmentBuild

from .conftest import new_page

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots/h5")


def _shot(page, name: str, selector: str | None = None) -> None:
    """The part of the page the test is about (or the whole page), to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    target = page.locator(selector) if selector else page
    target.screenshot(path=str(SHOTS / f"{name}.png"))


def test_a_the_judge_measurement_is_still_there_after_a_reload(browser, live_server, demo):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    page = new_page(browser, live_server, "lead")
    page.goto(f"{live_server.url}/tasks/{task.pk}/judge/")
    expect(page.locator("#measured")).to_have_count(0)
    page.click("#measure button:has-text('Measure the judge')")
    expect(page.locator("#measured")).to_contain_text("passes")
    recall = page.locator("#measured tr", has_text="Recall").inner_text()

    page.reload()
    expect(page.locator("#measured")).to_contain_text("passes")
    assert page.locator("#measured tr", has_text="Recall").inner_text() == recall
    when = page.locator("#measured-when")
    expect(when).to_contain_text("by lead with judge embedded-4-")
    expect(when).to_contain_text("current")
    expect(page.locator("text=Recorded as validation run")).to_be_visible()
    _shot(page, "a-measure-after-reload", "#measure")

    # The task is edited: the figures stay, marked stale, saying why.
    task.refresh_from_db()
    core.trigger_question_create(
        blocker=task.blockers.first(),
        actor=task.author,
        expected_version=task.version,
        text="Which contracts are counted as troubled ones?",
    )
    page.reload()
    expect(page.locator("#measured")).to_contain_text("passes")
    expect(when).to_contain_text("stale")
    expect(page.locator("#measured-stale")).to_contain_text("the task was edited since")
    _shot(page, "a-measure-stale", "#measure")
    page.context.close()


def test_b_the_task_page_says_whether_the_environment_is_built_and_links_its_build(
    browser, live_server, demo, settings
):
    # A sandbox root of this test's own: the shared one may hold the demo's environment,
    # built by another test, and this one starts from an environment never built.
    # (The project's var/: the sandbox user reaches it; pytest's temporary folders are closed.)
    var = Path(__file__).resolve().parents[2] / "var"
    settings.SANDBOX_ROOT = var / "sandbox-tests-panel" / uuid.uuid4().hex
    try:
        _environment_journey(browser, live_server)
    finally:
        shutil.rmtree(settings.SANDBOX_ROOT, ignore_errors=True)


def _environment_journey(browser, live_server) -> None:
    swe = Task.objects.get(project__slug="demo", domain="swe")
    sql = Task.objects.get(project__slug="demo", source_id="retail_bank/0")

    # A reviewer reads the state but is not offered a build (builds run the task's code).
    reviewer = new_page(browser, live_server, "reviewer")
    reviewer.goto(f"{live_server.url}/tasks/{swe.pk}/")
    panel = reviewer.locator("#environment-state")
    expect(panel).to_contain_text("Not built")
    expect(panel.locator("button")).to_have_count(0)
    expect(panel).to_contain_text("its author or a project lead starts them")
    reviewer.goto(f"{live_server.url}/tasks/{sql.pk}/")
    expect(reviewer.locator("#environment-state")).to_contain_text("Database ready")
    _shot(reviewer, "b-sql-database-ready", "#environment-state")
    reviewer.context.close()

    # The lead builds it from the task page and follows the build on its page.
    page = new_page(browser, live_server, "lead")
    page.goto(f"{live_server.url}/tasks/{swe.pk}/")
    panel = page.locator("#environment-state")
    expect(panel).to_contain_text("Not built")
    _shot(page, "b-swe-not-built", "#environment-state")
    panel.locator("button", has_text="Build now").click()
    page.wait_for_url("**/environments/builds/*/")
    build = EnvironmentBuild.objects.get(task=swe)
    expect(page.locator("h1")).to_contain_text(f"Environment build {build.pk}")

    # Back on the task page: building, then (as a worker would leave it) failed, linked.
    page.goto(f"{live_server.url}/tasks/{swe.pk}/")
    expect(panel).to_contain_text("Building")
    expect(panel.locator("button")).to_have_count(0)
    EnvironmentBuild.objects.filter(pk=build.pk).update(
        status=EnvironmentBuild.Status.FAILED, step="install", error="pip failed"
    )
    page.reload()
    expect(panel).to_contain_text("Build failed")
    expect(panel).to_contain_text("at step install")
    expect(panel.locator("button", has_text="Build now")).to_be_visible()
    _shot(page, "b-swe-build-failed", "#environment-state")
    panel.locator("a", has_text=f"build {build.pk}").click()
    page.wait_for_url(f"**/environments/builds/{build.pk}/")
    expect(page.locator("#environment-build")).to_contain_text("pip failed")
    page.context.close()


def test_c_a_harbor_runs_own_export_reads_as_the_runs_in_recent_exports(
    browser, live_server, demo, settings, tmp_path
):
    from django.contrib.auth import get_user_model

    from evaluation.services import harbor_run_start
    from exchange.models import ExportJob
    from exchange.services import harbor_runs

    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    lead = get_user_model().objects.get(username="lead")
    run = harbor_run_start(
        project=task.project, actor=lead, agent="oracle", task_ids=[task.pk],
        modes=["full_info"], passes=1,
    )  # fmt: skip
    harbor_runs._export(run, harbor_runs.run_folder(run))  # what the worker does first
    made = ExportJob.objects.get(harbor_run=run)

    page = new_page(browser, live_server, "lead")
    page.goto(f"{live_server.url}/exports/")
    row = page.locator("tr", has=page.locator(f"a[href='/exports/{made.pk}/']"))
    expect(row).to_contain_text(f"Harbor run #{run.pk}")
    expect(row).to_contain_text("for its trials; the run was started by lead")
    _shot(page, "c-recent-exports", "section:has(h2:text('Recent exports'))")
    page.click(f"a[href='/exports/{made.pk}/']")
    expect(page.locator("main")).to_contain_text(f"Made by Harbor run #{run.pk} for its own trials")
    expect(page.locator("#written-elsewhere")).to_contain_text("not kept here for download")
    expect(page.locator("a", has_text="Download the bundle")).to_have_count(0)
    _shot(page, "c-export-detail")
    page.click(f"text=Harbor run #{run.pk}")
    page.wait_for_url(f"**/evaluation/runs/{run.pk}/")
    page.context.close()


def test_d_the_blocker_form_says_missing_ambiguous_or_contradictory_and_why_a_subtype_moves(
    browser, live_server, demo
):
    from .conftest import workspace_ready

    sql = Task.objects.get(project__slug="demo", source_id="retail_bank/0")
    swe = Task.objects.get(project__slug="demo", domain="swe")
    page = new_page(browser, live_server, "lead")
    page.goto(f"{live_server.url}/tasks/{sql.pk}/edit/")
    workspace_ready(page)
    page.click("[data-tab=blockers]")
    expect(page.locator("#gap-kinds")).to_contain_text("missing information, an ambiguous")
    page.keyboard.press("Alt+b")
    fieldset = page.locator("fieldset.blocker-edit").first
    type_select = fieldset.locator("select.blocker-type")
    subtype = fieldset.locator("select.blocker-subtype")
    note = fieldset.locator(".subtype-note")
    expect(type_select).to_have_value("question")
    expect(type_select.locator("option[value='question']")).to_have_text(
        "question (missing, ambiguous or contradictory)"
    )
    expect(subtype.locator("option[value='missing_information']")).to_have_text(
        "missing_information (missing)"
    )
    expect(subtype.locator("option[value='contradicts_real_life']")).to_have_text(
        "contradicts_real_life (contradictory)"
    )
    # Every subtype is offered, none disabled: one of another type brings its type along.
    assert subtype.locator("option:disabled, optgroup:disabled").count() == 0
    kind = fieldset.locator(".gap-kind")
    expect(kind).to_have_text("Kind: ambiguous (subtype underspecified_concepts of type question).")
    subtype.select_option("missing_information")
    expect(type_select).to_have_value("business info")
    expect(kind).to_have_text("Kind: missing (subtype missing_information of type business info).")
    expect(note).to_have_text(
        "missing_information belongs to type business info, so the type is now business info."
    )
    # A type the subtype does not belong to: the subtype follows, saying why.
    type_select.select_option("schema")
    expect(subtype).to_have_value("confusing_table_or_table_definition")
    expect(kind).to_contain_text("Kind: ambiguous (subtype confusing_table_or_table_definition")
    expect(note).to_contain_text("missing_information belongs to type business info, not schema")
    expect(note).to_contain_text("type schema has confusing_table_or_table_definition, confusing_")
    _shot(page, "d-sql-blocker-form", "fieldset.blocker-edit")

    page.goto(f"{live_server.url}/tasks/{swe.pk}/edit/")
    workspace_ready(page)
    page.click("[data-tab=blockers]")
    page.keyboard.press("Alt+b")
    fieldset = page.locator("fieldset.blocker-edit").first
    options = fieldset.locator("select.blocker-type option")
    expect(options).to_have_text(
        [
            "missing parameters (missing)",
            "ambiguous requirements (ambiguous)",
            "contradictory requirements (contradictory)",
        ]
    )
    expect(fieldset.locator(".gap-kind")).to_have_text("Kind: missing.")
    fieldset.locator("select.blocker-type").select_option("contradictory requirements")
    expect(fieldset.locator(".gap-kind")).to_have_text("Kind: contradictory.")
    _shot(page, "d-swe-blocker-form", "#panel-blockers")

    # The task page says it of each blocker too.
    blocked = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    page.goto(f"{live_server.url}/tasks/{blocked.pk}/")
    header = page.locator("#blocker-review_year_dates header")
    expect(header).to_contain_text("question")
    expect(header.locator(".gap-kind")).to_have_text("— ambiguous")
    _shot(page, "d-task-page-blocker", "#blocker-review_year_dates header")
    page.context.close()
