"""What a live assignment is (active and not expired) is written once, as
``ReviewAssignment.objects.live()``, and every read of "who holds this task now" uses it."""

import ast
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from hilbench_annotate import workflow
from review.models import ReviewAssignment

from ..factories import TaskFactory, UserFactory

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = ("hilbench_annotate", "authoring", "review", "validators", "judge", "evaluation", "exchange")
HOME = "review/models.py"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "status,minutes_left,live",
    [
        (ReviewAssignment.Status.ACTIVE, 30, True),
        (ReviewAssignment.Status.ACTIVE, -1, False),  # expired but not yet marked so
        (ReviewAssignment.Status.RELEASED, 30, False),
        (ReviewAssignment.Status.DONE, 30, False),
        (ReviewAssignment.Status.EXPIRED, -30, False),
    ],
)
def test_live_means_active_and_not_expired(project, status, minutes_left, live):
    task = TaskFactory(project=project, status=workflow.IN_REVIEW, review_layer=2)
    assignment = ReviewAssignment.objects.create(
        task=task,
        layer=2,
        reviewer=UserFactory(),
        status=status,
        expires_at=timezone.now() + timedelta(minutes=minutes_left),
    )
    assert (assignment in ReviewAssignment.objects.live()) is live


@pytest.mark.django_db
def test_live_is_read_at_the_moment_given(project):
    task = TaskFactory(project=project, status=workflow.IN_REVIEW, review_layer=2)
    expires = timezone.now() + timedelta(minutes=10)
    ReviewAssignment.objects.create(task=task, layer=2, reviewer=UserFactory(), expires_at=expires)
    assert ReviewAssignment.objects.live(now=expires - timedelta(seconds=1)).count() == 1
    assert ReviewAssignment.objects.live(now=expires).count() == 0
    # A queryset method: it chains after other filters too.
    assert ReviewAssignment.objects.filter(task=task).live().count() == 1


def live_filter_by_hand(source: str) -> list[int]:
    """Lines that test an expiry the way ``live()`` does (``expires_at__gt=…``)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and any(k.arg == "expires_at__gt" for k in node.keywords)
    )


@pytest.mark.parametrize(
    "source,caught",
    [
        ("ReviewAssignment.objects.filter(status=ACTIVE, expires_at__gt=now)", True),
        ("qs.exclude(expires_at__gt=timezone.now())", True),
        ("ReviewAssignment.objects.live().filter(task=task)", False),
        ("ReviewAssignment.objects.live(now=self.now)", False),
        ("ExportJob.objects.filter(expires_at__lt=now)", False),
    ],
)
def test_the_live_rule_finds_expiry_filters(source, caught):
    assert bool(live_filter_by_hand(source)) is caught


def test_the_live_filter_is_written_once():
    by_hand = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            module = path.relative_to(ROOT).as_posix()
            if "migrations" in path.parts or module == HOME:
                continue
            if lines := live_filter_by_hand(path.read_text(encoding="utf-8")):
                by_hand[module] = lines
    assert not by_hand, by_hand
    assert live_filter_by_hand((ROOT / HOME).read_text(encoding="utf-8"))
