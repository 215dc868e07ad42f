"""Issue 45, item 2, in the browser: an author opens the workspace of a task whose description
CSVs are CRLF, UTF-8 with a byte order mark and Windows-1252, and presses Save without
touching anything: no revision, and the export still carries the source's bytes. Then they
edit one CSV: one revision that names the description CSVs, the edited file still in its
encoding and line ends, the others byte for byte."""

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from exchange.importers import import_bird
from hilbench_annotate.models import Membership, Project, Revision, Task
from hilbench_annotate.vocabulary import Role
from tests.exchange.test_source_bytes import BIRD, _assert_bytes, _exported_csvs, _library

from ..conftest import FIXTURES
from .conftest import login, workspace_ready

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path("/tmp/shots/h2")


@pytest.fixture
def mixed_task(tmp_path):
    project = Project.objects.create(name="Encodings", slug="encodings")
    users = {}
    for name, role in (("author", Role.AUTHOR), ("lead", Role.LEAD)):
        users[name] = get_user_model().objects.create_user(username=name, password=f"{name}-demo")
        Membership.objects.create(project=project, user=users[name], role=role)
    databases, sources = _library(tmp_path, BIRD)
    import_bird(
        project=project,
        questions=FIXTURES / "bird" / "dev.json",
        databases=databases,
        db_id="library",
        limit=1,
        actor=users["author"],
    )
    return project, Task.objects.get(project=project), sources


def test_saving_an_untouched_workspace_keeps_every_imported_byte(
    page, live_server, mixed_task, tmp_path
):
    project, task, sources = mixed_task
    SHOTS.mkdir(parents=True, exist_ok=True)
    login(page, live_server, "author", "author-demo")
    page.goto(live_server.url + reverse("workspace", args=[task.pk]))
    workspace_ready(page)
    page.click("[data-tab=env]")
    expect(page.locator("#desc-loan")).to_have_value(re.compile("date due – café rule"))
    page.click("button[type=submit][form=workspace]")
    expect(page.locator("#save-status")).to_contain_text("All changes saved")
    page.screenshot(path=str(SHOTS / "untouched-save.png"), full_page=False)
    task.refresh_from_db()
    assert task.version == 1 and Revision.objects.filter(task=task).count() == 1
    _assert_bytes(_exported_csvs(project, task, tmp_path / "untouched.tar.gz"), sources)

    page.click("summary:text-is('loan.csv')")
    loan = page.locator("#desc-loan")
    loan.fill(loan.input_value().replace("café rule", "café rule, edited"))
    page.click("button[type=submit][form=workspace]")
    expect(page.locator("#save-status")).to_contain_text("Saved · revision 2")
    loan.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "one-edit-save.png"), full_page=False)
    latest = Revision.objects.filter(task=task).order_by("-number").first()
    assert latest.summary == "Edited the description CSVs"
    expected = dict(sources, loan=sources["loan"].replace(b"caf\xe9 rule", b"caf\xe9 rule, edited"))
    _assert_bytes(_exported_csvs(project, task, tmp_path / "edited.tar.gz"), expected)
