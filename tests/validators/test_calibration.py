"""Checks against work people validated: the HiL-Bench release's tasks (five examples, and the
98 calibration tasks when present) and the project's own release-layout fixtures raise no lint
error and no structural failure; and each known fault is caught by its rule — planted in the
demo's clean blocked task, and the resolution-in-spec faults also in two release tasks of the
calibration set (one SQL, one SWE).

The history-leakage faults (a gold line in history, refs, reflog, stash, …) are planted in
``tests/validators/test_leakage.py``.
"""

import copy
import tempfile
from pathlib import Path

import pytest

from authoring import lint
from exchange.importers import import_hilbench
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_snapshot
from tests.conftest import FIXTURES, shared_path
from tests.exchange.bundle_helpers import seed_demo, sql_task
from validators.registry import groups_for, run_group
from validators.spec import check_spec

pytestmark = pytest.mark.django_db


def _structural(task, snapshot) -> dict[str, str]:
    failures = {}
    for group in groups_for(task.domain):
        with tempfile.TemporaryDirectory() as tmp:
            for result in run_group(group, task, snapshot, Path(tmp)):
                if result.outcome in ("failed", "error"):
                    failures[f"{group}/{result.name}"] = result.message
    return failures


@pytest.mark.parametrize(
    "root",
    [
        pytest.param("fixtures", id="fixtures"),
        pytest.param("hilbench", marks=pytest.mark.shared_data),
        pytest.param("hilbench-calibration", marks=pytest.mark.shared_data),
    ],
)
def test_release_tasks_raise_no_lint_error_and_no_structural_failure(root, project, author):
    path = FIXTURES / "hilbench" if root == "fixtures" else shared_path("examples", root)
    import_hilbench(project=project, root=path, actor=author)
    tasks = list(Task.objects.filter(project=project))
    assert len(tasks) == {"fixtures": 4, "hilbench": 5, "hilbench-calibration": 98}[root]
    errors, failures = {}, {}
    for task in tasks:
        snapshot = task_snapshot(task)
        name = task.source_metadata.get("folder")
        found = [f for f in lint.lint_task(snapshot) if f.severity == lint.ERROR]
        if found:
            errors[name] = [(f.rule, f.message) for f in found]
        broken = _structural(task, snapshot)
        if broken:
            failures[name] = broken
    assert errors == {}
    assert failures == {}


# --- planted faults ------------------------------------------------------------------------


def _resolution(snapshot, index=0) -> str:
    return snapshot["blockers"][index]["resolution"]


def copy_resolution_into_the_question(snapshot):
    snapshot["blocked_spec"]["question"] += " " + _resolution(snapshot)


def copy_a_resolution_sentence_into_business_info(snapshot):
    snapshot["environment"]["business_info"] = [
        *snapshot["environment"].get("business_info", []),
        "Reference note: " + _resolution(snapshot, 1),
    ]


def copy_a_resolution_into_a_column_description(snapshot):
    descriptions = snapshot["environment"]["descriptions"]
    table = sorted(descriptions)[0]
    descriptions[table] += f'note,note,"{_resolution(snapshot, 2)}",text,\n'


def trigger_question_states_its_resolution(snapshot):
    resolution = _resolution(snapshot).rstrip(".")
    snapshot["blockers"][0]["trigger_questions"][0] = f"Is it true that {resolution}?"


def trigger_question_the_judge_refuses(snapshot):
    snapshot["blockers"][1]["trigger_questions"][1] = "I assume the year is 1997, right?"


def trigger_question_about_the_registry(snapshot):
    snapshot["blockers"][2]["trigger_questions"][0] = "What does this blocker refer to?"


def short_statements_of_the_answer(sentence: str, section: str = "question"):
    """A few words that state a resolution's value on its topic (issue 18): no copy of the
    resolution, yet the answer given away."""

    def plant(snapshot):
        snapshot["blocked_spec"][section] += ("\n- " if section != "question" else " ") + sentence

    plant.__name__ = f"state {sentence!r}"
    return plant


def too_few_blockers(snapshot):
    snapshot["blockers"] = snapshot["blockers"][:2]


def resolution_left_empty(snapshot):
    snapshot["blockers"][1]["resolution"] = " "


def same_resolution_twice(snapshot):
    snapshot["blockers"][1]["resolution"] = _resolution(snapshot, 0)


