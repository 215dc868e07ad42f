"""``make test`` ends with one line saying what was not run and why (tests/skipsummary.py),
checked on a real pytest run of a few skipping tests."""

import textwrap
from types import SimpleNamespace

from validators.sandbox.docker import DockerSandbox

from .conftest import ROOT
from .skipsummary import DOCKER, skip_group, unmarked_slow

pytest_plugins = ["pytester"]


def _plain_pytest(monkeypatch) -> None:
    """The inner run: pytest and the hook alone (no Django, no other plugin)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "tests"))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_the_last_line_before_the_count_groups_the_skips(pytester, monkeypatch):
    _plain_pytest(monkeypatch)
    pytester.makeconftest("from skipsummary import pytest_terminal_summary  # noqa: F401")
    pytester.makeini("[pytest]\nmarkers =\n    shared_data: needs ../shared\n")
    pytester.mkpydir("tests")
    e2e = pytester.mkpydir("tests/e2e")
    (e2e / "test_pages.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.fixture
            def browser():
                pytest.skip("/usr/bin/chromium is not installed (`make e2e-deps`)")

            def test_login(browser):
                pass

            def test_review(browser):
                pass
            """
        )
    )
    (pytester.path / "tests" / "test_rest.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.shared_data
            def test_real_release():
                pytest.skip("/nonexistent/examples is not on this machine")

            def test_skip_locked():
                pytest.skip("needs PostgreSQL's SELECT ... FOR UPDATE SKIP LOCKED; CI runs it")

            def test_load():
                pytest.skip("the load run needs PostgreSQL and Redis")

            @pytest.mark.skipif(True, reason="the sandbox needs root here")
            def test_as_root():
                pass

            def test_runs():
                pass
            """
        )
    )

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, skipped=6)
    lines = result.outlines
    assert lines[-2] == (
        "Skipped: 2 browser tests: chromium not installed (`make e2e-deps`); "
        "2 tests need PostgreSQL and Redis (`.ci/run` starts them); "
        "1 test needs the real third-party data of ../shared; 1 test: the sandbox needs root here."
    )
    assert "1 passed, 6 skipped" in lines[-1]


def test_tools_the_machine_lacks_are_named_with_how_to_install_them(pytester, monkeypatch):
    """The skips of tests/validators (no Docker engine, no Go, no pyenv Python 3.9), with
    the reasons those tests give, each a group with its install command."""
    _plain_pytest(monkeypatch)
    pytester.makeconftest("from skipsummary import pytest_terminal_summary  # noqa: F401")
    pytester.makepyfile(
        test_tools=textwrap.dedent(
            """
            import pytest

            def test_docker_sandbox():
                pytest.skip(
                    "no container engine answers (DockerException: Error while fetching "
                    "server API version: ('Connection aborted.', FileNotFoundError(2, "
                    "'No such file or directory')))"
                )

            @pytest.mark.skipif(True, reason="Go is not installed (apt-get install golang-go)")
            @pytest.mark.parametrize("command", ["go test -v ./...", "go test -json ./..."])
            def test_go_log(command):
                pass

            def test_harbor_trial():
                # The engine answers; Harbor's own venv is what is missing (issue 45, 5b).
                pytest.skip("no Harbor: `make harbor` (its own Python 3.12 venv, .venv-harbor)")

            def test_pyenv_39():
                pytest.skip("no pyenv Python 3.9 here")

            def test_pyenv_310():
                pytest.skip("no pyenv Python 3.10 here")

            def test_runs():
                pass
            """
        )
    )

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, skipped=6)
    assert result.outlines[-2] == (
        "Skipped: 1 test needs a Docker engine (install Docker and start its daemon: "
        "`docker info` answers); "
        "2 tests need the Go toolchain (`apt-get install golang-go`); "
        "1 test needs Harbor in its own venv (`make harbor`: .venv-harbor); "
        "1 test needs pyenv's Python 3.9 (`pyenv install 3.9`); "
        "1 test needs pyenv's Python 3.10 (`pyenv install 3.10`)."
    )


def test_the_docker_sandboxs_own_reason_is_the_docker_group(monkeypatch):
    """The reason tests/validators/test_sandbox.py skips with is DockerSandbox.available()'s,
    here on a socket no engine listens on."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    available, reason = DockerSandbox.available()
    assert not available
    report = SimpleNamespace(
        nodeid="tests/validators/test_sandbox.py::test_docker_sandbox_runs_and_limits",
        longrepr=("tests/validators/test_sandbox.py", 195, f"Skipped: {reason}"),
        keywords={},
    )
    assert skip_group(report) == DOCKER


def test_a_run_that_skips_nothing_says_so(pytester, monkeypatch):
    _plain_pytest(monkeypatch)
    pytester.makeconftest("from skipsummary import pytest_terminal_summary  # noqa: F401")
    pytester.makepyfile(test_one="def test_runs():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.outlines[-2] == "Skipped: none."


def test_a_slow_test_no_marker_keeps_out_of_the_fast_run_is_named():
    def report(nodeid, duration, *markers, when="call"):
        keywords = {nodeid.split("::")[-1]: 1, **dict.fromkeys(markers, 1)}
        return SimpleNamespace(nodeid=nodeid, when=when, duration=duration, keywords=keywords)

    reports = [
        report("t.py::test_slow_unmarked", 40.0),
        report("t.py::test_slow_marked", 40.0, "slow"),
        report("t.py::test_in_containers", 90.0, "containers"),
        report("t.py::test_in_a_browser", 20.0, "browser"),
        report("t.py::test_quick", 0.2),
        report("t.py::test_slow_set_up", 30.0, when="setup"),
    ]
    assert unmarked_slow(reports) == ["t.py::test_slow_unmarked"]
