"""Issue 45, item 1's acceptance in a browser: a task imported from ../shared's real data — a
Spider question, a BIRD mini-dev question (its database is not published), a pytest
SWE-bench instance whose environment nobody built — and, right after the import, its author
presses *Run structural checks* on the task page. A real worker runs the checks (the SWE
check builds the environment first, and the card says so while it does); the card shows
the results, never "The check crashed"."""

import re
import subprocess
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import start_worker
from tests.validators.test_checks_after_import import (
    minidev_question,
    sandbox_or_skip,
    spider_question,
    swe_instance,
)

from .conftest import login

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.shared_data]

SHOTS = Path("/tmp/shots/h3")
# The run's card once it finished: no longer polling, its results in a table. (The outcome
# badges in the table are ".status" too, so the run's own status is the first paragraph's.)
FINISHED = "#validation #validation-run:not([hx-get]) table"
RUN_STATUS = "#validation #validation-run > p > .status"


@pytest.fixture
def fresh_sandbox(settings):
    """A sandbox root of its own (beside the tests' shared one, where the sandbox user reaches
    it): no environment another test built is there to reuse."""
    settings.SANDBOX_ROOT = (
        Path(settings.SANDBOX_ROOT).parent / f"sandbox-fresh-{uuid.uuid4().hex[:8]}"
    )
    yield
    import shutil

    shutil.rmtree(settings.SANDBOX_ROOT, ignore_errors=True)


def _import(kind: str, tmp_path):
    """The task of ``kind``, imported by the demo's author into the demo project."""
    from hilbench_annotate.models import Project, Task

    project = Project.objects.get(slug="demo")
    author = project.memberships.get(user__username="author").user
    before = set(Task.objects.filter(project=project).values_list("pk", flat=True))
    if kind == "spider":
        spider_question(project=project, actor=author)
    elif kind == "bird-minidev":
        minidev_question(project=project, actor=author)
    else:
        swe_instance(project=project, actor=author, folder=tmp_path)
    [task] = Task.objects.filter(project=project).exclude(pk__in=before)
    return task


def stop(worker) -> None:
    """Stop the worker: it may have gone on to jobs of its own (the judge preparing the
    imported revisions), which a warm shutdown would wait for."""
    worker.terminate()
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait(timeout=30)


@pytest.mark.parametrize("kind", ["spider", "bird-minidev", "swe"])
def test_run_structural_checks_right_after_import_shows_results(
    page, live_server, demo, worker_broker, fresh_sandbox, tmp_path, kind
):
    from validators.models import EnvironmentBuild, ValidationRun

    if kind == "swe":
        sandbox_or_skip("3.9")
    task = _import(kind, tmp_path)
    assert not ValidationRun.objects.filter(task=task).exists()
    assert not EnvironmentBuild.objects.filter(task=task).exists()
    worker = start_worker(worker_broker, tmp_path / "worker.log")
    try:
        login(page, live_server, "author", "author-demo")
        page.goto(f"{live_server.url}/tasks/{task.pk}/")
        card = page.locator("#validation")
        card.get_by_role("button", name="Run structural checks").click()
        SHOTS.mkdir(parents=True, exist_ok=True)
        if kind == "swe":
            # The card says the check is building the environment, with the build's log.
            building = card.locator("#validation-building")
            expect(building).to_contain_text("is building it first", timeout=120_000)
            expect(building.get_by_role("link", name="Build log")).to_be_visible()
            page.screenshot(path=SHOTS / f"{kind}-building.png", full_page=True)
        timeout = 1_500_000 if kind == "swe" else 120_000
        page.wait_for_selector(FINISHED, timeout=timeout)
        page.screenshot(path=SHOTS / f"{kind}-results.png", full_page=True)
    finally:
        stop(worker)

    expect(page.locator(RUN_STATUS)).to_have_text(re.compile(r"^(Passed|Failed|Error)$"))
    run = ValidationRun.objects.get(task=task)
    assert run.is_finished, run.status
    results = list(run.results.values_list("check_name", "outcome", "message"))
    assert results and not [r for r in results if r[1] == "error"], results
    text = card.inner_text()
    assert "crashed" not in text, text
    rows = card.locator("table tbody tr")
    expect(rows).to_have_count(len(results))
    for name, outcome, _message in results:
        expect(card.locator("tr", has_text=name)).to_contain_text(outcome)
    if kind == "swe":
        build = EnvironmentBuild.objects.get(task=task)
        assert build.status == "succeeded", build.error
        expect(card).to_contain_text(f"this check built it first (build {build.pk}")
        card.locator("tr", has_text="fail_to_pass_fail_before").get_by_role(
            "link", name="Build log"
        ).click()
        expect(page.locator("main")).to_contain_text("Succeeded")
        page.screenshot(path=SHOTS / f"{kind}-build-log.png", full_page=True)
