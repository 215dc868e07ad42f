"""The SWE test-run check: FAIL_TO_PASS fail before the gold patch, and everything passes after.

A blocked SWE task is only worth running if its tests discriminate: the FAIL_TO_PASS tests must
fail on the base commit (with the setup and test patches applied, as the agent will find it) and
pass once the gold patch is applied, and the PASS_TO_PASS tests must keep passing. Both runs
execute the repository's own test command in the task's built environment
(``environments.py``), in the sandbox, with no network, each on a fresh copy of the tree.

Outcomes say what happened in one sentence: the environment is broken (its build failed, the
run could not import or collect, the runner exited with a usage error, the log parser found no
test), the tests failed as expected or unexpectedly, or the named test ids were not in the run.
"""

from __future__ import annotations

import re
from pathlib import Path

from hilbench_annotate.envspec import eval_script, spec_clean
from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.patches import check_applies

from .environments import BuiltEnvironment, environment_key, environment_use, ready_environment
from .logparsers import PASSING, ParserMissing, lookup, parse_log
from .models import EnvironmentBuild
from .results import ERROR, FAILED, PASSED, SKIPPED, CheckResult
from .sandbox import (
    COPY_FAILED,
    Mount,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    apply_patches,
    checkout,
    get_sandbox,
    note_refused_overlay,
    overlay_generated,
    run_folder,
    truncate_output,
)

BEFORE_CHECK = "fail_to_pass_fail_before"
GOLD_CHECK = "tests_pass_with_gold"
MAX_NAMED = 20  # test ids named in a message; the full lists are in the details
DETAIL_OUTPUT_BYTES = 20_000
TAIL_LINES = 25
# pytest's exit codes that mean the run itself did not work (not that tests failed).
PYTEST_BROKEN = {2: "interrupted, e.g. a collection error", 3: "an internal error",
                 4: "a usage error", 5: "no tests were collected"}  # fmt: skip
_BROKEN_MARKERS = re.compile(
    r"^(E\s+)?(ModuleNotFoundError|ImportError|SyntaxError)\b.*$|"
    r"^ImportError while loading conftest.*$|^command not found.*$|^.*: not found$",
    re.MULTILINE,
)


# What each limit is, said with the message of a run it stopped.
STOPPED_WHY = {
    "process limit": " (a fork was refused: too many processes at once)",
    "disk limit": " (a folder it writes is full: the repository copy, /tmp or /dev/shm)",
}


def _names(tests: list[str]) -> str:
    shown = ", ".join(tests[:MAX_NAMED])
    more = len(tests) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def log_tail(output: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(output.rstrip().splitlines()[-lines:])


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
        "log_tail": log_tail(result.output),
    }


def _script_mounts(folder: Path, spec: dict) -> list[Mount]:
    """A release task's run script and parser, where its test command expects them."""
    mounts = []
    for name, field in (("run_script.sh", "run_script"), ("parser.py", "parser_script")):
        if spec.get(field):
            path = folder / name
            path.write_text(spec[field])
            path.chmod(0o755)
            mounts.append(Mount(path, f"/root/{name}"))
    return mounts


def _run(env, chain, sandbox, limits, built: BuiltEnvironment, spec):
    """Prepare a fresh tree (base commit, the install's generated files, ``chain``) and run
    the test command on it. Returns ``(result, None)`` or ``(None, why the tree failed)``."""
    repo_path = Path(env.repository.path)
    labels = {label for label, _ in chain}
    try:
        check_applies(repo_path, env.base_commit, chain, whitespace_exempt=labels)
    except DomainError as exc:
        return None, str(exc)
    with run_folder() as folder:
        tree = folder / "tree"
        try:
            checkout(repo_path, env.base_commit, tree)
            _copied, refused = overlay_generated(
                built.testbed, built.manifest.get("generated", []), tree
            )
            apply_patches(tree, chain)
        except DomainError as exc:
            return None, str(exc)
        image = built.manifest.get("image")
        result = sandbox.run(
            command=eval_script(spec, env.test_command),
            limits=limits,
            tree=tree,
            mounts=([] if image else built.mounts) + _script_mounts(folder, spec),
            env=built.run_env(spec),
            **({"image": image} if image else {}),
        )
        return note_refused_overlay(result, refused), None


def _both(status: str, message: str, details: dict | None = None) -> list[CheckResult]:
    return [
        CheckResult(BEFORE_CHECK, status, message, dict(details or {})),
        CheckResult(GOLD_CHECK, status, message, dict(details or {})),
    ]


