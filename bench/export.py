"""Bundle export time, size and memory for growing numbers of SQL tasks.

    .venv/bin/python bench/export.py [--tasks 100,1000] [--draft | --validated]

Seeds the largest count of SQL tasks on the demo's retail-bank database (each with three
blockers of three trigger questions, description CSVs, business info and a golden output),
then exports the first N for each N through the same path as ``manage.py export_bundle``
(``bundle_export_create`` + ``bundle_export_execute``). It prints the wall time, the
bundle's size and files, and the peak of Python allocations (tracemalloc, a second run) and
the process's peak RSS: streamed writing keeps memory flat as N grows, the bundle grows.

Tasks are exported as a draft bundle (the gates are still computed and written to each
validation.json) unless ``--validated``, which marks them approved with a passed validation
run first. Runs on its own database under var/bench (or DATABASE_URL).
"""

import argparse
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _setup import ROOT, configure, fresh_database  # noqa: E402 - sibling module

# DEBUG keeps the last 9,000 SQL queries in memory: that would be measured, not the export.
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-not-a-secret")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "localhost")
configure("export.sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="100,1000", help="comma-separated task counts")
    parser.add_argument("--validated", action="store_true", help="approved tasks, no draft")
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.tasks.split(","))

    fresh_database()
    project, lead, task_ids = seed(max(counts))
    print(
        f"{len(task_ids)} SQL tasks seeded; exporting {'validated' if args.validated else 'draft'}"
    )
    if args.validated:
        approve(task_ids)
    out_dir = Path(tempfile.mkdtemp(prefix="bench-export-", dir=ROOT / "var" / "bench"))
    print(
        f"{'tasks':>6} {'seconds':>8} {'tasks/s':>8} {'MB':>8} {'files':>7} "
        f"{'py peak MB':>11} {'RSS peak MB':>12}"
    )
    for count in counts:
        seconds, job = export(project, lead, task_ids[:count], out_dir, draft=not args.validated)
        tracemalloc.start()
        export(project, lead, task_ids[:count], out_dir, draft=not args.validated)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{count:>6} {seconds:>8.1f} {count / seconds:>8.1f} {job.size_bytes / 1e6:>8.2f} "
            f"{job.report['files']:>7} {peak / 1e6:>11.1f} {rss:>12.0f}"
        )


def seed(count: int):
    from django.contrib.auth import get_user_model

    from exchange.demo import sql_demo
    from exchange.demo.blocked_task import BLOCKED_QUESTION, DEMO_BLOCKERS
    from exchange.importers import import_bird
    from hilbench_annotate.models import Membership, Project, Task
    from hilbench_annotate.services import task_create_many
    from hilbench_annotate.toolkit.compare import golden_output_csv
    from hilbench_annotate.toolkit.sqlconsole import run_select
    from hilbench_annotate.vocabulary import Role

    lead, _ = get_user_model().objects.get_or_create(username="bench-lead")
    project = Project.objects.create(name="Bench export", slug="bench-export")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    paths = sql_demo.build(Path(tempfile.mkdtemp()) / "sql")
    source = Project.objects.create(name="Bench source", slug="bench-source")
    import_bird(project=source, questions=paths["questions"], databases=paths["databases"])
    template = Task.objects.get(project=source, source_id="retail_bank/4").sql_environment
    result = run_select(template.database.path, template.gold_sql, row_cap=100_000)
    environment = {
        "database": template.database,
        "db_id": template.db_id,
        "descriptions": template.descriptions,
        "business_info": [
            "Loan status codes are documented in the credit policy handbook.",
            "Branch regions follow the 2019 reorganisation.",
        ],
        "original_sql": template.original_sql,
        "gold_sql": template.gold_sql,
        "golden_output": golden_output_csv(result.columns, result.rows),
    }
    started = time.perf_counter()
    tasks = task_create_many(
        project=project,
        records=(
            {
                "domain": "sql",
                "source": "manual",
                "source_id": f"bench/{n:05d}",
                "title": f"{BLOCKED_QUESTION} (#{n})",
                "original_spec": {"question": BLOCKED_QUESTION, "evidence": ""},
                "environment": dict(environment),
                "blockers": [dict(b) for b in DEMO_BLOCKERS],
            }
            for n in range(count)
        ),
        author=lead,
    )
    ids = [task.pk for task in tasks]
    print(f"seeded in {time.perf_counter() - started:.1f} s")
    return project, lead, ids


def approve(task_ids) -> None:
    from django.db import transaction

    from hilbench_annotate.models import Task
    from validators.services import validation_run_execute, validation_run_start

    for task in Task.objects.filter(pk__in=task_ids):
        with transaction.atomic():
            run = validation_run_start(task=task, actor=None)
        validation_run_execute(run_id=run.pk)
    Task.objects.filter(pk__in=task_ids).update(status="approved")


def export(project, lead, task_ids, out_dir: Path, *, draft: bool):
    from exchange.services.exports import bundle_export_create, bundle_export_execute

    job = bundle_export_create(
        project=project, actor=lead, selection={"tasks": task_ids}, draft=draft
    )
    out = out_dir / f"export-{job.pk}.tar.gz"
    started = time.perf_counter()
    job = bundle_export_execute(job_id=job.pk, out=out)
    seconds = time.perf_counter() - started
    if job.status != "succeeded":
        sys.exit(f"export failed: {job.error}")
    out.unlink()
    return seconds, job


if __name__ == "__main__":
    main()
