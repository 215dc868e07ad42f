"""Reading a test run's log as the benchmark harnesses read it: ``{test id: status}``.

Statuses are SWE-bench's: PASSED, FAILED, ERROR, SKIPPED, XFAIL. Each parser follows the
convention of the harness whose data the app imports, so ids in FAIL_TO_PASS / PASS_TO_PASS
match as that harness matches them:

- ``pytest``: SWE-bench's ``parse_log_pytest`` — a line that starts with a status, ``FAILED``
  lines with `` - `` removed, the id is the line's second whitespace-separated word (an id
  with a space is cut there; ``lookup`` tries an expected id both whole and cut so).
- ``pytest_options``: SWE-bench's ``parse_log_pytest_options`` — as ``pytest``, with an
  absolute-path parameter cut to its last part (pylint, requests, pydicom).
- ``go_test``: ``go test -v`` (``--- PASS: TestX (0.01s)``) or ``go test -json`` events.
- ``jest``: ``--verbose`` (``✓ name``, ``✕ name``, ``○ name``) or ``--json`` output.
- ``mocha``: the spec reporter (``✓ name``, ``1) name``, ``- name``) or the json reporter.
- ``django``: SWE-bench's ``parse_log_django`` — Django's ``runtests.py --verbosity 2``:
  ``test_x (module.Class) ... ok``; the id is the text before `` ... ``.
- ``sweap_json``: the JSON a task's own ``parser.py`` printed between ``SWEAP_JSON_START``
  and ``SWEAP_JSON_END`` (the HiL-Bench release's convention; the script runs in the sandbox).
"""

from __future__ import annotations

# The standard library only: a bundle ships this file beside its verifier
# (exchange/bundles/sidecars.py), where the app is not installed.
import json
import re
from collections.abc import Callable

PASSED, FAILED, ERROR, SKIPPED, XFAIL = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL"
STATUSES = (PASSED, FAILED, ERROR, SKIPPED, XFAIL)
# A status counts as passing as SWE-bench's grading counts it.
PASSING = (PASSED, XFAIL)
SWEAP_START, SWEAP_END = "SWEAP_JSON_START", "SWEAP_JSON_END"


class ParserMissing(KeyError):
    """The specification names a parser the app does not have."""


# --- pytest -------------------------------------------------------------------------------

_SKIP_SUMMARY_COUNT = re.compile(r"^\[\d+\]$")


def parse_pytest(log: str) -> dict[str, str]:
    results: dict[str, str] = {}
    for line in log.split("\n"):
        if not line.startswith(STATUSES):
            continue
        if line.startswith(FAILED):
            line = line.replace(" - ", " ")
        words = line.split()
        if len(words) <= 1 or words[0] not in STATUSES:
            continue
        if words[0] == SKIPPED and _SKIP_SUMMARY_COUNT.match(words[1]):
            continue  # "SKIPPED [2] file.py:12: reason" names no test
        results[words[1]] = words[0]
    return results


_OPTION = re.compile(r"(.*?)\[(.*)\]")


def parse_pytest_options(log: str) -> dict[str, str]:
    """SWE-bench's ``parse_log_pytest_options`` (pylint, requests, pydicom): ``parse_pytest``,
    with a parameter that is an absolute path cut to its last part —
    ``test_stdin[/testbed/tests/mymodule.py-…]`` is ``test_stdin[/mymodule.py-…]`` cut at its
    last ``/``, as the ids of those instances were recorded on another machine's paths."""
    results: dict[str, str] = {}
    for test_id, status in parse_pytest(log).items():
        match = _OPTION.search(test_id)
        if match:
            main, option = match.groups()
            if option.startswith("/") and not option.startswith("//") and "*" not in option:
                option = "/" + option.split("/")[-1]
            test_id = f"{main}[{option}]"
        results[test_id] = status
    return results


# --- go test ------------------------------------------------------------------------------

