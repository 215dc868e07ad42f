"""Seed a project of 100,000 tasks and time every project-wide page and API a lead opens.

    .venv/bin/python bench/project_pages.py [--tasks 100000] [--small 1000] [--runs 5]
        [--blockers-per-task 2] [--download-runs 1]

Runs on its own database: a fresh SQLite file under var/bench (default), or the PostgreSQL
database named by DATABASE_URL (its tables are emptied first, so never point it at real
data). The tasks, blockers and trigger questions are ``bench/list_pages.py``'s seed; on top
a lead and a reviewer, a fixed sample of tasks with a revision, review decisions and live
assignments, held-out judge questions with their labels, and an imported evaluation run — the
same sample at both sizes, so what grows between them is the project's tasks alone.

Every page is requested through Django's test client logged in as the lead (server time in
process, no network): p50 / max over ``--runs`` requests, the SQL queries of one request at
``--tasks`` and at ``--small`` tasks ("small"). A download streams: its p50 / max are the
time until its last chunk, "first" the time to its first; it is requested
``--download-runs`` times (the warm-up reads its first chunk only). Ends with the pages over
300 ms and those whose queries grow with the project, the downloads apart (they read a chunk
of tasks at a time by design).

Only the sample's tasks have a revision, and no worker built the judge's indexes: the
judge report and calibration encode their registries as they go, and the calibration's fixed
negatives look further for ten tasks with blockers than in a project whose every task has a
revision (its queries differ between the sizes for that reason).
"""

import argparse
import random
import statistics
import time
from datetime import timedelta

from _setup import configure, fresh_database  # noqa: E402 - sibling module

configure("project_pages.sqlite3")

from list_pages import seed as seed_tasks  # noqa: E402 - after configure (its own is a default)

BUDGET_MS = 300
SAMPLE = 500  # tasks with review history, judge questions' tasks: the same at both sizes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--blockers-per-task", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--download-runs", type=int, default=1)
    args = parser.parse_args()

    fresh_database()
    small_counts: dict[str, int] = {}
    if args.small:
        lead, project = seed(args.small, args.blockers_per_task)
        print(f"\n-- {args.small} tasks: the queries of each page")
        for name, _, row in measure(lead, project, runs=1, download_runs=1):
            small_counts[name] = row["queries"]
        print(f"{len(small_counts)} pages counted")
    lead, project = seed(args.tasks, args.blockers_per_task)
    print(f"\n-- {args.tasks} tasks, {args.runs} runs a page ({args.download_runs} a download)")
    slow, growing, chunked = [], [], []
    header = f"{'page':46} {'p50 ms':>8} {'max ms':>8} {'first':>7} {'queries':>8} {'small':>6}"
    print(header)
    for name, _, row in measure(lead, project, args.runs, args.download_runs):
        small = small_counts.get(name)
        first = f"{row['first']:7.1f}" if row.get("first") is not None else f"{'':7}"
        print(
            f"{name:46} {row['p50']:8.1f} {row['max']:8.1f} {first} {row['queries']:8d} "
            f"{'' if small is None else small:>6}",
            flush=True,
        )
        if row["p50"] > BUDGET_MS:
            first = row.get("first")
            taken = f"{row['p50']:.0f} ms" + ("" if first is None else f" whole, first {first:.0f}")
            slow.append(f"{name} ({taken})")
        if small is not None and row["queries"] > small:
            streamed = row.get("first") is not None
            (chunked if streamed else growing).append(f"{name} ({small} -> {row['queries']})")
    print(f"\nover {BUDGET_MS} ms at {args.tasks} tasks: {', '.join(slow) or 'none'}")
    print(f"queries growing with the project: {', '.join(growing) or 'none'}")
    # A download reads its tasks a chunk at a time (exchange.analysis.ANALYSIS_CHUNK), so that
    # no request holds a whole project: its queries grow with the project by design.
    print(f"streamed downloads, a chunk of tasks at a time: {', '.join(chunked) or 'none'}")


