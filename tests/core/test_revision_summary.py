"""A revision's summary: what it changed, in the benchmark's words (pure; no database)."""

import copy

from hilbench_annotate.revision_summary import change_summary

BEFORE = {
    "version": 3,
    "title": "Loans",
    "domain": "sql",
    "blocked_spec": {"question": "Who paid most?", "evidence": ""},
    "environment": {"gold_sql": "SELECT 1", "business_info": ["A sentence."]},
    "blockers": [
        {
            "id": "B1",
            "type": "question",
            "description": "d1",
            "resolution": "r1",
            "trigger_questions": ["q1?", "q2?"],
        },
        {
            "id": "B2",
            "type": "schema",
            "description": "d2",
            "resolution": "r2",
            "trigger_questions": ["q3?"],
        },
    ],
}


def edited(**changes):
    after = copy.deepcopy(BEFORE)
    after["version"] += 1
    for path, value in changes.items():
        *keys, last = path.split("__")
        target = after
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return after


def test_the_first_revision_and_an_unchanged_one_say_nothing():
    assert change_summary(None, BEFORE) == ""
    assert change_summary(BEFORE, edited()) == ""  # only the version moved


def test_edits_additions_and_removals_in_one_sentence():
    after = edited(
        blocked_spec__question="Who paid the most?",
        blockers__1__resolution="r2, sharper",
        blockers__0__trigger_questions=["q1?", "q2?", "q4?"],
    )
    assert change_summary(BEFORE, after) == (
        "Edited the question and blocker B2's resolution; added a trigger question to B1"
    )


def test_blockers_added_removed_reordered_and_fields_named():
    after = edited(
        title="Loans paid",
        environment__gold_sql="SELECT 2",
        blockers__0__description="d1, clearer",
        blockers__0__type="schema",
    )
    new = {"id": "B3", "type": "question", "description": "", "trigger_questions": []}
    after["blockers"] = [after["blockers"][0], new]
    assert change_summary(BEFORE, after) == (
        "Edited the title, the gold SQL and blocker B1's type and description; "
        "added blocker B3; removed blocker B2"
    )
    swapped = edited()
    swapped["blockers"].reverse()
    assert change_summary(BEFORE, swapped) == "Edited the blocker order"


def test_trigger_questions_rewritten_or_removed():
    rewritten = edited(blockers__0__trigger_questions=["q1?", "q2, reworded?"])
    assert change_summary(BEFORE, rewritten) == "Edited blocker B1's trigger questions"
    fewer = edited(blockers__0__trigger_questions=[])
    assert change_summary(BEFORE, fewer) == "Removed 2 trigger questions from B1"


def test_swe_sections_are_named_in_words():
    before = {"domain": "swe", "blocked_spec": {"problem_statement": "a", "interface": "x"}}
    after = {"domain": "swe", "blocked_spec": {"problem_statement": "b", "interface": "y"}}
    assert change_summary(before, after) == "Edited the problem statement and the public interfaces"