_GO_VERBOSE = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(")
_GO_ACTIONS = {"pass": PASSED, "fail": FAILED, "skip": SKIPPED}


def parse_go_test(log: str) -> dict[str, str]:
    results: dict[str, str] = {}
    for line in log.splitlines():
        stripped = line.strip()
        if stripped.startswith("{") and '"Action"' in stripped:
            try:
                event = json.loads(stripped)
            except (json.JSONDecodeError, RecursionError):  # task output
                continue
            status = _GO_ACTIONS.get(event.get("Action"))
            if status and event.get("Test"):
                results[event["Test"]] = status
            continue
        match = _GO_VERBOSE.match(line)
        if match:
            results[match.group(2)] = {"PASS": PASSED, "FAIL": FAILED, "SKIP": SKIPPED}[
                match.group(1)
            ]
    return results


# --- jest ---------------------------------------------------------------------------------

_JEST_LINE = re.compile(r"^\s*(✓|✕|○|√|×)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?\s*m?s\))?\s*$")
_JEST_MARKS = {"✓": PASSED, "√": PASSED, "✕": FAILED, "×": FAILED, "○": SKIPPED}
_JEST_JSON = {"passed": PASSED, "failed": FAILED, "pending": SKIPPED, "skipped": SKIPPED,
              "todo": SKIPPED, "disabled": SKIPPED}  # fmt: skip


def _json_objects(log: str):
    """Every top-level JSON object in ``log`` (a reporter may print it amid other lines)."""
    decoder = json.JSONDecoder()
    index = log.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(log, index)
        except (json.JSONDecodeError, RecursionError):  # task output: nested past the parser
            index = log.find("{", index + 1)
            continue
        if isinstance(value, dict):
            yield value
        index = log.find("{", end)


def parse_jest(log: str) -> dict[str, str]:
    results: dict[str, str] = {}
    for document in _json_objects(log):
        for suite in document.get("testResults") or []:
            for test in suite.get("assertionResults") or []:
                name = test.get("fullName") or test.get("title")
                if name:
                    results[name] = _JEST_JSON.get(test.get("status"), FAILED)
    if results:
        return results
    for line in log.splitlines():
        match = _JEST_LINE.match(line)
        if match:
            results[match.group(2)] = _JEST_MARKS[match.group(1)]
    return results


# --- mocha --------------------------------------------------------------------------------

_MOCHA_PASS = re.compile(r"^\s+(?:✓|✔|√)\s+(.+?)(?:\s+\(\d+\s*m?s\))?\s*$")
_MOCHA_FAIL = re.compile(r"^\s+\d+\) (.+?)\s*$")
_MOCHA_PENDING = re.compile(r"^\s+- (.+?)\s*$")


def parse_mocha(log: str) -> dict[str, str]:
    results: dict[str, str] = {}
    for document in _json_objects(log):
        for key, status in (("passes", PASSED), ("failures", FAILED), ("pending", SKIPPED)):
            for test in document.get(key) or []:
                if isinstance(test, dict) and test.get("fullTitle"):
                    results[test["fullTitle"]] = status
    if results:
        return results
    summary = re.search(r"^\s+\d+ passing", log, re.MULTILINE)
    body = log[: summary.start()] if summary else log  # failures are listed again after it
    for line in body.splitlines():
        for pattern, status in (
            (_MOCHA_PASS, PASSED),
            (_MOCHA_FAIL, FAILED),
            (_MOCHA_PENDING, SKIPPED),
        ):
            match = pattern.match(line)
            if match:
                results[match.group(1)] = status
                break
    return results


# --- django -------------------------------------------------------------------------------

_DJANGO_PASS = (" ... ok", " ... OK", " ...  OK")
# Output printed between a test's "..." and its "ok" (SWE-bench lists these three).
_DJANGO_INTERRUPTED = (
    re.compile(
        r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
        re.MULTILINE,
    ),
    re.compile(r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$", re.MULTILINE),
    re.compile(
        r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$", re.MULTILINE
    ),
)


def parse_django(log: str) -> dict[str, str]:
    """Django's ``tests/runtests.py --verbosity 2`` (unittest's verbose lines,
    ``test_x (module.Class) ... ok``), as SWE-bench's ``parse_log_django`` reads it: ids are
    the text before `` ... ``; ``FAIL:`` / ``ERROR:`` headers mark their test; an ``ok`` on a
    line of its own passes the last test that printed `` ... ``."""
    results: dict[str, str] = {}
    previous = None
    for raw in log.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:
            results["--version is equivalent to version"] = PASSED
        if " ... " in line:
            previous = line.split(" ... ")[0]
        for suffix in _DJANGO_PASS:
            if line.endswith(suffix):
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()
                results[line.rsplit(suffix, 1)[0]] = PASSED
                break
        if " ... skipped" in line:
            results[line.split(" ... skipped")[0]] = SKIPPED
        if line.endswith(" ... FAIL"):
            results[line.split(" ... FAIL")[0]] = FAILED
        if line.startswith("FAIL:") and len(line.split()) > 1:
            results[line.split()[1].strip()] = FAILED
        if line.endswith(" ... ERROR"):
            results[line.split(" ... ERROR")[0]] = ERROR
        if line.startswith("ERROR:") and len(line.split()) > 1:
            results[line.split()[1].strip()] = ERROR
        if line.startswith("ok") and previous is not None:
            results[previous] = PASSED
    for pattern in _DJANGO_INTERRUPTED:
        for match in pattern.finditer(log):
            results[match.group(1)] = PASSED
    return results


# --- sweap_json ---------------------------------------------------------------------------


def parse_sweap_json(log: str) -> dict[str, str]:
    start, end = log.find(SWEAP_START), log.rfind(SWEAP_END)
    if start == -1 or end <= start:
        return {}
    try:
        data = json.loads(log[start + len(SWEAP_START) : end].strip())
    except (json.JSONDecodeError, RecursionError):  # task output, nested past the parser
        return {}
    results = {}
    for test in data.get("tests") or [] if isinstance(data, dict) else []:
        if isinstance(test, dict) and isinstance(test.get("name"), str):
            status = str(test.get("status", "")).upper()
            results[test["name"]] = status if status in STATUSES else FAILED
    return results


PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "pytest": parse_pytest,
    "pytest_options": parse_pytest_options,
    "go_test": parse_go_test,
    "jest": parse_jest,
    "mocha": parse_mocha,
    "sweap_json": parse_sweap_json,
    "django": parse_django,
}


def parse_log(parser: str, log: str) -> dict[str, str]:
    try:
        return PARSERS[parser](log)
    except KeyError:
        raise ParserMissing(parser) from None


def lookup(statuses: dict[str, str], test_id: str) -> str | None:
    """The status of ``test_id``: by its whole id, else cut at the first space (as SWE-bench's
    pytest parser records it), else ERROR when its file failed to collect."""
    if test_id in statuses:
        return statuses[test_id]
    cut = test_id.split(" ", 1)[0]
    if cut in statuses:
        return statuses[cut]
    module = test_id.split("::", 1)[0]
    return ERROR if statuses.get(module) == ERROR else None