def check_swe_tests(env, *, sandbox=None, limits: SandboxLimits | None = None) -> list[CheckResult]:
    """Run the task's tests before and after the gold patch; two CheckResults.

    ``env`` is a SweEnvironment. ``sandbox`` defaults to the configured backend; when it
    cannot isolate, nothing runs and both checks say so.
    """
    repository = getattr(env, "repository", None)
    if repository is None or not Path(repository.path).exists():
        return _both(SKIPPED, "The task has no repository to run its tests in.")
    if not (env.test_command or "").strip():
        return _both(FAILED, "The task has no test command, so its tests cannot be run.")
    try:
        spec = spec_clean(env.environment_spec)
        sandbox = sandbox or get_sandbox()
    except (DomainError, SandboxError) as exc:
        return _both(ERROR, f"Task code cannot run: {exc}")
    if spec["log_parser"] == "sweap_json" and not spec["parser_script"].strip():
        return _both(
            ERROR,
            "The environment is incomplete: the sweap_json parser runs the task's own parser.py, "
            "which is not in the app (the release keeps it in its image); add it in the "
            "Environment tab.",
        )
    # A task straight after import has no environment yet: the check builds it (in this
    # worker) and says so, with the build's log, rather than asking the user to build first.
    key = environment_key(env)
    built_before = ready_environment(key) is not None
    with environment_use(env) as (built, failed):
        if built is None:
            return _both(
                ERROR,
                f"The environment is not buildable: its build failed at step '{failed.step}' "
                f"(build {failed.pk}){_why(failed.error)}",
                {"build": failed.pk, "log_tail": log_tail(failed.error or failed.log)},
            )
        limits = limits or SandboxLimits()
        setup = [("setup patch", env.setup_patch or ""), ("test patch", env.test_patch or "")]
        gold = [("gold patch", env.gold_patch or "")]
        before = _checked(BEFORE_CHECK, env, setup, sandbox, limits, built, spec, _judge_before)
        after = _checked(GOLD_CHECK, env, setup + gold, sandbox, limits, built, spec, _judge_after)
    crash = before.details.pop("crash", None)
    if crash and after.outcome == PASSED:
        # The same environment runs the tests once the gold patch is in: the run that named
        # no test before it crashed because of the bug (SWE-bench counts its tests failing).
        before = _judge_before(BEFORE_CHECK, env, {}, before.details, crashed=crash)
    if not built_before:
        _say_built_first(key, [before, after])
    return [before, after]


def _say_built_first(key: str, results: list[CheckResult]) -> None:
    """The environment was not built when the check started, so the check built it: the
    first result says so after what it found (its message still starts with the finding),
    and each links the build's log (``details["build"]``)."""
    build = (
        EnvironmentBuild.objects.filter(key=key, status=EnvironmentBuild.Status.SUCCEEDED)
        .order_by("-id")
        .first()
    )
    if build is None:
        return
    took = f", {build.duration_s:.0f} s" if build.duration_s is not None else ""
    said = f"The environment was not built yet: this check built it first (build {build.pk}{took})."
    results[0].message = f"{results[0].message} {said}"
    for result in results:
        result.details["build"] = build.pk
        result.details["built_first"] = True


def _why(error: str) -> str:
    """The first line of a build's error, after the step it names: ``: <why>.``"""
    first = (error or "").split("\n", 1)[0]
    reason = first.split(" failed: ", 1)[1] if " failed: " in first else first
    return f": {reason.rstrip('.')}." if reason else "."


def _broken(result: SandboxResult, spec: dict, statuses: dict) -> str | None:
    """Why the run says nothing about the tests (the environment is broken), or None."""
    if result.exit_code == COPY_FAILED:
        return "the repository did not fit in the sandbox's disk limit"
    code = result.exit_code
    if spec.get("log_parser") == "pytest" and code in PYTEST_BROKEN and not statuses:
        return f"pytest exited with {code} ({PYTEST_BROKEN[code]})"
    if not statuses:
        marker = _BROKEN_MARKERS.search(result.output)
        cause = f": {marker.group(0).strip()}" if marker else ""
        return f"the log parser '{spec.get('log_parser')}' found no test in the output{cause}"
    return None


