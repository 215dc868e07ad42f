"""``make test`` ends with one line saying what was not run and why (tests/skipsummary.py),
checked on a real pytest run of a few skipping tests."""

import textwrap

from .conftest import ROOT

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

            @pytest.mark.skipif(True, reason="Go is not installed")
            def test_go():
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
        "1 test needs the real third-party data of ../shared; 1 test: Go is not installed."
    )
    assert "1 passed, 6 skipped" in lines[-1]


def test_a_run_that_skips_nothing_says_so(pytester, monkeypatch):
    _plain_pytest(monkeypatch)
    pytester.makeconftest("from skipsummary import pytest_terminal_summary  # noqa: F401")
    pytester.makepyfile(test_one="def test_runs():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.outlines[-2] == "Skipped: none."
