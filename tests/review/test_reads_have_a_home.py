"""Every read the review pages and the review API render is a selector (``review/selectors.py``)
or a queryset method: their modules make no ORM call of their own, so a read the page and the
API share is written once (the queue, a task's decisions and comments, notifications)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
MODULES = ("review/views.py", "review/views_withdraw.py", "review/api.py")
# Reverse relations of a task whose managers would read past the selectors.
TASK_RELATIONS = {"events", "revisions", "comments", "decisions", "assignments", "blockers"}


def orm_calls(source: str) -> list[int]:
    """Lines reading through a model manager (``X.objects``, ``X.all_objects``) or a task's
    reverse relation followed by a query (``task.events.filter(…)``)."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("objects", "all_objects"):
            lines.add(node.lineno)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in TASK_RELATIONS
            and node.attr in ("all", "filter", "exclude", "select_related", "first", "count")
        ):
            lines.add(node.lineno)
    return sorted(lines)


@pytest.mark.parametrize(
    "source,caught",
    [
        ("Notification.objects.filter(user=user)", True),
        ("ReviewDecision.all_objects.filter(task=task)", True),
        ("task.comments.select_related('author')", True),
        ("task.blockers.all()", True),
        ("selectors.task_decisions(task=task)", False),
        ("ReviewAssignment.Status.ACTIVE", False),
        ("typed['comments'].get(key)", False),
    ],
)
def test_the_orm_rule_tells_reads_from_selector_calls(source, caught):
    assert bool(orm_calls(source)) is caught


def test_review_pages_and_api_read_through_selectors_only():
    found = {
        module: lines
        for module in MODULES
        if (lines := orm_calls((ROOT / module).read_text(encoding="utf-8")))
    }
    assert not found, found
