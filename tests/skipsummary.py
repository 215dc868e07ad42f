"""The last line of a test run before pytest's count: what was skipped and why, grouped —
browser tests without chromium, tests that need PostgreSQL and Redis, tests that need the real
data of ../shared, tests that need a Docker engine, the Go toolchain or a pyenv Python the
machine lacks (each with how to install it), and any other reason on its own.

Below it, when any, the tests that took over ``SLOW_S`` seconds and carry none of the markers
`make test-fast` leaves out (``slow``, ``containers``, ``browser``): mark them, or the fast
run grows unseen.

A plugin of no Django (tests/conftest.py registers its hook), so that a test can run it.
"""

import re
from collections import Counter

import pytest

BROWSER, SERVICES, SHARED_DATA = "browser", "services", "shared"
DOCKER, GO, PYENV, HARBOR = "docker", "go", "pyenv ", "harbor"  # PYENV + the version: "pyenv 3.9"
_NEEDS_SERVICES = re.compile(r"PostgreSQL|Redis|redis-server")
# The reasons these tests give: DockerSandbox.available(), tests/validators/test_logparsers.py,
# tests/validators/test_interpreters.py.
_NEEDS_DOCKER = re.compile(r"^no container engine answers")
_NEEDS_GO = re.compile(r"^Go is not installed")
# Harbor's own venv (`make harbor`): missing while the engine answers is not "no Docker".
_NEEDS_HARBOR = re.compile(r"^no Harbor\b|^Harbor is not installed")
_NEEDS_PYENV = re.compile(r"^no pyenv Python (\d+(?:\.\d+)*)")


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
    if _NEEDS_HARBOR.search(reason):
        return HARBOR
    if _NEEDS_DOCKER.search(reason):
        return DOCKER
    if _NEEDS_GO.search(reason):
        return GO
    if pyenv := _NEEDS_PYENV.search(reason):
        return PYENV + pyenv.group(1)
    return reason


def _tests(n: int, what: str = "test") -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _need(n: int) -> str:
    return f"{_tests(n)} need{'s' if n == 1 else ''}"


_WORDING = {
    BROWSER: lambda n: f"{_tests(n, 'browser test')}: chromium not installed (`make e2e-deps`)",
    SERVICES: lambda n: f"{_need(n)} PostgreSQL and Redis (`.ci/run` starts them)",
    SHARED_DATA: lambda n: f"{_need(n)} the real third-party data of ../shared",
    DOCKER: lambda n: (
        f"{_need(n)} a Docker engine (install Docker and start its daemon: `docker info` answers)"
    ),
    GO: lambda n: f"{_need(n)} the Go toolchain (`apt-get install golang-go`)",
    HARBOR: lambda n: f"{_need(n)} Harbor in its own venv (`make harbor`: .venv-harbor)",
}


def _wording(group: str, n: int) -> str:
    if group in _WORDING:
        return _WORDING[group](n)
    if group.startswith(PYENV):
        version = group.removeprefix(PYENV)
        return f"{_need(n)} pyenv's Python {version} (`pyenv install {version}`)"
    return f"{_tests(n)}: {group}"


def _version(group: str) -> tuple[int, ...]:
    return tuple(int(part) for part in group.removeprefix(PYENV).split("."))


SLOW_S = 15.0
FAST_RUN_LEAVES_OUT = ("slow", "containers", "browser")


def unmarked_slow(reports, limit: float = SLOW_S) -> list[str]:
    """Node ids of the tests whose call took over ``limit`` seconds and that no marker keeps
    out of `make test-fast`."""
    return sorted(
        r.nodeid
        for r in reports
        if r.when == "call"
        and r.duration > limit
        and not any(m in getattr(r, "keywords", {}) for m in FAST_RUN_LEAVES_OUT)
    )


def skip_summary(reports) -> str:
    """``Skipped: 9 browser tests: chromium not installed (…); …`` or ``Skipped: none.``"""
    groups = Counter(skip_group(r) for r in reports)
    pyenv = sorted((g for g in groups if g.startswith(PYENV)), key=_version)
    others = sorted(g for g in groups if g not in _WORDING and g not in pyenv)
    order = [g for g in _WORDING if g in groups] + pyenv + others
    parts = [_wording(g, groups[g]) for g in order]
    return f"Skipped: {'; '.join(parts)}." if parts else "Skipped: none."


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After pytest's own summary (the per-test reasons of ``-ra``), one line saying what was
    not run and how to run it, just above the final count."""
    result = yield
    skipped = terminalreporter.stats.get("skipped", [])
    terminalreporter.write_line(skip_summary(skipped), yellow=bool(skipped))
    ran = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
    if slow := unmarked_slow(ran):
        terminalreporter.write_line(
            f"Over {SLOW_S:.0f} s and not marked slow (make test-fast runs them): "
            + ", ".join(slow),
            yellow=True,
        )
    return result
