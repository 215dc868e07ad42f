"""Browser tests: Playwright driving Debian's Chromium (headless) against a live server."""

import os
import shutil

import pytest
from playwright.sync_api import expect

# An assertion waits as long as an action does (``set_default_timeout`` below): under
# `make test` a browser test shares the cores with Harbor trials, and a page's answer can take
# longer than Playwright's 5 s default (seen on CI: a label's row redrawn after 5 s).
expect.set_options(timeout=15_000)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Playwright's sync API keeps an event loop in the test thread; Django's ORM calls made
# by the test itself are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (`make e2e-deps` installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


@pytest.fixture
def demo(transactional_db, settings, tmp_path):
    """The demo project, users and tasks, as ``make run`` makes them."""
    from django.core.management import call_command

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", force=True)


def login(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def new_page(browser, live_server, username: str, *, bypass_csp: bool = False):
    """A fresh browser context logged in as a demo user (password ``<username>-demo``).

    ``bypass_csp`` lets a test inject its own inline script (axe-core): the app's
    Content-Security-Policy refuses inline scripts without the response's nonce.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 950}, bypass_csp=bypass_csp)
    page = context.new_page()
    page.set_default_timeout(15_000)
    login(page, live_server, username, f"{username}-demo")
    return page


def workspace_ready(page) -> None:
    """The workspace's script has run (``workspace.js`` marks the form last): a page reached by
    a click is visible before its deferred script wires the tabs, and a tab clicked in between
    shows nothing (CI saw the environment tab's table list stay hidden)."""
    from playwright.sync_api import expect

    expect(page.locator("#workspace[data-ready='1']")).to_have_count(1)
    page.wait_for_load_state()  # and htmx has read the hx- attributes (on DOMContentLoaded)
