"""The lead dashboard: hand-computed figures, access, CSV, charts and a flat query count."""

import csv
import io
import random
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import path, reverse
from django.utils import timezone

from hilbench_annotate import workflow
from hilbench_annotate.models import Revision, Task, TaskEvent
from hilbench_annotate.toolkit.charts import bar_chart, column_chart
from hilbench_annotate.urls import urlpatterns as site_urlpatterns
from review.dashboard import dashboard, iso_week, percentile
from review.models import ReviewAssignment, ReviewDecision, ReviewLayer

from ..factories import TaskFactory, UserFactory

# Test-only urlconf: the site's URLs (base.html links to them) plus the dashboard.
urlpatterns = [
    *site_urlpatterns,
    path("projects/<int:project_id>/dashboard/", dashboard, name="review-dashboard"),
]

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.review.test_dashboard")]

# The whole page, whatever the amount of data: session, user, project, roles, layers and
# one aggregate query per figure.
MAX_QUERIES = 15

LAYERS = ["Author self-check", "Peer review", "Sign-off & export"]


def _url(project, **query):
    url = reverse("review-dashboard", args=[project.pk])
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return url


def _pipeline(project, names=LAYERS):
    ReviewLayer.objects.filter(project=project).delete()  # the default one, made with it
    for position, name in enumerate(names, start=1):
        ReviewLayer.objects.create(
            project=project,
            position=position,
            name=name,
            role="author" if position < 3 else "auditor",
            self_check=position == 1,
        )


def _csv(client, project, table):
    response = client.get(_url(project, format="csv", table=table))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


# --- a small, hand-computed history ---------------------------------------------------------


def _walk(task, base, steps, by_layer, *, start=(workflow.DRAFT, None)):
    """Replay ``steps`` [(hours after base, action[, reject reason])] on a 3-layer pipeline.

    Writes the status_changed events and decisions with explicit times, then the task's
    final state, the way ``review.services`` would have left them.
    """
    revision = Revision.objects.create(task=task, number=1, snapshot={})
    state, layer = start
    for hours, action, *reason in steps:
        at = base + timedelta(hours=hours)
        target = workflow.next_state(state, action)
        target_layer = None
        if action == "submit":
            target_layer = workflow.submit_layer(
                layer if state == workflow.CHANGES_REQUESTED else None
            )
        elif action == "approve":
            target, target_layer = workflow.approve_target(layer, len(LAYERS))
        elif action == "request_changes":
            target_layer = layer
        event = TaskEvent.objects.create(
            project=task.project,
            task=task,
            kind="status_changed",
            data={
                "action": action,
                "source": state,
                "target": target,
                "source_layer": layer,
                "target_layer": target_layer,
            },
        )
        TaskEvent.objects.filter(pk=event.pk).update(created_at=at)
        if action in workflow.DECISIONS:
            decision = ReviewDecision.objects.create(
                task=task,
                layer=layer,
                layer_name=LAYERS[layer - 1],
                reviewer=by_layer[layer],
                revision=revision,
                outcome=action,
                reject_reason=reason[0] if reason else "",
            )
            ReviewDecision.objects.filter(pk=decision.pk).update(created_at=at)
        state, layer = target, target_layer
    keeps_layer = state in (workflow.IN_REVIEW, workflow.CHANGES_REQUESTED)
    Task.objects.filter(pk=task.pk).update(
        status=state, review_layer=layer if keeps_layer else None
    )


