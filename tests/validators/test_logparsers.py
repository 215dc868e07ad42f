"""Each log parser on a real runner's captured log (fixtures/logs, made by capture.py), and a
Go task the project makes, run the harness's way in the sandbox with each parser."""

import shutil
from pathlib import Path

import pytest

from validators.logparsers import lookup, parse_log
from validators.sandbox import BwrapSandbox, SandboxLimits, run_folder

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
GO_EXPECTED = {
    "TestPass": "PASSED",
    "TestFail": "FAILED",
    "TestSkip": "SKIPPED",
    "TestTable": "FAILED",
    "TestTable/rounds_half_up": "PASSED",
    "TestTable/rounds_down": "FAILED",
}


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_pytest_as_swe_bench_reads_it():
    parsed = parse_log("pytest", log("pytest.log"))
    assert parsed == {
        "test_sample.py::test_pass": "PASSED",  # the test's own "FAILED …" print is overridden
        "test_sample.py::test_param[ok]": "PASSED",
        "test_sample.py::test_xfail": "XFAIL",
        "test_sample.py::test_error": "ERROR",
        "test_sample.py::test_fail": "FAILED",
        "test_sample.py::test_param[a": "FAILED",  # SWE-bench cuts an id at its first space
    }
    # An expected id with a space matches as SWE-bench's harness matches it.
    assert lookup(parsed, "test_sample.py::test_param[a b]") == "FAILED"
    assert lookup(parsed, "test_sample.py::test_nothing") is None


def test_a_file_that_failed_to_collect_makes_its_tests_errors():
    parsed = parse_log("pytest", "ERROR tests/test_x.py - ModuleNotFoundError: No module\n")
    assert lookup(parsed, "tests/test_x.py::test_y") == "ERROR"


@pytest.mark.parametrize("name", ["go_test_v.log", "go_test_json.log"])
def test_go_test_verbose_and_json(name):
    assert parse_log("go_test", log(name)) == GO_EXPECTED


@pytest.mark.parametrize("name", ["jest_verbose.log", "jest_json.log"])
def test_jest_verbose_and_json(name):
    parsed = parse_log("jest", log(name))
    if name == "jest_json.log":
        assert parsed == {
            "money adds cents": "PASSED",
            "money rounds half up": "FAILED",
            "money converts currencies": "SKIPPED",
        }
    else:
        assert parsed == {
            "adds cents": "PASSED",
            "rounds half up": "FAILED",
            "skipped converts currencies": "SKIPPED",
        }


@pytest.mark.parametrize("name", ["mocha_spec.log", "mocha_json.log"])
def test_mocha_spec_and_json(name):
    parsed = parse_log("mocha", log(name))
    prefix = "money " if name == "mocha_json.log" else ""
    assert parsed == {
        f"{prefix}adds cents": "PASSED",
        f"{prefix}rounds half up": "FAILED",
        f"{prefix}converts currencies": "SKIPPED",
    }


def test_sweap_json_reads_what_the_tasks_parser_printed():
    assert parse_log("sweap_json", log("sweap_json.log")) == GO_EXPECTED
    assert parse_log("sweap_json", "no markers here") == {}


@pytest.mark.skipif(
    not shutil.which("go"), reason="Go is not installed (apt-get install golang-go)"
)
@pytest.mark.parametrize(
    "parser,command",
    [
        ("go_test", "go test -v ./..."),
        ("go_test", "go test -json ./..."),
        (
            "sweap_json",
            "bash /root/run_script.sh > /tmp/stdout.log 2> /tmp/stderr.log; "
            "python3 /root/parser.py /tmp/stdout.log /tmp/stderr.log /tmp/output.json; "
            "echo SWEAP_JSON_START; cat /tmp/output.json; echo SWEAP_JSON_END",
        ),
    ],
)
def test_a_go_task_runs_in_the_sandbox_and_is_parsed(parser, command):
    """A small Go task the project makes, run with the machine's toolchain, no network; the
    release-style one through its own run_script.sh and parser.py, mounted where its test
    command expects them."""
    from validators.sandbox import Mount

    with run_folder() as folder:
        tree = folder / "tree"
        shutil.copytree(LOGS / "go", tree)
        scripts = [
            Mount(LOGS / "sweap" / "run_script.sh", "/root/run_script.sh"),
            Mount(LOGS / "sweap" / "parser.py", "/root/parser.py"),
        ]
        for mount in scripts:
            shutil.copy(mount.source, folder / mount.source.name)
        result = BwrapSandbox().run(
            command=command,
            tree=tree,
            mounts=[Mount(folder / m.source.name, m.target) for m in scripts],
            env={"GOCACHE": "/tmp/go-build", "GOFLAGS": "-mod=mod", "GOPROXY": "off"},
            limits=SandboxLimits(wall_s=120),
        )
    assert parse_log(parser, result.output) == GO_EXPECTED, result.output


def test_pytest_options_cuts_an_absolute_path_parameter_as_swebench_does():
    """pylint-dev__pylint-7080 names ``test_stdin[/mymodule.py]`` in PASS_TO_PASS: the id pytest
    printed on SWE-bench's machine, cut by ``parse_log_pytest_options``."""
    from validators.logparsers import parse_log

    log = (
        "PASSED tests/test_self.py::TestRunTC::test_stdin[/testbed/tests/mymodule.py-mymodule-"
        "/testbed/tests/mymodule.py]\n"
        "PASSED tests/test_self.py::TestRunTC::test_stdin[mymodule.py-mymodule-mymodule.py]\n"
        "FAILED tests/test_x.py::test_glob[/tmp/*.py] - assert 0\n"
        "PASSED tests/test_x.py::test_url[//host/a]\n"
    )
    statuses = parse_log("pytest_options", log)
    assert statuses == {
        "tests/test_self.py::TestRunTC::test_stdin[/mymodule.py]": "PASSED",
        "tests/test_self.py::TestRunTC::test_stdin[mymodule.py-mymodule-mymodule.py]": "PASSED",
        "tests/test_x.py::test_glob[/tmp/*.py]": "FAILED",
        "tests/test_x.py::test_url[//host/a]": "PASSED",
    }
    assert "tests/test_self.py::TestRunTC::test_stdin[/mymodule.py]" not in parse_log("pytest", log)
