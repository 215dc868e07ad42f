"""Issue 45, item 0, as a lead reads it: an export and a Harbor run that left a task out name
it — its title and why, in one line — and link it, while the others are in the bundle.

Lint is forced to raise for one release task (lint is our own code and raises on no text we
know of; see ``tests/exchange/test_export_isolation.py``); the export and the run's export step
are run as the worker runs them, and the lead reads the export's page and the run's page.
"""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from evaluation.services import harbor_run_start
from exchange.importers import import_hilbench
from exchange.services import harbor_runs
from exchange.services.exports import bundle_export_create, bundle_export_execute
from hilbench_annotate.models import Project, Task
from tests.conftest import shared_path
from tests.exchange.test_export_isolation import _lint_raises_for

from .conftest import new_page

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.shared_data]

SHOTS = Path("/tmp/shots/h1")


def _shot(page, name: str, selector: str | None = None) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    target = page.locator(selector) if selector else page
    target.screenshot(path=str(SHOTS / f"{name}.png"))


def test_the_export_and_the_run_name_the_task_whose_lint_raised(
    browser, live_server, demo, settings, tmp_path, monkeypatch
):
    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    users = get_user_model().objects
    project = Project.objects.get(slug="demo")
    before = set(Task.objects.filter(project=project).values_list("pk", flat=True))
    import_hilbench(
        project=project, root=shared_path("examples", "hilbench") / "sql", actor=users.get(
            username="author"
        )
    )  # fmt: skip
    tasks = list(Task.objects.filter(project=project).exclude(pk__in=before).order_by("pk"))
    culprit = tasks[0]
    _lint_raises_for(monkeypatch, culprit)
    lead = users.get(username="lead")
    job = bundle_export_create(
        project=project, actor=lead, selection={"tasks": [t.pk for t in tasks]}, draft=True
    )
    job = bundle_export_execute(job_id=job.pk)  # what the worker does
    run = harbor_run_start(
        project=project, actor=lead, agent="oracle", task_ids=[t.pk for t in tasks],
        modes=["full_info"], passes=1,
    )  # fmt: skip
    harbor_runs._export(run, harbor_runs.run_folder(run))  # the run's first step, as the worker

    page = new_page(browser, live_server, "lead")
    page.goto(f"{live_server.url}/exports/{job.pk}/")
    status = page.locator("#job-status")
    expect(status).to_contain_text(f"{len(tasks) - 1} tasks exported, 1 left out")
    left_out = status.locator("ul.notes li")
    expect(left_out).to_have_count(1)
    expect(left_out).to_contain_text(culprit.title[:60])
    expect(left_out).to_contain_text(
        "left out: its gates (lint, checks) raised IndexError: string index out of range"
    )
    expect(left_out.locator(f"a[href='/tasks/{culprit.pk}/']")).to_be_visible()
    expect(status.locator("tbody tr")).to_have_count(len(tasks) - 1)
    _shot(page, "export-left-out", "#job-status")

    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    section = page.locator("#run-left-out")
    expect(section).to_contain_text("Tasks left out of the run")
    expect(section).to_contain_text(culprit.title[:60])
    expect(section).to_contain_text("IndexError: string index out of range")
    expect(page.locator("#run-status")).to_contain_text(f"0 of {len(tasks) - 1} trials")
    _shot(page, "run-left-out", "#run-status")
    page.context.close()