@pytest.fixture
def history(project, author, reviewer, auditor, lead):
    """Nine tasks. Finished stays in hours per layer (T3's second stay at 2 is still open):

    layer 1: T1 2, T2 4, T3 1, T4 1, T6 3, T8 1, T9 2  → median 2, p90 3.4
    layer 2: T1 10, T2 6, T3 2, T4 4, T6 6, T8 1, T9 3 → median 4, p90 7.6
    layer 3: T1 3, T4 8, T6 1                         → median 3, p90 7.0
    """
    _pipeline(project)
    now = timezone.now()
    base = now - timedelta(days=3)
    by_layer = {1: author, 2: reviewer, 3: auditor}
    tasks = {f"T{i}": TaskFactory(project=project, author=author) for i in range(1, 10)}
    walks = {
        "T1": [(0, "submit"), (2, "approve"), (12, "approve"), (15, "approve")],
        "T2": [(0, "submit"), (4, "approve"), (10, "request_changes")],
        "T3": [(0, "submit"), (1, "approve"), (3, "request_changes"), (5, "submit")],
        "T4": [
            (0, "submit"),
            (1, "approve"),
            (5, "approve"),
            (13, "reject", "Resolution is not exact"),
        ],
        "T5": [],
        "T6": [(0, "submit"), (3, "approve"), (9, "approve"), (10, "approve"), (20, "export")],
        "T8": [(0, "submit"), (1, "approve"), (2, "reject", "Resolution is not exact")],
        "T9": [(0, "submit"), (2, "approve"), (5, "reject", "Duplicate of another task")],
    }
    for name, steps in walks.items():
        _walk(tasks[name], base, steps, by_layer)
    # An approval long ago: outside the 12 weeks and the 30 days, and not a stay.
    _walk(
        tasks["T7"],
        now - timedelta(weeks=20),
        [(0, "approve")],
        by_layer,
        start=(workflow.IN_REVIEW, 3),
    )
    ReviewAssignment.objects.create(
        task=tasks["T3"], layer=2, reviewer=reviewer, expires_at=now + timedelta(hours=1)
    )
    ReviewAssignment.objects.create(
        task=tasks["T1"],
        layer=2,
        reviewer=reviewer,
        status=ReviewAssignment.Status.DONE,
        expires_at=now + timedelta(hours=1),
    )
    # Still marked active but its lock ran out: not workload any more.
    ReviewAssignment.objects.create(
        task=tasks["T6"], layer=3, reviewer=auditor, expires_at=now - timedelta(minutes=5)
    )
    return {"base": base, "tasks": tasks}


def test_percentile_interpolates_between_ranks():
    assert percentile([], 0.9) is None
    assert percentile([(5.0, 1)], 0.9) == 5.0
    assert percentile([(4, 1), (1, 3), (2, 2), (3, 1)], 0.9) == pytest.approx(3.4)
    assert percentile([(4, 1), (1, 3), (2, 2), (3, 1)], 0.5) == 2
    assert percentile([(1, 1), (2, 1)], 0.5) == pytest.approx(1.5)
    assert percentile([(8, 1), (1, 1), (3, 1), (7, 0)], 0.9) == pytest.approx(7.0)


def test_lead_sees_the_dashboard_with_the_seeded_figures(client, project, lead, history):
    client.force_login(lead)

    response = client.get(_url(project))

    assert response.status_code == 200
    body = response.content.decode()
    board = response.context["board"]
    assert {state: n for state, _, n in board.states.rows} == {
        "draft": 1,
        "in_review": 1,
        "changes_requested": 1,
        "approved": 2,
        "rejected": 3,
        "exported": 1,
    }
    assert board.layers.rows == [
        (1, "Author self-check", 0, 0),
        (2, "Peer review", 1, 1),
        (3, "Sign-off & export", 0, 0),
    ]
    assert board.time.rows == [
        (1, "Author self-check", 7, 2, 3.4),
        (2, "Peer review", 7, 4, 7.6),
        (3, "Sign-off & export", 3, 3, 7.0),
    ]
    assert "Lead dashboard" in body and "Sign-off &amp; export" in body
    assert "Sign-off & export" not in body
    assert "Resolution is not exact" in body and "Duplicate of another task" in body


def test_non_lead_member_is_refused_with_403(client, project, reviewer, history):
    client.force_login(reviewer)

    response = client.get(_url(project))

    assert response.status_code == 403


