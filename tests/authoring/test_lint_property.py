"""Issue 45, item 0: lint never raises on any text, and never stalls on it either.

A property test over what an author can put in a draft: the descriptions, resolutions and
trigger questions of every release task in ``../shared`` (hilbench and hilbench-calibration),
spliced with hostile fragments — quotes and unbalanced quotes, backslashes, NUL, SQL,
right-to-left marks, dates that are not dates, runs of one character tens of thousands long —
and values that are not text at all, in every field of a release task's own draft (its other
fields kept, so the rules that compare a blocker with its task run on real neighbours).

The time bound is part of "never raises": lint runs on every keystroke pause, and a pasted
run of 20,000 digits made ``resolution_off_gold``'s scaled-number pattern try every position
of the run (a minute of one worker; now under a second).
"""

from __future__ import annotations

import copy
import time
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from authoring.lint import lint_task

from ..conftest import SHARED
from .test_lint import _release_draft

COLLECTIONS = ("hilbench", "hilbench-calibration")

HOSTILE_FRAGMENTS = [
    "'", '"', "`", "\\", "\\'", "\x00", "''", "' '", '""', "```", "(", ")", "[", "]", "{", "}",
    "--", "/*", "*/", ";", "DROP TABLE customers; --", "SELECT * FROM t WHERE a = 'x''y'",
    "first || ' ' || last", "\u202e", "\u200f", "\U0001f600", "é", "\n", "\r\n", "\t",
    "1996-13-45", "January 32, 2020", "1e309", "9" * 400, "_" * 50, "A1" * 30, "%s", "{0}",
    "$2a$", "not '7bit'", "Counterexample:", "e.g.", "::", "a.b.c.d", "CamelCaseName",
    "snake_case_name", "'unbalanced", 'also "unbalanced', "1,500 million", "‘curly’", "“dq”",
]  # fmt: skip


@cache
def _release_drafts() -> tuple[dict, ...]:
    """Every release task in ../shared as a draft (read once: the property runs many times)."""
    drafts = []
    for collection in COLLECTIONS:
        root = SHARED / "examples" / collection
        for registry in sorted(root.glob("*/*/shared/ask-human-data/blocker_registry.json")):
            drafts.append(_release_draft(registry.parents[2]))
    return tuple(drafts)


def _corpus() -> list[str]:
    texts: list[str] = []
    for draft in _release_drafts():
        for blocker in draft["blockers"]:
            texts += [str(blocker.get("description", "")), str(blocker.get("resolution", ""))]
            texts += [str(q) for q in blocker.get("trigger_questions", [])]
        texts += [str(v) for v in draft["blocked_spec"].values()]
    return texts or ["Which customers placed an order?"]


def _text():
    corpus = st.sampled_from(_corpus())
    fragment = st.sampled_from(HOSTILE_FRAGMENTS)
    spliced = st.lists(st.one_of(corpus, fragment, st.text(max_size=40)), min_size=1, max_size=8)
    joined = st.builds(lambda parts, sep: sep.join(parts), spliced, st.sampled_from(["", " "]))
    return st.one_of(corpus, joined, st.text(max_size=300))


def _value():
    not_text = st.sampled_from([None, 0, 2.5, True, [], {}, ["x"], {"a": 1}])
    return st.one_of(_text(), _text(), _text(), not_text)


def _mutated(draft: dict, data) -> dict:
    draft = copy.deepcopy(draft)
    for blocker in draft["blockers"]:
        for key in ("description", "resolution", "id", "type"):
            if data.draw(st.booleans()):
                blocker[key] = data.draw(_value())
        if data.draw(st.booleans()):
            blocker["trigger_questions"] = data.draw(st.lists(_value(), max_size=4))
    for key in list(draft["blocked_spec"]):
        if data.draw(st.booleans()):
            draft["blocked_spec"][key] = data.draw(_value())
    environment = draft.get("environment")
    if environment is not None and data.draw(st.booleans()):
        environment["gold_sql"] = data.draw(_value())
    if environment is not None and data.draw(st.booleans()):
        environment["business_info"] = data.draw(st.lists(_value(), max_size=3))
    return draft


@pytest.mark.slow
@pytest.mark.shared_data
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_lint_never_raises_on_release_tasks_with_hostile_text(data):
    drafts = _release_drafts()
    if not drafts:
        pytest.skip(f"no release tasks under {SHARED / 'examples'}")
    draft = _mutated(data.draw(st.sampled_from(drafts)), data)
    schema = data.draw(
        st.one_of(
            st.none(),
            st.dictionaries(_text().map(str.lower), st.sets(_text().map(str.lower), max_size=3),
                            max_size=3),
        )
    )  # fmt: skip
    names = data.draw(st.one_of(st.none(), st.lists(_text(), max_size=4)))
    findings = lint_task(draft, schema=schema, repository_names=names)
    assert all(f.rule and isinstance(f.message, str) for f in findings)


@pytest.mark.parametrize(
    "unit",
    ["1", "1.", "1,", "a", "A1", "a_", "'", "'a' ", '" ', "\\'", "\x00", "(", "1 thousand "],
)
def test_lint_of_a_huge_pasted_run_is_quick_and_does_not_raise(unit):
    """A resolution, question and description of 30,000 characters: lint answers within a
    few seconds on a loaded machine (a run of digits took a minute before the fix)."""
    text = (unit * 30_000)[:30_000]
    draft = {
        "domain": "sql",
        "blocked_spec": {"question": "List the full names of the loyal customers."},
        "environment": {
            "business_info": ["Loyal customers placed orders in the review year."],
            "gold_sql": "SELECT first || ' ' || last FROM customers WHERE spend > 1500",
        },
        "blockers": [
            {
                "id": "spend_threshold",
                "type": "question",
                "description": text,
                "resolution": text,
                "trigger_questions": [text, "What spend makes a customer loyal?"],
            }
        ],
    }
    start = time.perf_counter()
    lint_task(draft)
    assert time.perf_counter() - start < 10