def seed(n_tasks: int, per_task: int):
    """list_pages' tasks, then the people, review history, judge questions and results."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from evaluation.models import EvaluationRun, TaskPass
    from hilbench_annotate.models import Membership, Revision, Task
    from judge.models import QuestionLabel, ValidationQuestion
    from review.models import ReviewAssignment, ReviewDecision
    from review.services import pipeline_ensure

    # Decisions and passes protect their revisions: they go before list_pages' delete.
    ReviewDecision.all_objects.all().delete()
    TaskPass.objects.all().delete()
    _, project = seed_tasks(n_tasks, per_task)
    started = time.perf_counter()
    User = get_user_model()
    lead, _ = User.objects.get_or_create(username="bench-lead")
    reviewer, _ = User.objects.get_or_create(username="bench-reviewer")
    writer, _ = User.objects.get_or_create(username="bench-writer")
    labellers = [User.objects.get_or_create(username=f"bench-labeller-{i}")[0] for i in (1, 2)]
    Membership.objects.create(project=project, user=lead, role="lead")
    Membership.objects.create(project=project, user=reviewer, role="reviewer")
    layers = pipeline_ensure(project)
    rng = random.Random(11)
    now = timezone.now()
    domains = dict(Task.objects.filter(project=project).order_by("pk").values_list("pk", "domain"))
    ids = list(domains)
    sample = ids[:: max(1, len(ids) // SAMPLE)][:SAMPLE]
    with transaction.atomic():
        revisions = Revision.objects.bulk_create(
            Revision(task_id=t, number=1, snapshot=_snapshot(t, domains[t], per_task))
            for t in sample
        )
        decisions = [
            ReviewDecision(
                task_id=r.task_id,
                layer=1 + (i % len(layers)),
                layer_name=layers[i % len(layers)].name,
                reviewer=reviewer,
                revision=r,
                outcome=rng.choice(["approve", "approve", "request_changes", "reject"]),
            )
            for i, r in enumerate(revisions)
        ]
        ReviewDecision.objects.bulk_create(decisions)
        in_review = Task.objects.filter(pk__in=sample, status="in_review")
        in_review.update(review_layer=1)
        ReviewAssignment.objects.bulk_create(
            ReviewAssignment(
                task_id=t, layer=1, reviewer=reviewer, expires_at=now + timedelta(hours=1)
            )
            for t in in_review.values_list("pk", flat=True)[: SAMPLE // 4]
        )
        # Held-out questions on a few tasks (the judge report reads these), two labels each.
        # Two about the task's first blocker, two off-task (labelled none).
        texts = [
            ("Which period does gap 0 of this task cover?", "blocker_0"),
            ("What is meant by gap 0 here?", "blocker_0"),
            ("Which client has the largest account balance?", None),
            ("How are the district names spelled in the data?", None),
        ]
        questions = ValidationQuestion.objects.bulk_create(
            ValidationQuestion(task_id=t, text=text, style="terse", created_by=writer)
            for t in sample[:20]
            for text, _ in texts
        )
        QuestionLabel.objects.bulk_create(
            QuestionLabel(question=q, labeller=u, blocker_key=texts[i % len(texts)][1])
            for i, q in enumerate(questions)
            for u in labellers
        )
        run = EvaluationRun.objects.create(
            project=project,
            source="imported",
            model_name="bench-model-7b",
            modes=["baseline", "full_info"],
            passes=1,
            status="succeeded",
            created_by=lead,
        )
        TaskPass.objects.bulk_create(
            TaskPass(
                run=run,
                task_id=r.task_id,
                revision=r,
                mode=mode,
                index=1,
                resolved=rng.random() < (0.3 if mode == "baseline" else 0.7),
                blocker_count=per_task,
            )
            for r in revisions
            for mode in ("baseline", "full_info")
        )
    print(
        f"review history, {len(questions)} held-out questions and {2 * len(revisions)} passes "
        f"on {len(sample)} tasks in {time.perf_counter() - started:.1f} s"
    )
    return lead, project


def _snapshot(task_id: int, domain: str, per_task: int) -> dict:
    """A revision's snapshot of list_pages' task: its blocked question and blockers."""
    return {
        "domain": domain,
        "blocked_spec": {"question": f"blocked question {task_id}", "evidence": ""},
        "blockers": [
            {
                "id": f"blocker_{j}",
                "type": "question",
                "description": f"Gap {j} of task {task_id}",
                "resolution": f"Resolution {j}",
                "trigger_questions": [f"Question {k} about blocker_{j}?" for k in range(3)],
            }
            for j in range(per_task)
        ],
    }


def cases(project, n_tasks: int) -> dict[str, str]:
    """Every project-wide page and API a lead opens, by name, with its URL."""
    from django.urls import reverse

    from exchange.analysis import FORMATS, TABLES

    p = {"project_id": project.pk}
    far = max(1, n_tasks // 25 - 1)  # the task list's last page but one
    pages = {
        "task list (page 1)": f"/?project={project.pk}",
        f"task list (page {far})": f"/?project={project.pk}&page={far}",
        "task list (search)": f"/?project={project.pk}&q=question+12",
        "review queue": reverse("review-queue"),
        "review pipeline": reverse("review-pipeline", kwargs=p),
        "review dashboard": reverse("review-dashboard", kwargs=p),
        "notifications": reverse("notifications"),
        "judge report": reverse("judge-report", kwargs=p),
        # A POST (it scores the held-out questions and stores thresholds), answered by a redirect.
        "judge calibrate (POST)": reverse("judge-calibrate", kwargs=p),
        "evaluation home": reverse("evaluation-home"),
        "evaluation project": reverse("evaluation-project", kwargs=p),
        "leaderboard.csv": reverse("evaluation-leaderboard-csv", kwargs=p),
        "failures": reverse("evaluation-failures", kwargs=p),
        "failures.csv": reverse("evaluation-failures-csv", kwargs=p),
        "failures taxonomy": reverse("evaluation-taxonomy", kwargs=p),
        "project data": reverse("project-data", kwargs=p),
        "imports": reverse("import-list"),
        "exports": reverse("export-list"),
        "API projects": reverse("api-project-list"),
        "API pipeline": reverse("api-pipeline", kwargs=p),
        "API leaderboard": reverse("api-leaderboard", kwargs=p),
        "API tasks ?project=": f"{reverse('api-task-list')}?project={project.pk}",
        "API review queue": reverse("api-review-queue"),
    }
    for table in TABLES:
        for fmt in FORMATS:
            url = reverse("project-data-download", kwargs={**p, "table": table, "fmt": fmt})
            pages[f"download {table}.{fmt}"] = url
    api_data = reverse("api-project-data", kwargs={**p, "table": "tasks"})
    pages["download API data/tasks"] = api_data
    return pages


def measure(lead, project, runs: int, download_runs: int):
    """Yield (name, url, {p50, max, first, queries}) for each page, as it is measured."""
    from django.db import connection
    from django.test import Client

    from hilbench_annotate.models import Task

    client = Client()
    client.force_login(lead)
    n_tasks = Task.objects.filter(project=project).count()
    executed = [0]

    def count(execute, sql, params, many, context):
        executed[0] += 1
        return execute(sql, params, many, context)

    for name, url in cases(project, n_tasks).items():
        streamed = name.startswith("download")
        times, firsts, queries = [], [], []
        for i in range(1 + (download_runs if streamed else runs)):
            executed[0] = 0
            with connection.execute_wrapper(count):
                started = time.perf_counter()
                post = "(POST)" in name
                response = client.post(url) if post else client.get(url)
                first = None
                if response.streaming:
                    chunks = iter(response.streaming_content)
                    next(chunks, None)
                    first = (time.perf_counter() - started) * 1000
                    for _ in chunks if i else ():  # the warm-up reads the first chunk only
                        pass
                    response.close()
                elapsed = (time.perf_counter() - started) * 1000
            # A redirect is an answer too (the evaluation home to the one project's page).
            assert response.status_code in (200, 302), (name, url, response.status_code)
            if i == 0:
                continue  # the warm-up: templates, caches, the judge's first load
            times.append(elapsed)
            firsts.append(first)
            queries.append(executed[0])
        row = {
            "p50": statistics.median(times),
            "max": max(times),
            "first": None if firsts[0] is None else statistics.median(firsts),
            "queries": max(queries),
        }
        yield name, url, row


if __name__ == "__main__":
    main()
