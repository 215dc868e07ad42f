"""SQL tasks validated per minute with one and with two real Celery workers.

    .venv/bin/python bench/validation.py [--copies 10] [--workers 1 2]

Imports the demo's six SQL questions into ``--copies`` projects (so 6 × copies tasks), fills
their golden outputs, then for each worker count starts that many worker processes, queues
one validation run (the SQL ground-truth checks) per task and times until every run finished.
Runs on its own database and broker: SQLite + embedded broker under var/bench (default), or
PostgreSQL + Redis when DATABASE_URL / CELERY_BROKER_URL are set (tables are emptied first).
"""

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path

from _setup import configure, fresh_database, start_worker  # noqa: E402 - sibling module

configure("validation.sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    fresh_database(drop_broker=True)
    tasks, lead = seed(args.copies)
    print(f"{len(tasks)} SQL tasks")
    for count in args.workers:
        elapsed = measure(tasks, lead, count)
        print(
            f"{count} worker(s): {len(tasks)} tasks in {elapsed:.1f} s = "
            f"{len(tasks) / elapsed * 60:.0f} tasks/minute"
        )


def seed(copies: int):
    from django.contrib.auth import get_user_model

    from exchange.demo import sql_demo
    from exchange.importers import import_bird
    from hilbench_annotate.models import Membership, Project, Task
    from hilbench_annotate.vocabulary import Role
    from validators.models import ValidationRun

    ValidationRun.objects.all().delete()
    Task.objects.all().delete()
    Project.objects.filter(slug__startswith="bench-validation").delete()
    paths = sql_demo.build(Path(tempfile.mkdtemp()) / "sql")
    from hilbench_annotate.models import SqlEnvironment
    from hilbench_annotate.toolkit.compare import golden_output_csv
    from hilbench_annotate.toolkit.sqlconsole import run_select

    # Who starts the runs: a lead of every project, who may change each of its tasks.
    lead, _ = get_user_model().objects.get_or_create(username="bench-lead")
    for i in range(copies):
        project = Project.objects.create(name=f"Bench validation {i}", slug=f"bench-validation-{i}")
        Membership.objects.create(project=project, user=lead, role=Role.LEAD)
        import_bird(project=project, questions=paths["questions"], databases=paths["databases"])
    for env in SqlEnvironment.objects.select_related("database"):
        gold = run_select(env.database.path, env.gold_sql)
        SqlEnvironment.objects.filter(pk=env.pk).update(
            golden_output=golden_output_csv(gold.columns, gold.rows)
        )
    return list(Task.objects.filter(domain="sql")), lead


def measure(tasks, lead, workers: int) -> float:
    from django.db import transaction

    from validators.models import ValidationRun
    from validators.services import validation_run_start

    procs = [start_worker(f"bench{i}") for i in range(workers)]
    try:
        time.sleep(4)  # let the workers connect
        started = time.perf_counter()
        with transaction.atomic():
            runs = [
                validation_run_start(task=t, actor=lead, checks=["sql_ground_truth"]) for t in tasks
            ]
        ids = [r.pk for r in runs]
        deadline = time.monotonic() + 600
        while (
            ValidationRun.objects.filter(pk__in=ids)
            .exclude(status__in=ValidationRun.FINISHED)
            .exists()
        ):
            if time.monotonic() > deadline:
                raise SystemExit("runs did not finish within 10 minutes")
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        failed = ValidationRun.objects.filter(pk__in=ids).exclude(status="passed").count()
        if failed:
            print(f"  note: {failed} run(s) did not pass")
        return elapsed
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