def _checked(name, env, chain, sandbox, limits, built, spec, judge) -> CheckResult:
    when = "before the gold patch" if name == BEFORE_CHECK else "with the gold patch"
    try:
        result, refused = _run(env, chain, sandbox, limits, built, spec)
    except SandboxError as exc:
        return CheckResult(name, ERROR, f"The tests could not be run {when}: {exc}")
    if refused is not None:
        return CheckResult(name, FAILED, f"The tests could not be run {when}: {refused}")
    details = _run_details(result)
    try:
        statuses = parse_log(spec["log_parser"], result.output)
    except ParserMissing:
        message = f"The log parser '{spec['log_parser']}' is not supported by this app."
        return CheckResult(name, ERROR, message, details)
    details["found"] = len(statuses)
    # A run that reported its tests finished, even if one of them hit MemoryError.
    stopped = result.stopped if (result.timed_out or result.cpu_exceeded or not statuses) else None
    if stopped:
        why = STOPPED_WHY.get(stopped, "")
        if result.exit_code == COPY_FAILED:
            why = " (the repository copy did not fit)"
        return CheckResult(
            name,
            FAILED,
            f"The test run {when} was stopped by the sandbox's {stopped}{why}.",
            details,
        )
    broken = _broken(result, spec, statuses)
    if broken:
        details["crash"] = broken
        return CheckResult(name, ERROR, f"The environment is broken {when}: {broken}.", details)
    checked = judge(name, env, statuses, details)
    if result.memory_exceeded and checked.outcome != PASSED:
        checked.message += " The run hit the sandbox's memory limit."
    return checked


def _judge_before(name, env, statuses, details, crashed: str = "") -> CheckResult:
    tests = list(dict.fromkeys(env.fail_to_pass or []))
    if not tests:
        return CheckResult(
            name, FAILED, "The task lists no FAIL_TO_PASS tests, so nothing shows the bug.", details
        )
    found = {test: lookup(statuses, test) for test in tests}
    passing = [t for t, s in found.items() if s in PASSING]
    skipped = [t for t, s in found.items() if s == "SKIPPED"]
    missing = [t for t, s in found.items() if s is None and not crashed]
    p2p_bad = [t for t in env.pass_to_pass or [] if lookup(statuses, t) not in PASSING]
    details.update(statuses=found, passing=passing, skipped=skipped, missing=missing)
    details["pass_to_pass_not_passing"] = p2p_bad
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} test id(s) are not in the run's {len(statuses)} tests: "
            f"{_names(missing)}"
        )
    if passing:
        problems.append(f"{len(passing)} pass before the gold patch: {_names(passing)}")
    if skipped:
        problems.append(f"{len(skipped)} are skipped: {_names(skipped)}")
    if p2p_bad:
        problems.append(f"{len(p2p_bad)} PASS_TO_PASS test(s) do not pass: {_names(p2p_bad)}")
    if problems:
        return CheckResult(
            name,
            FAILED,
            f"Before the gold patch, of {len(tests)} FAIL_TO_PASS tests: "
            + "; ".join(problems)
            + ".",
            details,
        )
    how = f" (the run crashed: {crashed}, which the gold patch fixes)" if crashed else ""
    return CheckResult(
        name,
        PASSED,
        f"All {len(tests)} FAIL_TO_PASS tests fail on the base commit with the setup and test "
        f"patches applied, as expected{how}; {len(env.pass_to_pass or [])} PASS_TO_PASS pass.",
        details,
    )


def _judge_after(name, env, statuses, details) -> CheckResult:
    tests = list(dict.fromkeys([*(env.fail_to_pass or []), *(env.pass_to_pass or [])]))
    if not tests:
        return CheckResult(
            name, FAILED, "The task lists no FAIL_TO_PASS or PASS_TO_PASS tests.", details
        )
    found = {test: lookup(statuses, test) for test in tests}
    failing = [t for t, s in found.items() if s is not None and s not in PASSING]
    missing = [t for t, s in found.items() if s is None]
    details.update(statuses=found, failing=failing, missing=missing)
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} test id(s) are not in the run's {len(statuses)} tests: "
            f"{_names(missing)}"
        )
    if failing:
        problems.append(f"{len(failing)} do not pass (unexpectedly): {_names(failing)}")
    if problems:
        return CheckResult(
            name,
            FAILED,
            f"With the gold patch, of the {len(tests)} FAIL_TO_PASS and PASS_TO_PASS tests: "
            + "; ".join(problems)
            + ".",
            details,
        )
    return CheckResult(
        name,
        PASSED,
        f"With the gold patch applied all {len(tests)} FAIL_TO_PASS and PASS_TO_PASS tests pass.",
        details,
    )
