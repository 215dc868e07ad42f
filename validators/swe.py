"""The SWE test-run check: FAIL_TO_PASS fail before the gold patch, and everything passes after.

A blocked SWE task is only worth running if its tests discriminate: the FAIL_TO_PASS tests must
fail on the base commit (with the setup and test patches applied, as the agent will find it) and
pass once the gold patch is applied, and the PASS_TO_PASS tests must keep passing. Both runs
execute the repository's own test command, i.e. untrusted code, so they go through a sandbox
(:mod:`validators.sandbox`), each in a fresh temporary tree that is deleted afterwards, and a
run the sandbox stops (time or memory) is a FAILED check with a message, never a hang.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.patches import check_applies

from .results import ERROR, FAILED, PASSED, SKIPPED, CheckResult
from .sandbox import (
    SandboxError,
    SandboxLimits,
    SandboxResult,
    apply_patches,
    checkout,
    docker_image_for,
    get_sandbox,
    parse_pytest_results,
    truncate_output,
)

BEFORE_CHECK = "fail_to_pass_fail_before"
GOLD_CHECK = "tests_pass_with_gold"
MAX_NAMED = 20  # test ids named in a message; the full lists are in the details
DETAIL_OUTPUT_BYTES = 20_000

_FAILING = ("FAILED", "ERROR")


def _names(tests: list[str]) -> str:
    shown = ", ".join(tests[:MAX_NAMED])
    more = len(tests) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _status(statuses: dict[str, str], test_id: str) -> str | None:
    """The test's outcome; a test in a file that failed to collect (``ERROR tests/x.py``)
    errored, it is not missing - common when the test patch imports what the fix adds."""
    if test_id in statuses:
        return statuses[test_id]
    module = test_id.split("::", 1)[0]
    return "ERROR" if statuses.get(module) == "ERROR" else None


def _stopped(result: SandboxResult, limits: SandboxLimits) -> str | None:
    if result.timed_out:
        return f"the sandbox stopped it after {limits.wall_s:g} s (wall-time limit)"
    if result.memory_exceeded:
        return f"the sandbox stopped it at {limits.memory_mb} MB (memory limit)"
    if result.cpu_exceeded:
        return f"the sandbox stopped it after {limits.cpu_s} s of CPU time (CPU limit)"
    return None


def _run_details(result: SandboxResult) -> dict:
    output, _ = truncate_output(result.output.encode("utf-8"), DETAIL_OUTPUT_BYTES)
    return {
        "exit_code": result.exit_code,
        "duration_s": result.duration_s,
        "backend": result.backend,
        "timed_out": result.timed_out,
        "memory_exceeded": result.memory_exceeded,
        "network_isolated": result.network_isolated,
        "sandbox": result.details,
        "output": output,
    }


def _run(env, chain: list[tuple[str, str]], sandbox, limits: SandboxLimits):
    """Apply ``chain`` on the base commit in a fresh tree and run the test command there.

    Returns ``(result, None)`` or ``(None, message)`` when the tree could not be prepared.
    The chain is first checked against the mirror (safe paths, applies without fuzz), which
    gives the precise message naming the patch and file; whitespace is the patch check's
    concern, not this one's.
    """
    repo_path = Path(env.repository.path)
    labels = {label for label, _ in chain}
    try:
        check_applies(repo_path, env.base_commit, chain, whitespace_exempt=labels)
    except DomainError as exc:
        return None, str(exc)
    with tempfile.TemporaryDirectory(prefix="hilbench-swe-", ignore_cleanup_errors=True) as scratch:
        tree = Path(scratch) / "repo"
        try:
            checkout(repo_path, env.base_commit, tree)
            apply_patches(tree, chain)
        except DomainError as exc:
            return None, str(exc)
        return sandbox.run(workdir=tree, command=env.test_command, limits=limits), None


def check_swe_tests(env, *, sandbox=None, limits: SandboxLimits | None = None) -> list[CheckResult]:
    """Run the task's tests before and after the gold patch; two CheckResults.

    ``env`` is a SweEnvironment (or anything with its attributes: ``repository.path``,
    ``base_commit``, ``setup_patch``, ``test_patch``, ``gold_patch``, ``fail_to_pass``,
    ``pass_to_pass``, ``test_command``). ``sandbox`` defaults to the configured backend.
    """
    repository = getattr(env, "repository", None)
    repo_path = getattr(repository, "path", None)
    if repository is None or repo_path is None or not Path(repo_path).exists():
        reason = "The task has no repository to run its tests in."
        return [
            CheckResult(BEFORE_CHECK, SKIPPED, reason),
            CheckResult(GOLD_CHECK, SKIPPED, reason),
        ]
    if not (env.test_command or "").strip():
        reason = "The task has no test command, so its tests cannot be run."
        return [
            CheckResult(BEFORE_CHECK, FAILED, reason),
            CheckResult(GOLD_CHECK, FAILED, reason),
        ]
    limits = limits or SandboxLimits()
    if sandbox is None:
        try:
            sandbox = get_sandbox(image=docker_image_for(getattr(env, "repo_name", None)))
        except SandboxError as exc:
            return [
                CheckResult(BEFORE_CHECK, ERROR, str(exc)),
                CheckResult(GOLD_CHECK, ERROR, str(exc)),
            ]
    setup = [("setup patch", env.setup_patch or ""), ("test patch", env.test_patch or "")]
    gold = [("gold patch", env.gold_patch or "")]
    return [
        _checked(BEFORE_CHECK, env, setup, sandbox, limits, _judge_before),
        _checked(GOLD_CHECK, env, setup + gold, sandbox, limits, _judge_after),
    ]


def _checked(name, env, chain, sandbox, limits, judge) -> CheckResult:
    when = "before the gold patch" if name == BEFORE_CHECK else "with the gold patch"
    try:
        result, refused = _run(env, chain, sandbox, limits)
    except SandboxError as exc:
        return CheckResult(name, ERROR, f"The tests could not be run {when}: {exc}")
    if refused is not None:
        return CheckResult(name, FAILED, f"The tests could not be run {when}: {refused}")
    details = _run_details(result)
    stopped = _stopped(result, limits)
    if stopped:
        return CheckResult(name, FAILED, f"The test run {when} did not finish: {stopped}.", details)
    return judge(name, env, parse_pytest_results(result.output), result, details)


def _judge_before(name, env, statuses, result, details) -> CheckResult:
    tests = list(dict.fromkeys(env.fail_to_pass or []))
    if not tests:
        return CheckResult(
            name, FAILED, "The task lists no FAIL_TO_PASS tests, so nothing shows the bug.", details
        )
    found = {test: _status(statuses, test) for test in tests}
    passing = [test for test, status in found.items() if status == "PASSED"]
    skipped = [test for test, status in found.items() if status == "SKIPPED"]
    missing = [test for test, status in found.items() if status is None]
    details.update(
        statuses=found,
        passing=passing,
        skipped=skipped,
        missing=missing,
        # PASS_TO_PASS must pass on the base commit too (PRODUCT.md: "pass both times").
        pass_to_pass_not_passing=[
            test for test in env.pass_to_pass or [] if _status(statuses, test) != "PASSED"
        ],
    )
    problems = []
    p2p_bad = details["pass_to_pass_not_passing"]
    if passing:
        problems.append(f"{len(passing)} pass before the gold patch: {_names(passing)}")
    if skipped:
        problems.append(f"{len(skipped)} are skipped: {_names(skipped)}")
    if missing:
        problems.append(
            f"{len(missing)} are missing from the test output (wrong id, or not collected): "
            f"{_names(missing)}"
        )
    message = f"Of the {len(tests)} FAIL_TO_PASS tests, " + "; ".join(problems) if problems else ""
    if p2p_bad:
        also = (
            f"{len(p2p_bad)} PASS_TO_PASS test(s) do not pass before the gold patch: "
            f"{_names(p2p_bad)}"
        )
        message = f"{message}; {also}" if message else also[0].upper() + also[1:]
    if message:
        return CheckResult(name, FAILED, message + ".", details)
    return CheckResult(
        name,
        PASSED,
        f"All {len(tests)} FAIL_TO_PASS tests fail on the base commit with the setup and test "
        "patches applied.",
        details,
    )


def _judge_after(name, env, statuses, result, details) -> CheckResult:
    tests = list(dict.fromkeys([*(env.fail_to_pass or []), *(env.pass_to_pass or [])]))
    if not tests:
        return CheckResult(
            name, FAILED, "The task lists no FAIL_TO_PASS or PASS_TO_PASS tests.", details
        )
    found = {test: _status(statuses, test) for test in tests}
    failing = [test for test, status in found.items() if status in (*_FAILING, "SKIPPED")]
    missing = [test for test, status in found.items() if status is None]
    details.update(statuses=found, failing=failing, missing=missing)
    problems = []
    if failing:
        problems.append(f"{len(failing)} do not pass: {_names(failing)}")
    if missing:
        problems.append(f"{len(missing)} are missing from the test output: {_names(missing)}")
    if problems:
        return CheckResult(
            name,
            FAILED,
            f"With the gold patch applied, of the {len(tests)} FAIL_TO_PASS and PASS_TO_PASS "
            "tests, " + "; ".join(problems) + ".",
            details,
        )
    return CheckResult(
        name,
        PASSED,
        f"With the gold patch applied all {len(tests)} FAIL_TO_PASS and PASS_TO_PASS tests pass.",
        details,
    )
