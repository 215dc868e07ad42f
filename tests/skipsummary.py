"""The last line of a test run before pytest's count: what was skipped and why, grouped —
browser tests without chromium, tests that need PostgreSQL and Redis, tests that need the real
data of ../shared, and any other reason on its own.

A plugin of no Django (tests/conftest.py registers its hook), so that a test can run it.
"""

import re
from collections import Counter

import pytest

BROWSER, SERVICES, SHARED_DATA = "browser", "services", "shared"
_NEEDS_SERVICES = re.compile(r"PostgreSQL|Redis|redis-server")


def skip_group(report) -> str:
    """Why a skipped test did not run, as one of a few groups (or its own reason)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    reason = reason.removeprefix("Skipped: ")
    if report.nodeid.startswith("tests/e2e/") and "chromium" in reason:
        return BROWSER
    if "shared_data" in getattr(report, "keywords", {}):
        return SHARED_DATA
    if _NEEDS_SERVICES.search(reason):
        return SERVICES
    return reason


def skip_summary(reports) -> str:
    """``Skipped: 9 browser tests: chromium not installed (…); …`` or ``Skipped: none.``"""
    groups = Counter(skip_group(r) for r in reports)

    def tests(n: int, what: str = "test") -> str:
        return f"{n} {what}{'s' if n != 1 else ''}"

    wording = {
        BROWSER: lambda n: f"{tests(n, 'browser test')}: chromium not installed (`make e2e-deps`)",
        SERVICES: lambda n: (
            f"{tests(n)} need{'s' if n == 1 else ''} PostgreSQL and Redis (`.ci/run` starts them)"
        ),
        SHARED_DATA: lambda n: (
            f"{tests(n)} need{'s' if n == 1 else ''} the real third-party data of ../shared"
        ),
    }
    order = [g for g in wording if g in groups] + sorted(g for g in groups if g not in wording)
    parts = [wording[g](groups[g]) if g in wording else f"{tests(groups[g])}: {g}" for g in order]
    return f"Skipped: {'; '.join(parts)}." if parts else "Skipped: none."


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After pytest's own summary (the per-test reasons of ``-ra``), one line saying what was
    not run and how to run it, just above the final count."""
    result = yield
    skipped = terminalreporter.stats.get("skipped", [])
    terminalreporter.write_line(skip_summary(skipped), yellow=bool(skipped))
    return result
