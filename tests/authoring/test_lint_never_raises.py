"""Issue 45, item 0: lint never raises, whatever the text. A resolution holding a quoted
space (``first || ' ' || last``, ordinary SQL, in two of the release's own tasks) made the
literal finder raise IndexError, so the task's workspace answered 500 and every export that
held it failed."""

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from authoring.lint import lint_task

from ..conftest import shared_path
from .test_lint import _release_draft


def _sql_draft(resolution: str, question: str = "Which customers placed an order?") -> dict:
    return {
        "domain": "sql",
        "blocked_spec": {"question": "List the full names of the loyal customers."},
        "environment": {
            "business_info": ["Loyal customers placed orders in the review year."],
            "gold_sql": "SELECT first || ' ' || last FROM customers",
        },
        "blockers": [
            {
                "id": "full_name_format",
                "type": "question",
                "description": "The question does not say how a full name is written.",
                "resolution": resolution,
                "trigger_questions": [question, "How should the full name be formatted?"],
            }
        ],
    }


@pytest.mark.parametrize(
    "resolution",
    [
        "Concatenate them: first || ' ' || last.",
        "Join with \" \" between the names, or '' when there is none.",
        "Use ' ', not '  '.",
        "''",
        "' '",
    ],
)
def test_a_quoted_space_or_empty_quote_in_a_resolution_is_linted(resolution):
    findings = lint_task(_sql_draft(resolution))
    assert all(f.rule for f in findings)


# Text a paste or a hostile author may send: quotes, backticks, brackets, control characters,
# right-to-left marks, surrogates escaped, very long runs.
HOSTILE = st.text(
    alphabet=st.sampled_from(
        list(string.printable) + ["'", '"', "`", "‘", "’", "“", "”", "\u200f", "\x00", "é", "—"]
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resolution=HOSTILE, question=HOSTILE, description=HOSTILE)
def test_lint_never_raises_on_generated_text(resolution, question, description):
    draft = _sql_draft(resolution, question)
    draft["blockers"][0]["description"] = description
    lint_task(draft)
    swe = {
        "domain": "swe",
        "blocked_spec": {"problem_statement": description, "requirements": question},
        "blockers": draft["blockers"],
    }
    lint_task(swe)


@pytest.mark.shared_data
@pytest.mark.parametrize("collection", ["hilbench", "hilbench-calibration"])
def test_every_release_task_in_shared_lints_without_raising(collection):
    root = shared_path("examples", collection)
    folders = sorted(p.parents[2] for p in root.glob("*/*/shared/ask-human-data/*.json"))
    assert folders, f"no release tasks under {root}"
    for folder in folders:
        lint_task(_release_draft(folder))
