"""Rough edges a newcomer met: the task search, the SQL console, the save-conflict notice,
the repository's folder icons and uncoloured patches."""

import re
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from authoring.services import workspace_save
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_snapshot

from .conftest import new_page, workspace_ready

pytestmark = pytest.mark.django_db(transaction=True)

# A query SQLite needs a moment for (well under the console's time limit).
SLOW_QUERY = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1500000) "
    "SELECT COUNT(*) AS rows_counted FROM n"
)


def test_one_enter_in_the_task_search_sends_one_request(browser, live_server, demo):
    page = new_page(browser, live_server, "author")
    searches: list[str] = []
    page.on(
        "request",
        lambda r: (
            searches.append(r.url)
            if r.headers.get("hx-request") and urlparse(r.url).path == "/"
            else None
        ),
    )

    # Typed and sent at once with Enter, before the typing pause ends: one request.
    page.locator("#id_q").press_sequentially("loans", delay=20)
    page.keyboard.press("Enter")
    expect(page.locator("#results .count")).to_contain_text("task")
    page.wait_for_timeout(1000)  # longer than the typing pause: a late request would show
    assert len(searches) == 1, searches
    assert "q=loans" in searches[0]

    # Enter again on the same text: one more request, not three.
    page.keyboard.press("Enter")
    page.wait_for_timeout(1000)
    assert len(searches) == 2, searches

    # A pause after typing searches once by itself; a filter's change searches once.
    page.locator("#id_q").press_sequentially(" status", delay=20)
    page.wait_for_timeout(1000)
    assert len(searches) == 3 and "q=loans%20status" in searches[2], searches
    page.select_option("select[name=domain]", "sql")
    page.wait_for_timeout(1000)
    assert len(searches) == 4 and "domain=sql" in searches[3], searches


def test_sql_console_says_it_is_running_and_a_conflict_leaves_the_field_visible(
    browser, live_server, demo
):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/0")
    page = new_page(browser, live_server, "author")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")

    page.click("[data-tab=env]")
    running = page.locator("#query-running")
    expect(running).to_be_hidden()
    page.fill("#console-sql", SLOW_QUERY)
    page.click("button:text-is('Run')")
    expect(running).to_be_visible()
    expect(running).to_contain_text("Running the query")
    expect(page.locator("button:text-is('Run')")).to_be_disabled()
    expect(page.locator("#query-result th", has_text="rows_counted")).to_be_visible()
    expect(running).to_be_hidden()
    expect(page.locator("button:text-is('Run')")).to_be_enabled()

    # Someone else saves while the author is typing the question: the notice that their
    # save was refused must not cover the field the author is typing in.
    page.click("[data-tab=spec]")
    field = page.locator("#spec-question")
    field.click()
    task.refresh_from_db()
    theirs = task_snapshot(task)
    theirs["blocked_spec"] = {**theirs["blocked_spec"], "question": "The lead's wording?"}
    workspace_save(task=task, actor=task.author, expected_version=task.version, draft=theirs)
    field.press_sequentially(" And mine.", delay=20)
    notice = page.locator(".save-status.conflict")
    expect(notice).to_be_visible(timeout=20_000)
    expect(field).to_be_in_viewport()
    box, typed = notice.bounding_box(), field.bounding_box()

    def overlap(start: str, size: str) -> float:
        end = min(box[start] + box[size], typed[start] + typed[size])
        return end - max(box[start], typed[start])

    assert overlap("x", "width") <= 0 or overlap("y", "height") <= 0, (box, typed)
    # What the author typed is still in the field, and the field takes clicks.
    expect(field).to_have_value(re.compile(r"problems\? And mine\."))
    field.click()


def test_repository_folders_have_a_vendored_icon_and_patches_are_coloured(
    browser, live_server, demo
):
    task = Task.objects.get(project__slug="demo", domain="swe")
    page = new_page(browser, live_server, "author2")
    page.goto(f"{live_server.url}/tasks/{task.pk}/edit/")
    page.click("[data-tab=env]")
    folder = page.locator("#repo button.folder").first
    expect(folder).to_be_visible()
    assert not any(ord(ch) > 0x2FFF for ch in folder.inner_text()), folder.inner_text()
    icon = folder.evaluate("el => getComputedStyle(el, '::before').backgroundImage")
    assert "/static/img/folder.svg" in icon
    loaded = page.evaluate(
        """async (url) => {
            const img = new Image();
            img.src = url;
            await img.decode();
            return img.naturalWidth;
        }""",
        icon.split('"')[1],
    )
    assert loaded > 0

    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    page.click("summary:has-text('Gold patch')")
    gold = page.locator("details:has(summary:has-text('Gold patch')) pre.diff")
    added, removed = gold.locator(".diff-add").first, gold.locator(".diff-del").first
    expect(added).to_be_visible()
    expect(gold.locator(".diff-hunk").first).to_be_visible()
    colours = [
        line.evaluate("el => getComputedStyle(el).backgroundColor") for line in (added, removed)
    ]
    plain = gold.evaluate("el => getComputedStyle(el).backgroundColor")
    assert len({*colours, plain}) == 3, (colours, plain)


def test_the_workspace_says_when_its_tabs_work(browser, live_server, demo):
    """CI clicked the environment tab of a workspace reached by a link before its deferred
    script had wired the tabs: the click did nothing and the table list stayed hidden. The
    form is marked ready only once the script has run, and a tab clicked then shows its panel.
    Here the script is held back two seconds to widen the gap CI fell into."""
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/0")
    page = new_page(browser, live_server, "author")

    def late(route):
        page.wait_for_timeout(2000)
        route.continue_()

    page.route("**/js/workspace.js*", late)
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    page.click("text=Open workspace")
    expect(page.locator("#workspace")).to_be_visible()
    assert page.locator("#workspace[data-ready]").count() == 0  # drawn, not yet wired
    workspace_ready(page)
    page.click("[data-tab=env]")
    expect(page.locator(".table-list button:text-is('loan')")).to_be_visible()