FAULTS = {
    # fault: (plant, lint rule that errs, structural check that fails or None)
    "resolution copied into the question": (
        copy_resolution_into_the_question,
        "resolution_leak",
        "no_resolution_in_spec",
    ),
    "a resolution sentence in business info": (
        copy_a_resolution_sentence_into_business_info,
        "resolution_leak",
        "no_resolution_in_spec",
    ),
    "a resolution in a column description": (
        copy_a_resolution_into_a_column_description,
        "resolution_leak",
        "no_resolution_in_spec",
    ),
    "a trigger question that states its resolution": (
        trigger_question_states_its_resolution,
        "contains_resolution",
        None,
    ),
    "a trigger question the judge refuses": (
        trigger_question_the_judge_refuses,
        "not_a_question",
        None,
    ),
    "a trigger question about the registry": (
        trigger_question_about_the_registry,
        "self_referential",
        None,
    ),
    "two blockers only": (too_few_blockers, "blocker_count", "blocker_count"),
    "a resolution left empty": (
        resolution_left_empty,
        "empty_field",
        "full_info_has_resolutions",
    ),
    "two blockers with one resolution": (same_resolution_twice, "overlapping_blockers", None),
    **{
        f"a short statement of a value: {sentence}": (
            short_statements_of_the_answer(sentence),
            "resolution_leak",
            "no_resolution_in_spec",
        )
        for sentence in (
            "Troubled means status 'D'.",
            "Troubled: loan.status = 'D'.",
            "Loans in debt (status D) count as troubled.",
            "Servicing rows have k_symbol LN.",
            "The review year is 1998.",
        )
    },
}

# Planted in release tasks of the calibration set: (folder, sentence, section, blocker id).
RELEASE_FAULTS = {
    "sql_25: the Mexican average in the question": (
        "sql/sql_25",
        "Mexico's average is 110.",
        "question",
        "mexico_enrollment",
    ),
    "sql_25: the chosen columns in the question": (
        "sql/sql_25",
        "Use AvgScrMath2, AvgScrRead2, AvgScrWrite2.",
        "question",
        "confusing_performance_columns",
    ),
    "swe_71: the constructor argument in the requirements": (
        "swe/swe_71",
        "Pass it as _encoder to MIMEApplication.",
        "requirements",
        "ambiguous_encoder_integration_method",
    ),
    "swe_71: the encoding name in the requirements": (
        "swe/swe_71",
        "Use the identifier '7or8bit'.",
        "requirements",
        "missing_encoding_type_identifier",
    ),
}


@pytest.fixture
def clean(settings, tmp_path) -> dict:
    task = sql_task(seed_demo(settings, tmp_path))
    snapshot = task_snapshot(task)
    assert [f for f in lint.lint_task(snapshot) if f.severity == lint.ERROR] == []
    assert all(r.outcome == "passed" for r in check_spec(snapshot))
    return snapshot


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_planted_fault_is_caught_by_its_rule(clean, fault):
    plant, rule, check = FAULTS[fault]
    snapshot = copy.deepcopy(clean)
    plant(snapshot)
    errors = {f.rule for f in lint.lint_task(snapshot) if f.severity == lint.ERROR}
    assert rule in errors, (fault, errors)
    failed = {r.name for r in check_spec(snapshot) if r.outcome == "failed"}
    assert failed == ({check} if check else set()), (fault, failed)


@pytest.mark.shared_data
@pytest.mark.parametrize("fault", list(RELEASE_FAULTS))
def test_each_fault_planted_in_a_release_task_is_caught(fault, project, author):
    """The same faults in tasks people validated: the clean task raises nothing, the planted
    one fails lint and the structural check (run as a validation run runs it), naming the
    blocker, the place and the value."""
    folder, sentence, section, blocker = RELEASE_FAULTS[fault]
    import_hilbench(
        project=project,
        root=shared_path("examples", "hilbench-calibration", *folder.split("/")),
        actor=author,
    )
    (task,) = Task.objects.filter(project=project)
    snapshot = task_snapshot(task)
    assert [f for f in lint.lint_task(snapshot) if f.severity == lint.ERROR] == []
    assert _structural(task, snapshot) == {}
    short_statements_of_the_answer(sentence, section)(snapshot)
    (error,) = [f for f in lint.lint_task(snapshot) if f.severity == lint.ERROR]
    index = [b["id"] for b in snapshot["blockers"]].index(blocker)
    assert (error.rule, error.field) == ("resolution_leak", f"blockers[{index}].resolution")
    assert error.detail.startswith(f"blocked_spec.{section}:")
    assert _structural(task, snapshot) == {"spec/no_resolution_in_spec": error.message}


