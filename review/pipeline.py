"""The default review pipeline and the automated gates a layer can require."""

from collections.abc import Callable

from hilbench_annotate.vocabulary import QUALITY_CRITERIA, Role

DEFAULT_LAYERS = [
    {
        "name": "Author self-check",
        "role": Role.AUTHOR,
        "self_check": True,
        "checklist": [label for _, label in QUALITY_CRITERIA],
        "gates": ["lint_clean"],
    },
    {
        "name": "Peer review",
        "role": Role.AUTHOR,
        "self_check": False,
        "checklist": [
            "Each blocker is a gap a real user or codebase would have",
            "Without each resolution the task fails (tests / gold result depend on it)",
            "The blocked specification still reads naturally",
        ],
        "gates": ["lint_clean"],
    },
    {
        "name": "Registry audit",
        "role": Role.AUDITOR,
        "self_check": False,
        "checklist": [
            "Every resolution is exact and usable verbatim",
            "Trigger questions are self-contained, one topic, and do not contain the answer",
            "Blockers are independent: one targeted question resolves each",
        ],
        "gates": ["lint_clean"],
    },
    {
        "name": "Environment audit",
        "role": Role.AUDITOR,
        "self_check": False,
        "checklist": [
            "Setup patch / database edits plant the blockers and nothing else",
            "Blockers surface while working (progressive discovery)",
            "Nothing in repository, database, descriptions or business info resolves a blocker",
        ],
        "gates": ["lint_clean"],
    },
    {
        "name": "Judge-validation labelling",
        "role": Role.REVIEWER,
        "self_check": False,
        "checklist": [
            "Held-out questions labelled independently by two labellers",
            "Disagreements adjudicated by a third",
        ],
        "gates": [],
    },
    {
        "name": "Final sign-off",
        "role": Role.LEAD,
        "self_check": False,
        "checklist": [
            "All automated gates are green on the current revision",
            "Every layer was done by a different person",
            "Ready to export",
        ],
        "gates": ["lint_clean", "structural", "pass_rate"],
    },
]


def _lint_clean(task) -> tuple[bool, str]:
    from authoring.checks import as_dicts, draft_findings
    from authoring.services import open_findings
    from hilbench_annotate.services import task_snapshot

    blocking = open_findings(task, as_dicts(draft_findings(task, task_snapshot(task))))
    if blocking:
        return False, f"{len(blocking)} lint error(s) neither fixed nor waived"
    return True, "no open lint errors"


def _validation(group: str) -> Callable:
    def check(task) -> tuple[bool, str]:
        from validators.services import gate_for

        return gate_for(group)(task)

    return check


def _structural(task) -> tuple[bool, str]:
    """Every check group of the task's domain passed on the current revision."""
    from validators.registry import groups_for

    reds = []
    for group in groups_for(task.domain):
        green, message = _validation(group)(task)
        if not green:
            reds.append(f"{group}: {message}")
    return (not reds, "; ".join(reds) or "every structural check passed on the current revision")


def _pass_rate(task) -> tuple[bool, str]:
    """The project's selection thresholds keep the task (evaluation.selectors)."""
    from evaluation.selectors import pass_rate_gate

    return pass_rate_gate(task)


# name -> check(task) -> (green, message): the lint, the validators' check groups, and the
# pass-rate selection of model runs.
GATES: dict[str, Callable] = {
    "lint_clean": _lint_clean,
    "structural": _structural,
    "pass_rate": _pass_rate,
    **{
        name: _validation(name)
        for name in (
            "spec",
            "sql_ground_truth",
            "swe_patches",
            "swe_tests",
            "history_leakage",
            "judge_recall",
        )
    },
}


def gate_results(task, names: list[str]) -> list[tuple[str, bool, str]]:
    results = []
    for name in names:
        check = GATES.get(name)
        if check is None:
            results.append((name, False, f"no automated check is called {name!r}"))
        else:
            green, message = check(task)
            results.append((name, green, message))
    return results