def test_outsider_gets_404_and_anonymous_is_sent_to_log_in(client, project, outsider):
    client.force_login(outsider)
    assert client.get(_url(project)).status_code == 404
    assert client.get(_url(project, format="csv", table="states")).status_code == 404

    client.logout()
    response = client.get(_url(project))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_csv_tables_have_a_header_and_the_expected_rows(client, project, lead, history):
    client.force_login(lead)

    states = _csv(client, project, "states")
    assert [(r["state"], r["tasks"]) for r in states] == [
        ("draft", "1"),
        ("in_review", "1"),
        ("changes_requested", "1"),
        ("approved", "2"),
        ("rejected", "3"),
        ("exported", "1"),
    ]
    layers = _csv(client, project, "layers")
    assert [(r["layer"], r["in_review"], r["changes_requested"]) for r in layers] == [
        ("1", "0", "0"),
        ("2", "1", "1"),
        ("3", "0", "0"),
    ]
    time = _csv(client, project, "time")
    assert [(r["layer"], r["stays"], r["median_hours"], r["p90_hours"]) for r in time] == [
        ("1", "7", "2.0", "3.4"),
        ("2", "7", "4.0", "7.6"),
        ("3", "3", "3.0", "7.0"),
    ]
    throughput = _csv(client, project, "throughput")
    assert len(throughput) == 12
    base = history["base"]
    expected = Counter(iso_week((base + timedelta(hours=h)).date()) for h in (15, 10))
    assert {r["week"]: int(r["approved"]) for r in throughput if r["approved"] != "0"} == expected
    assert throughput[-1]["week"] == iso_week(timezone.now().date())

    reasons = _csv(client, project, "reasons")
    assert [(r["kind"], r["label"], r["count"]) for r in reasons] == [
        ("rejection", "Resolution is not exact", "2"),
        ("rejection", "Duplicate of another task", "1"),
        ("change_request", "1. Author self-check", "0"),
        ("change_request", "2. Peer review", "2"),
        ("change_request", "3. Sign-off & export", "0"),
    ]
    workload = _csv(client, project, "workload")
    assert [
        (r["reviewer"], r["active_assignments"], r["decisions_30d"], r["decisions_total"])
        for r in workload
    ] == [
        ("reviewer", "1", "7", "7"),
        ("auditor", "0", "3", "4"),
        ("author", "0", "7", "7"),
        ("lead", "0", "0", "0"),
    ]
    # author approved 7 at layer 1; T2, T3, T8, T9 (layer 2) and T4 (layer 3) came back.
    # reviewer approved T1, T4, T6 at layer 2; T4 was rejected at layer 3.
    agreement = _csv(client, project, "agreement")
    assert [
        (r["reviewer"], r["layer"], r["approved"], r["not_sent_back"], r["agreement_pct"])
        for r in agreement
    ] == [
        ("author", "1", "7", "2", "28.6"),
        ("reviewer", "2", "3", "2", "66.7"),
    ]


def test_unknown_csv_table_is_404(client, project, lead, history):
    client.force_login(lead)
    assert client.get(_url(project, format="csv", table="secrets")).status_code == 404


def test_charts_are_accessible_inline_svg_with_labels(client, project, lead, history):
    client.force_login(lead)

    body = client.get(_url(project)).content.decode()

    assert body.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img"') == 4
    assert 'role="img"' in body and 'aria-label="Tasks per state"' in body
    assert "<title>In review: 1 tasks</title>" in body
    assert "<title>2. Peer review: 4 h</title>" in body
    assert "<title>3. Sign-off &amp; export: 3 h</title>" in body
    assert "Tasks approved per week, last 12 weeks" in body


def test_chart_functions_escape_labels_and_print_values():
    svg = bar_chart([("<b>x</b>", 3), ("ok", 1.25)], title='A "quoted" title', unit="h")
    assert str(svg).startswith("<svg") and svg.count("<g class=") == 2
    assert "<b>" not in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
    assert 'aria-label="A &quot;quoted&quot; title"' in svg
    assert ">3</text>" in svg and ">1.2</text>" in svg
    columns = column_chart([("W01", 0), ("W02", 5)], title="Weekly", unit="tasks")
    assert "<title>W02: 5 tasks</title>" in columns and columns.count("<rect") == 2
    assert "No data yet" in bar_chart([], title="Empty")


def test_a_lead_of_another_project_cannot_see_this_one(client, project, history):
    from ..factories import MembershipFactory, ProjectFactory

    elsewhere = UserFactory(username="lead-elsewhere")
    MembershipFactory(project=ProjectFactory(), user=elsewhere, role="lead")
    client.force_login(elsewhere)
    assert client.get(_url(project)).status_code == 404


# --- query bound --------------------------------------------------------------------------


def _create_with_times(model, objects, times):
    """bulk_create, then put back the planned times auto_now_add replaced with "now"."""
    objects = model.objects.bulk_create(objects)
    for obj, at in zip(objects, times, strict=True):
        obj.created_at = at
    # Batches keep each UPDATE … CASE small enough for PostgreSQL to plan it quickly.
    model.objects.bulk_update(objects, ["created_at"], batch_size=1000)