def test_a_waiver_with_a_reason_is_honoured_and_named(clean):
    snapshot = copy.deepcopy(clean)
    copy_resolution_into_the_question(snapshot)
    (finding,) = [f for f in lint.lint_task(snapshot) if f.rule == "resolution_leak"]
    reason = "The question quotes the legal definition on purpose; reviewed with the lead."
    result = next(
        r
        for r in check_spec(snapshot, {finding.fingerprint: reason})
        if r.name == "no_resolution_in_spec"
    )
    assert result.outcome == "passed"
    assert "Waived:" in result.message and reason in result.message
    assert result.details["waived"] == [
        {"field": finding.field, "fingerprint": finding.fingerprint, "reason": reason}
    ]


def test_a_waiver_covers_only_the_leak_it_was_given_for(clean):
    """Waived once, a leak stays waived; the same resolution shown somewhere else later, or
    another value of it, is a new finding that fails the check until judged."""
    snapshot = copy.deepcopy(clean)
    short_statements_of_the_answer("Troubled means status 'D'.")(snapshot)
    (finding,) = [f for f in lint.lint_task(snapshot) if f.rule == "resolution_leak"]
    assert finding.fingerprint == "resolution_leak@blockers[0].resolution#blocked_spec.question:D"
    waivers = {finding.fingerprint: "The question defines the term on purpose."}

    def check(snapshot):
        return next(r for r in check_spec(snapshot, waivers) if r.name == "no_resolution_in_spec")

    assert check(snapshot).outcome == "passed"
    copy_a_resolution_sentence_into_business_info(snapshot)
    later = check(snapshot)
    assert later.outcome == "failed"
    assert later.details["fingerprints"] == [
        "resolution_leak@blockers[1].resolution#business_info[1]:whole"
    ]
    assert [w["fingerprint"] for w in later.details["waived"]] == [finding.fingerprint]
    snapshot["environment"]["business_info"] = ["Troubled loans: status D."]
    assert check(snapshot).details["fingerprints"] == [
        "resolution_leak@blockers[0].resolution#business_info[1]:D"
    ]


def test_a_waiver_saved_before_leaks_named_their_place_no_longer_covers_them(clean):
    """A waiver stored as ``rule@field`` covered any later copy; it is not matched any more,
    and the check says why the leak is back."""
    snapshot = copy.deepcopy(clean)
    short_statements_of_the_answer("Troubled means status 'D'.")(snapshot)
    old = {"resolution_leak@blockers[0].resolution": "Reviewed with the lead."}
    result = next(r for r in check_spec(snapshot, old) if r.name == "no_resolution_in_spec")
    assert result.outcome == "failed"
    assert "An earlier waiver of blockers[0].resolution covered any place" in result.message


def test_a_name_of_the_repository_is_not_a_leak_in_the_structural_check(settings, tmp_path):
    """The structural check reads the repository's names at the base commit (git grep on the
    task's mirror), as the workspace's lint does: a name the agent finds in the code is not
    the answer given away, while the same sentence without the repository is."""
    project = seed_demo(settings, tmp_path)
    task = Task.objects.get(project=project, domain="swe")
    snapshot = task_snapshot(task)
    snapshot["blockers"] = [
        {
            "id": f"gap_{n}",
            "type": "missing parameters",
            "subtype": "",
            "description": f"It is unclear which helper converts amounts, case {n}.",
            "resolution": f"Convert every amount with to_decimal first (case {n}).",
            "trigger_questions": ["Which helper converts amounts?", "How?", "Which one?"],
        }
        for n in range(3)
    ]
    snapshot["blocked_spec"]["requirements"] += "\n- Amounts are converted with to_decimal.\n"
    assert "to_decimal" in lint.resolution_names(snapshot)
    bare = {f.detail for f in lint.lint_task(snapshot) if f.rule == "resolution_leak"}
    assert bare == {"blocked_spec.requirements:to_decimal"}
    with tempfile.TemporaryDirectory() as tmp:
        results = run_group("spec", task, snapshot, Path(tmp))
    assert {r.name: r.outcome for r in results}["no_resolution_in_spec"] == "passed"
