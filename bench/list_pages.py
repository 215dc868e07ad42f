"""Seed 10,000 tasks with 40,000 blockers and time the task list, task page and list API.

    .venv/bin/python bench/list_pages.py [--tasks 10000] [--blockers-per-task 4] [--runs 50]

Runs on its own database: a fresh SQLite file under var/bench (default), or the PostgreSQL
database named by DATABASE_URL (its tables are emptied first, so never point it at real
data). Prints p50 / p95 server time (request handled in-process by Django's test client,
no network) and the number of SQL queries per request.
"""

import argparse
import random
import statistics
import time

from _setup import configure, fresh_database  # noqa: E402 - sibling module

configure("db.sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--blockers-per-task", type=int, default=4)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()

    fresh_database()
    user, project = seed(args.tasks, args.blockers_per_task)
    measure(user, project, args.runs)


def seed(n_tasks: int, per_task: int):
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from hilbench_annotate.models import (
        Blocker,
        Membership,
        Project,
        SqlEnvironment,
        SweEnvironment,
        Task,
        TriggerQuestion,
    )

    started = time.perf_counter()
    Task.objects.all().delete()
    Project.objects.filter(slug="bench").delete()
    User = get_user_model()
    user, _ = User.objects.get_or_create(username="bench-author")
    project = Project.objects.create(name="Bench", slug="bench")
    Membership.objects.create(project=project, user=user, role="author")
    rng = random.Random(7)
    dbs = [f"db_{i}" for i in range(40)]
    statuses = ["draft", "in_review", "changes_requested", "approved", "rejected", "exported"]
    with transaction.atomic():
        tasks = Task.objects.bulk_create(
            Task(
                project=project,
                domain="sql" if i % 4 else "swe",
                source="bird",
                source_id=f"bench/{i}",
                title=f"Bench question {i}: how many loans were granted in {1990 + i % 10}?",
                original_spec={"question": f"question {i}", "evidence": ""},
                blocked_spec={"question": f"blocked question {i}", "evidence": ""},
                status=rng.choice(statuses),
                author=user,
                blocker_count=per_task,
            )
            for i in range(n_tasks)
        )
        SqlEnvironment.objects.bulk_create(
            SqlEnvironment(task=t, db_id=rng.choice(dbs), gold_sql="SELECT 1")
            for t in tasks
            if t.domain == "sql"
        )
        SweEnvironment.objects.bulk_create(
            SweEnvironment(task=t, repo_name="demo/invoicing", base_commit="0" * 40)
            for t in tasks
            if t.domain == "swe"
        )
        blockers = Blocker.objects.bulk_create(
            Blocker(
                task=t,
                key=f"blocker_{j}",
                position=j,
                type="question" if t.domain == "sql" else "missing parameters",
                subtype="timeframe_ambiguity" if t.domain == "sql" else "",
                description=f"Gap {j} of task {t.pk}",
                resolution=f"Resolution {j}",
            )
            for t in tasks
            for j in range(per_task)
        )
        TriggerQuestion.objects.bulk_create(
            TriggerQuestion(blocker=b, position=k, text=f"Question {k} about {b.key}?")
            for b in blockers
            for k in range(3)
        )
    print(
        f"seeded {len(tasks)} tasks, {len(blockers)} blockers, {3 * len(blockers)} trigger "
        f"questions in {time.perf_counter() - started:.1f} s"
    )
    # The search words a save writes (bulk_create went around the services): timed, as a
    # rebuild of a big project's search (manage.py search_text_rebuild) takes as long.
    from hilbench_annotate.services import task_search_refresh

    started = time.perf_counter()
    with transaction.atomic():
        task_search_refresh(task_ids=[t.pk for t in tasks])
    print(f"search words of {len(tasks)} tasks written in {time.perf_counter() - started:.1f} s")
    return user, project


def measure(user, project, runs: int) -> None:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import override_settings

    from hilbench_annotate.models import Task

    client = Client()
    client.force_login(user)
    task_ids = list(Task.objects.filter(project=project).values_list("pk", flat=True))
    rng = random.Random(1)
    # Pages that exist whatever --tasks is (25 rows per HTML page, 50 per API page; about
    # 1 in 8 tasks is a SQL draft).
    html_pages = max(1, len(task_ids) // (8 * 25))
    api_pages = max(1, len(task_ids) // 50)
    cases = {
        "task list (HTML, page 1)": lambda: "/",
        "task list (HTML, filtered + deep page)": lambda: (
            f"/?domain=sql&status=draft&page={rng.randint(min(2, html_pages), min(40, html_pages))}"
        ),
        "task list (HTML, search)": lambda: "/?q=question+12",
        # Words of one task's blocker ("Gap 2 of task 123"): read from the search words,
        # matching one task in the whole project.
        "task list (HTML, search a blocker, rare)": lambda: (
            f"/?q=gap+of+task+{rng.choice(task_ids)}"
        ),
        "task list (HTML, search a resolution, all)": lambda: "/?q=resolution+3",
        "task list API (search a trigger question)": lambda: (
            f"/api/tasks/?q=about+blocker_1%3F+{rng.choice(task_ids)}"
        ),
        "task page (HTML)": lambda: f"/tasks/{rng.choice(task_ids)}/",
        "task list API": lambda: f"/api/tasks/?page={rng.randint(1, min(100, api_pages))}",
        "task detail API": lambda: f"/api/tasks/{rng.choice(task_ids)}/",
    }
    print(f"\n{'endpoint':42} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    with override_settings(DEBUG=True):
        for name, url in cases.items():
            client.get(url())  # warm up
            times, queries = [], []
            for _ in range(runs):
                reset_queries()
                started = time.perf_counter()
                response = client.get(url())
                times.append((time.perf_counter() - started) * 1000)
                queries.append(len(connection.queries))
                assert response.status_code == 200, (name, response.status_code)
            times.sort()
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
            print(f"{name:42} {statistics.median(times):8.1f} {p95:8.1f} {max(queries):8d}")


if __name__ == "__main__":
    main()
