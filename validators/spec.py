"""Specification checks for both domains: blocker count, no resolution in what the agent
sees, and every resolution in the full-info text."""

from authoring import lint
from hilbench_annotate.instructions import task_instructions
from hilbench_annotate.vocabulary import MAX_BLOCKERS, MIN_BLOCKERS

from .results import FAILED, PASSED, CheckResult


def check_spec(snapshot: dict) -> list[CheckResult]:
    blockers = snapshot.get("blockers", [])
    results = []
    n = len(blockers)
    results.append(
        CheckResult(
            "blocker_count",
            PASSED if MIN_BLOCKERS <= n <= MAX_BLOCKERS else FAILED,
            f"{n} blockers"
            + (
                ""
                if MIN_BLOCKERS <= n <= MAX_BLOCKERS
                else f"; a task needs {MIN_BLOCKERS}–{MAX_BLOCKERS}"
            ),
            {"count": n},
        )
    )
    # The lint rule that finds resolutions in the blocked spec, descriptions and business info.
    leaks = [f for f in lint.lint_task(snapshot) if f.rule == "resolution_leak"]
    results.append(
        CheckResult(
            "no_resolution_in_spec",
            FAILED if leaks else PASSED,
            "; ".join(f.message for f in leaks)
            if leaks
            else "No resolution appears in the blocked specification, descriptions or "
            "business info.",
            {"findings": [f.field for f in leaks]},
        )
    )
    full_info = task_instructions(snapshot)["full_info"]
    missing = [b["id"] for b in blockers if b.get("resolution", "").strip() not in full_info]
    results.append(
        CheckResult(
            "full_info_has_resolutions",
            FAILED if missing or not blockers else PASSED,
            f"The full_info text lacks the resolution of {missing}."
            if missing
            else (
                "No blockers to resolve."
                if not blockers
                else "The full_info text carries every resolution."
            ),
            {"missing": missing},
        )
    )
    return results
