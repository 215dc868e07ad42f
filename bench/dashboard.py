"""Seed 5,000 tasks walked through the review pipeline and time the lead dashboard.

    .venv/bin/python bench/dashboard.py [--tasks 5000] [--runs 30] [--show-queries]

Runs on its own database: a fresh SQLite file under var/bench (default), or the PostgreSQL
database named by DATABASE_URL (its tables are emptied first, so never point it at real
data). Every task takes a random walk through the default six-layer pipeline — submits,
approvals, change requests, rejections, exports — written as status_changed events and
decisions with their times, plus live assignments for part of the tasks in review. Prints
p50 / p95 server time (in-process test client, no network) and the SQL queries per request.
"""

import argparse
import random
import statistics
import sys
import time
from datetime import timedelta

from _setup import configure, fresh_database  # noqa: E402 - sibling module

configure("dashboard.sqlite3")

REJECT_REASONS = [
    "Blockers are guessable or inferable from the environment",
    "Resolution is not exact",
    "Duplicate of another task",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--show-queries", action="store_true")
    args = parser.parse_args()

    fresh_database()
    lead, project = seed(args.tasks)
    measure(lead, project, args.runs, show_queries=args.show_queries)


def _walk(rng, layer_count: int) -> list[tuple[str, str, str, int | None, int | None]]:
    """A task's history as (action, source, target, source_layer, target_layer) steps."""
    from hilbench_annotate import workflow

    steps, state, layer = [], workflow.DRAFT, None
    if rng.random() < 0.08:
        return steps  # still a draft
    for _ in range(4 * layer_count):
        if state in (workflow.DRAFT, workflow.CHANGES_REQUESTED):
            if state == workflow.CHANGES_REQUESTED and rng.random() < 0.25:
                break  # the author is still on it
            action = "submit"
        elif state == workflow.IN_REVIEW:
            action = rng.choices([None, "approve", "request_changes", "reject"], [6, 80, 10, 4])[0]
        elif state == workflow.APPROVED:
            action = "export" if rng.random() < 0.4 else None
        else:
            action = None
        if action is None:
            break
        target, target_layer = workflow.next_state(state, action), None
        if action == "submit":
            target_layer = workflow.submit_layer(layer)
        elif action == "approve":
            target, target_layer = workflow.approve_target(layer, layer_count)
        elif action == "request_changes":
            target_layer = layer
        steps.append((action, state, target, layer, target_layer))
        state, layer = target, target_layer
    return steps


def seed(n_tasks: int):
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from hilbench_annotate import workflow
    from hilbench_annotate.models import Membership, Project, Revision, Task, TaskEvent
    from review.models import ReviewAssignment, ReviewDecision
    from review.services import pipeline_ensure

    started = time.perf_counter()
    # Decisions protect their revisions and reviewers: they go first on a reused database.
    ReviewDecision.objects.all().delete()
    Task.objects.all().delete()
    Project.objects.filter(slug="bench-dashboard").delete()
    User = get_user_model()
    project = Project.objects.create(name="Bench dashboard", slug="bench-dashboard")
    layers = pipeline_ensure(project)
    people: dict[str, list] = {}
    for role, count in (("author", 20), ("reviewer", 6), ("auditor", 6), ("lead", 3)):
        for i in range(count):
            user, _ = User.objects.get_or_create(username=f"bench-{role}-{i}")
            Membership.objects.create(project=project, user=user, role=role)
            people.setdefault(role, []).append(user)
    lead = people["lead"][0]
    rng = random.Random(7)
    now = timezone.now()
    with transaction.atomic():
        walks = [_walk(rng, len(layers)) for _ in range(n_tasks)]
        tasks = []
        for i, steps in enumerate(walks):
            state, layer = (steps[-1][2], steps[-1][4]) if steps else (workflow.DRAFT, None)
            keeps_layer = state in (workflow.IN_REVIEW, workflow.CHANGES_REQUESTED)
            tasks.append(
                Task(
                    project=project,
                    domain="sql" if i % 4 else "swe",
                    source="bird",
                    source_id=f"bench-dashboard/{i}",
                    title=f"Bench task {i}",
                    status=state,
                    review_layer=layer if keeps_layer else None,
                    author=rng.choice(people["author"]),
                )
            )
        tasks = Task.objects.bulk_create(tasks)
        revisions = Revision.objects.bulk_create(
            Revision(task=task, number=1, snapshot={}) for task in tasks
        )
        events, decisions, stamps, decision_stamps = [], [], [], []
        for task, revision, steps in zip(tasks, revisions, walks, strict=True):
            at = now - timedelta(days=rng.uniform(14, 120))
            for action, source, target, source_layer, target_layer in steps:
                at = min(now, at + timedelta(hours=rng.expovariate(1 / 10)))
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
                stamps.append(at)
                if action not in workflow.DECISIONS:
                    continue
                spec = layers[source_layer - 1]
                reviewer = task.author if spec.self_check else rng.choice(people[spec.role])
                decisions.append(
                    ReviewDecision(
                        task=task,
                        layer=source_layer,
                        layer_name=spec.name,
                        reviewer=reviewer,
                        revision=revision,
                        outcome=action,
                        reject_reason=rng.choice(REJECT_REASONS) if action == "reject" else "",
                    )
                )
                decision_stamps.append(at)
        # created_at is auto_now_add, so bulk_create stamps "now": put the walked times back.
        events = TaskEvent.objects.bulk_create(events, batch_size=2000)
        for event, at in zip(events, stamps, strict=True):
            event.created_at = at
        TaskEvent.objects.bulk_update(events, ["created_at"], batch_size=2000)
        decisions = ReviewDecision.objects.bulk_create(decisions, batch_size=2000)
        for decision, at in zip(decisions, decision_stamps, strict=True):
            decision.created_at = at
        ReviewDecision.objects.bulk_update(decisions, ["created_at"], batch_size=2000)
        assignments = []
        for task in tasks:
            if task.status != workflow.IN_REVIEW or rng.random() < 0.5:
                continue
            spec = layers[task.review_layer - 1]
            if spec.self_check:
                continue
            assignments.append(
                ReviewAssignment(
                    task=task,
                    layer=spec.position,
                    reviewer=rng.choice(people[spec.role]),
                    expires_at=now + timedelta(minutes=rng.choice([-30, 30, 60])),
                )
            )
        ReviewAssignment.objects.bulk_create(assignments)
    counts = dict.fromkeys(workflow.STATES, 0)
    for task in tasks:
        counts[task.status] += 1
    print(
        f"seeded {len(tasks)} tasks ({', '.join(f'{k} {v}' for k, v in counts.items())}), "
        f"{len(events)} status events, {len(decisions)} decisions, {len(assignments)} "
        f"assignments in {time.perf_counter() - started:.1f} s"
    )
    return lead, project


def measure(lead, project, runs: int, *, show_queries: bool) -> None:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import override_settings
    from django.urls import path

    import hilbench_annotate.urls as site_urls
    from review.dashboard import dashboard

    # The dashboard's URL may not be wired yet: serve it from a urlconf of our own.
    url = f"/bench/projects/{project.pk}/dashboard/"
    urlconf = type(sys)("bench_dashboard_urls")
    urlconf.urlpatterns = [
        *site_urls.urlpatterns,
        path("bench/projects/<int:project_id>/dashboard/", dashboard, name="bench-dashboard"),
    ]
    sys.modules["bench_dashboard_urls"] = urlconf

    client = Client()
    client.force_login(lead)
    cases = {
        "dashboard (HTML)": url,
        "dashboard CSV (time)": url + "?format=csv&table=time",
        "dashboard CSV (agreement)": url + "?format=csv&table=agreement",
    }
    print(f"\n{'endpoint':30} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    with override_settings(DEBUG=True, ROOT_URLCONF="bench_dashboard_urls"):
        for name, target in cases.items():
            client.get(target)  # warm up
            times, queries = [], []
            for _ in range(runs):
                reset_queries()
                started = time.perf_counter()
                response = client.get(target)
                times.append((time.perf_counter() - started) * 1000)
                queries.append(len(connection.queries))
                assert response.status_code == 200, (name, response.status_code)
            times.sort()
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
            print(f"{name:30} {statistics.median(times):8.1f} {p95:8.1f} {max(queries):8d}")
            if show_queries and name == "dashboard (HTML)":
                for query in connection.queries:
                    print(f"    {query['time']:>6}s  {query['sql'][:150]}")


if __name__ == "__main__":
    main()
