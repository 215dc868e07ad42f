"""Specification checks for both domains: blocker count, no resolution in what the agent
sees, and every resolution in the full-info text."""

from collections.abc import Iterable, Mapping

from authoring import lint
from hilbench_annotate.instructions import task_instructions
from hilbench_annotate.vocabulary import MAX_BLOCKERS, MIN_BLOCKERS

from .results import FAILED, PASSED, CheckResult


def check_spec(
    snapshot: dict,
    waivers: dict[str, str] | None = None,
    *,
    schema: Mapping[str, Iterable[str]] | None = None,
    repository_names: Iterable[str] | None = None,
) -> list[CheckResult]:
    """``waivers``: lint fingerprint -> the author's reason; a waived finding does not fail
    the check, and the result says it was waived and why (it shows in provenance).

    ``schema`` and ``repository_names`` are what lint reads besides the snapshot
    (``authoring.checks.lint_inputs``): names the agent can read there are not leaks."""
    waivers = waivers or {}
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
    findings = lint.lint_task(snapshot, schema=schema, repository_names=repository_names)
    results.append(_no_resolution_in_spec(findings, waivers))
    full_info = task_instructions(snapshot)["full_info"]
    missing = [
        b["id"]
        for b in blockers
        if not b.get("resolution", "").strip() or b["resolution"].strip() not in full_info
    ]
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


def _no_resolution_in_spec(findings: list, waivers: dict[str, str]) -> CheckResult:
    """The lint rule that finds a resolution given away in the blocked spec, descriptions and
    business info; its waived findings pass, named with their reasons. A waiver names the
    place and the value it covers (the fingerprint), so a new leak is not waived with it."""
    leaks = [f for f in findings if f.rule == "resolution_leak"]
    waived = [f for f in leaks if f.fingerprint in waivers]
    failing = [f for f in leaks if f.fingerprint not in waivers]
    notes = [f"Waived: {f.message} Reason: {waivers[f.fingerprint]}" for f in waived]
    # A waiver saved before leak fingerprints named their place and value ("rule@field")
    # covered every leak of the blocker, later ones too; it no longer matches. Say so, so
    # the author judges each leak again instead of wondering where the waiver went.
    stale = sorted({f.field for f in failing if f"{f.rule}@{f.field}" in waivers})
    notes += [
        f"An earlier waiver of {field} covered any place; each leak now needs its own."
        for field in stale
    ]
    if failing:
        message = "; ".join(f.message for f in failing)
    else:
        message = "No resolution is given away in the blocked specification, descriptions or "
        message += "business info."
    return CheckResult(
        "no_resolution_in_spec",
        FAILED if failing else PASSED,
        " ".join([message, *notes]),
        {
            "findings": [f.field for f in failing],
            "fingerprints": [f.fingerprint for f in failing],
            "waived": [
                {"field": f.field, "fingerprint": f.fingerprint, "reason": waivers[f.fingerprint]}
                for f in waived
            ],
        },
    )