def _bulk_seed(project, people, *, count, offset, rng):
    """``count`` tasks walked at random through a 3-layer pipeline, written in bulk."""
    now = timezone.now()
    author = people["author"]
    plans = []
    for i in range(count):
        steps, state, layer = [], workflow.DRAFT, None
        if rng.random() > 0.1:
            at = now - timedelta(days=rng.uniform(30, 120))
            for _ in range(12):
                if state == workflow.DRAFT or state == workflow.CHANGES_REQUESTED:
                    action = "submit"
                elif state == workflow.APPROVED:
                    action = "export" if rng.random() < 0.5 else None
                elif state == workflow.IN_REVIEW:
                    action = rng.choices(
                        [None, "approve", "request_changes", "reject"], [10, 70, 13, 7]
                    )[0]
                else:
                    action = None
                if action is None:
                    break
                target = workflow.next_state(state, action)
                target_layer = None
                if action == "submit":
                    target_layer = workflow.submit_layer(layer)
                elif action == "approve":
                    target, target_layer = workflow.approve_target(layer, len(LAYERS))
                elif action == "request_changes":
                    target_layer = layer
                at += timedelta(hours=rng.uniform(0.5, 36))
                steps.append((at, action, state, target, layer, target_layer))
                state, layer = target, target_layer
        keeps_layer = state in (workflow.IN_REVIEW, workflow.CHANGES_REQUESTED)
        plans.append((offset + i, steps, state, layer if keeps_layer else None))
    tasks = Task.objects.bulk_create(
        Task(
            project=project,
            domain="sql",
            source="bird",
            source_id=f"bulk/{n}",
            title=f"Bulk task {n}",
            status=state,
            review_layer=layer,
            author=author,
        )
        for n, _, state, layer in plans
    )
    revisions = Revision.objects.bulk_create(
        Revision(task=task, number=1, snapshot={}) for task in tasks
    )
    events, decisions, event_times, decision_times = [], [], [], []
    for task, revision, (_, steps, _, _) in zip(tasks, revisions, plans, strict=True):
        for at, action, source, target, source_layer, target_layer in steps:
            events.append(
                TaskEvent(
                    project=project,
                    task=task,
                    kind="status_changed",
                    data={
                        "action": action,
                        "source": source,
                        "target": target,
                        "source_layer": source_layer,
                        "target_layer": target_layer,
                    },
                )
            )
            event_times.append(at)
            if action in workflow.DECISIONS:
                reviewer = (
                    author
                    if source_layer == 1
                    else people[("reviewer", "auditor")[source_layer % 2]]
                )
                decisions.append(
                    ReviewDecision(
                        task=task,
                        layer=source_layer,
                        layer_name=LAYERS[source_layer - 1],
                        reviewer=reviewer,
                        revision=revision,
                        outcome=action,
                        reject_reason=rng.choice(["Duplicate of another task", "Too easy"])
                        if action == "reject"
                        else "",
                    )
                )
                decision_times.append(at)
    _create_with_times(TaskEvent, events, event_times)
    _create_with_times(ReviewDecision, decisions, decision_times)
    ReviewAssignment.objects.bulk_create(
        ReviewAssignment(
            task=task,
            layer=task.review_layer,
            reviewer=people["reviewer"],
            expires_at=now + timedelta(hours=1),
        )
        for task in tasks
        if task.status == workflow.IN_REVIEW and task.pk % 2
    )
    return tasks


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.slow
def test_query_count_is_bounded_and_does_not_grow_with_the_data(
    client, project, author, reviewer, auditor, lead, django_assert_max_num_queries
):
    _pipeline(project)
    people = {"author": author, "reviewer": reviewer, "auditor": auditor}
    rng = random.Random(11)
    client.force_login(lead)
    _bulk_seed(project, people, count=500, offset=0, rng=rng)
    assert TaskEvent.objects.filter(project=project).count() > 500
    small = _queries(client, _url(project))
    small_csv = {t: _queries(client, _url(project, format="csv", table=t)) for t in ("time",)}

    _bulk_seed(project, people, count=4500, offset=500, rng=rng)
    assert Task.objects.filter(project=project).count() == 5000
    statuses = set(Task.objects.filter(project=project).values_list("status", flat=True))
    assert statuses == set(workflow.STATES)

    with django_assert_max_num_queries(MAX_QUERIES) as big:
        response = client.get(_url(project))
    assert response.status_code == 200
    assert len(big.captured_queries) == small
    assert {t: _queries(client, _url(project, format="csv", table=t)) for t in ("time",)} == (
        small_csv
    )
    board = response.context["board"]
    assert sum(n for _, _, n in board.states.rows) == 5000
    # Every walked step took between half an hour and 36 hours.
    assert all(stays > 0 and 0.5 <= median <= 36 for _, _, stays, median, _ in board.time.rows)
