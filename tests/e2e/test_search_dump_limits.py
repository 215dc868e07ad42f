"""Issue 45, item 7 in a browser: the task list's search finds a task by a word of a blocker's
resolution and of a review comment; a reviewer downloads the project's blockers for analysis
from the task list; a 65,000-character paste into a resolution is cut by the page and, sent
anyway, refused with a message naming the field and its limit, the saved resolution kept.
Screenshots in /tmp/shots/h7/."""

import csv
import io
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from hilbench_annotate.text_limits import TEXT_LIMITS

from .conftest import login, workspace_ready

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots/h7")


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _word_only_in_a_resolution():
    """A word of a demo blocker's resolution that no title, source id or resource has."""
    from hilbench_annotate.models import Blocker, Task

    titles = " ".join(Task.objects.values_list("title", flat=True)).lower()
    for blocker in Blocker.objects.select_related("task").order_by("pk"):
        for word in re.findall(r"[a-z]{7,}", blocker.resolution.lower()):
            if word not in titles and word not in blocker.task.source_id.lower():
                return blocker.task, word
    pytest.fail("no demo resolution has a word of its own")


def test_a_reviewer_finds_tasks_by_resolution_and_comment_words(page, live_server, demo):
    from django.contrib.auth import get_user_model

    from hilbench_annotate.models import Task

    reviewer = get_user_model().objects.get(username="reviewer")
    task, word = _word_only_in_a_resolution()
    login(page, live_server, "reviewer", "reviewer-demo")
    page.fill("#id_q", word)
    expect(page).to_have_url(f"{live_server.url}/?q={word}", timeout=5000)
    expected = Task.objects.visible_to(reviewer).search(word).count()
    assert expected >= 1
    expect(page.locator("#results .count")).to_contain_text(
        f"{expected} task{'s' if expected != 1 else ''}"
    )
    expect(page.locator("#results tbody")).to_contain_text(task.title[:40])
    _shot(page, "search-resolution-word")

    # A comment's word: nothing before, the task once it is said in a thread.
    page.goto(f"{live_server.url}/?q=quixotic")
    expect(page.locator("#results .count")).to_contain_text("0 tasks")
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    page.fill("#new-thread-body", "The quixotic threshold needs a source.")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("#threads")).to_contain_text("quixotic threshold")
    page.goto(f"{live_server.url}/")
    page.fill("#id_q", "Quixotic")
    expect(page.locator("#results .count")).to_contain_text("1 task")
    expect(page.locator("#results tbody")).to_contain_text(task.title[:40])
    _shot(page, "search-comment-word")


def test_a_reviewer_downloads_the_projects_blockers_from_the_task_list(page, live_server, demo):
    from django.contrib.auth import get_user_model

    from hilbench_annotate.models import Blocker, Project

    reviewer = get_user_model().objects.get(username="reviewer")
    project = Project.objects.visible_to(reviewer).order_by("pk").first()
    login(page, live_server, "reviewer", "reviewer-demo")
    page.goto(f"{live_server.url}/?project={project.pk}")
    page.get_by_role("link", name=re.compile("data for analysis")).click()
    expect(page.locator("h1")).to_contain_text(f"Data for analysis · {project.name}")
    _shot(page, "data-for-analysis")
    with page.expect_download() as info:
        page.get_by_role("link", name="Blockers as CSV").click()
    download = info.value
    assert download.suggested_filename == f"{project.slug}-blockers.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    blockers = Blocker.objects.filter(task__project=project)
    assert len(rows) == blockers.count() > 0
    first = blockers.order_by("task_id", "position").first()
    assert rows[0]["resolution"] == first.resolution
    with page.expect_download() as info:
        page.get_by_role("link", name="Tasks as JSONL").click()
    lines = Path(info.value.path()).read_text(encoding="utf-8").splitlines()
    assert len(lines) == project.tasks.count()


def test_a_pasted_resolution_is_cut_by_the_page_and_refused_by_the_server(page, live_server, demo):
    from hilbench_annotate.models import Blocker
    from hilbench_annotate.vocabulary import TaskStatus

    limit = TEXT_LIMITS["resolution"]
    blocker = (
        Blocker.objects.filter(task__author__username="author", task__status=TaskStatus.DRAFT)
        .select_related("task")
        .order_by("task_id", "position")
        .first()
    )
    assert blocker is not None, "the demo has a draft with blockers"
    saved = blocker.resolution
    login(page, live_server, "author", "author-demo")
    page.goto(f"{live_server.url}/tasks/{blocker.task_id}/edit/")
    workspace_ready(page)
    page.click("[data-tab=blockers]")
    field = page.locator("textarea[name$='-resolution']").first
    expect(field).to_have_value(saved)

    field.fill("z" * 65_000)  # the page keeps at most the limit
    assert len(field.input_value()) == limit

    # Sent anyway (a page without the limit, an old browser): refused, naming the field.
    field.evaluate("el => el.removeAttribute('maxlength')")
    field.fill("z" * 65_000)
    page.get_by_role("button", name="Save", exact=True).click()
    status = page.locator("#save-status")
    expect(status).to_contain_text("resolution is 65,000 characters long")
    expect(status).to_contain_text(f"the limit is {limit:,}")
    _shot(page, "resolution-paste-refused")

    blocker.refresh_from_db()
    assert blocker.resolution == saved  # nothing already saved was lost
    page.reload()
    workspace_ready(page)
    page.click("[data-tab=blockers]")
    expect(page.locator("textarea[name$='-resolution']").first).to_have_value(saved)
