"""Bundle export time, size and memory for growing numbers of SQL tasks, in one process.

    .venv/bin/python bench/export.py [--tasks 100,1000,10000] [--validated] [--profile] [--bird]

Seeds the largest count of SQL tasks on the demo's retail-bank database (each with three
blockers of three trigger questions, description CSVs, business info and a golden output;
titles and questions differ, so each task is a state of its own for lint), then exports the
first N for each N through the same path as ``manage.py export_bundle``
(``bundle_export_create`` + ``bundle_export_execute``, every step in this process;
``bench/scale.py`` spreads them over workers):

- *first*: the first export of those tasks — each one's lint findings are computed (and
  kept), their oracle runs are read from the cache after the first task (the seeded tasks
  share their ground truth and golden output);
- *again*: the same export again, every result read back: what a team re-exporting a
  release pays.

It prints seconds, CPU-seconds (this process and its finished children), tasks/s, the
bundle's size and files, the task data the bundle carries (each task's snapshot as JSON —
specification, blockers, environment with its description CSVs, ground truth and golden
output — plus each database once) and the ratio of the two, Python's allocation peak
(tracemalloc, on a third run; ``--keep PATH`` keeps that bundle) and the process's peak RSS:
streamed writing keeps memory flat as N grows. ``--profile``: the largest export again under
cProfile, its top entries. A last line shows what an oracle run costs when tasks do not share their
ground truth (each of ``--distinct`` tasks runs its own, in the sandbox).

``--bird``: the tasks are BIRD questions imported on one database instead (bench/import.py's
records, as bench/vs_label_studio.py exports them: no blockers, one ground truth).

Tasks are exported as a draft bundle (the gates are still computed and written to each
validation.json) unless ``--validated``, which marks them approved with a passed validation
run first. Runs on its own database under var/bench (or DATABASE_URL).
"""

import argparse
import cProfile
import os
import pstats
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
KEEP: Path | None = None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="100,1000", help="comma-separated task counts")
    parser.add_argument("--validated", action="store_true", help="approved tasks, no draft")
    parser.add_argument("--profile", action="store_true", help="profile the largest export")
    parser.add_argument("--distinct", type=int, default=20, help="tasks of their own oracle")
    parser.add_argument(
        "--bird", action="store_true", help="imported BIRD questions (vs_label_studio's tasks)"
    )
    parser.add_argument("--keep", type=Path, help="keep the last bundle written at this path")
    args = parser.parse_args()
    global KEEP
    KEEP = args.keep
    counts = sorted(int(n) for n in args.tasks.split(","))

    fresh_database()
    project, lead, task_ids = (seed_bird if args.bird else seed)(max(counts))
    draft = not args.validated
    print(f"{len(task_ids)} SQL tasks seeded; exporting {'draft' if draft else 'validated'}")
    if args.validated:
        approve(task_ids, lead)
    out_dir = Path(tempfile.mkdtemp(prefix="bench-export-", dir=ROOT / "var" / "bench"))
    print(
        f"{'tasks':>6} {'export':>6} {'seconds':>8} {'CPU s':>7} {'tasks/s':>8} {'MB':>7} "
        f"{'files':>8} {'data MB':>8} {'ratio':>6} {'py peak MB':>11} {'RSS peak MB':>12}"
    )
    for count in counts:
        chosen = task_ids[:count]
        data = task_data_bytes(chosen)
        for label in ("first", "again"):
            seconds, job = export(project, lead, chosen, out_dir, draft=draft)
            peak = ""
            if label == "again":
                tracemalloc.start()
                export(project, lead, chosen, out_dir, draft=draft)
                peak = f"{tracemalloc.get_traced_memory()[1] / 1e6:.1f}"
                tracemalloc.stop()
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"{count:>6} {label:>6} {seconds:>8.1f} {job.cpu_seconds:>7.1f} "
                f"{count / seconds:>8.0f} {job.size_bytes / 1e6:>7.2f} {job.report['files']:>8} "
                f"{data / 1e6:>8.2f} "
                f"{job.size_bytes / data:>6.2f} {peak:>11} {rss:>12.0f}"
            )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        export(project, lead, task_ids[: counts[-1]], out_dir, draft=draft)
        profiler.disable()
        print(f"profile of the export of {counts[-1]} tasks again (cumulative, top 30):")
        order = os.environ.get("PROFILE_SORT", "cumulative")  # or tottime
        pstats.Stats(profiler).sort_stats(order).print_stats(30)
    if args.distinct:
        distinct(project, lead, task_ids[: args.distinct], out_dir, draft=draft)


def distinct(project, lead, task_ids, out_dir: Path, *, draft: bool) -> None:
    """Give each task a ground truth of its own (a comment), so each runs its own oracle."""
    from django.db.models import F, Value
    from django.db.models.functions import Concat

    from hilbench_annotate.models import SqlEnvironment

    SqlEnvironment.objects.filter(task_id__in=task_ids).update(
        gold_sql=Concat(F("gold_sql"), Value("\n-- task "), F("task_id"))
    )
    seconds, _ = export(project, lead, task_ids, out_dir, draft=draft)
    print(
        f"{len(task_ids)} tasks with ground truths of their own (an oracle and a no-op run "
        f"each, in the sandbox): {seconds:.1f} s, {1000 * seconds / len(task_ids):.0f} ms a task"
    )


def task_data_bytes(task_ids) -> int:
    """What the tasks are: each one's snapshot as JSON, and each database file once."""
    import json

    from hilbench_annotate.models import SqlDatabase, Task
    from hilbench_annotate.services import task_snapshots

    size = 0
    tasks = list(Task.objects.filter(pk__in=task_ids).select_related("sql_environment__database"))
    for start in range(0, len(tasks), 500):
        part = tasks[start : start + 500]
        size += sum(len(json.dumps(s).encode()) for s in task_snapshots(part).values())
    databases = SqlDatabase.objects.filter(environments__task__in=task_ids).distinct()
    return size + sum(d.size_bytes for d in databases)


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
    ids = task_create_many(
        project=project,
        records=(
            {
                "domain": "sql",
                "source": "manual",
                "source_id": f"bench/{n:05d}",
                "title": f"{BLOCKED_QUESTION} (#{n})",
                "original_spec": {"question": f"{BLOCKED_QUESTION} (#{n})", "evidence": ""},
                "environment": dict(environment),
                "blockers": [dict(b) for b in DEMO_BLOCKERS],
            }
            for n in range(count)
        ),
        author=lead,
    )
    print(f"seeded in {time.perf_counter() - started:.1f} s")
    return project, lead, ids


def seed_bird(count: int):
    """``count`` BIRD questions on one database, imported (no blockers, descriptions CSVs
    but no business information): the tasks bench/vs_label_studio.py exports."""
    import importlib

    from django.contrib.auth import get_user_model

    from exchange.importers import import_bird
    from hilbench_annotate.models import Membership, Project, Task
    from hilbench_annotate.vocabulary import Role

    questions = Path(tempfile.mkdtemp(dir=ROOT / "var" / "bench")) / "questions.json"
    bench_import = importlib.import_module("import")  # bench/import.py
    bench_import.write_questions(questions, count)
    lead, _ = get_user_model().objects.get_or_create(username="bench-lead")
    project = Project.objects.create(name="Bench export", slug="bench-export")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    import_bird(project=project, questions=questions, databases=bench_import.DATABASES)
    return (
        project,
        lead,
        list(Task.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)),
    )


def approve(task_ids, lead) -> None:
    """The structural checks run on each task (started by the project's lead, who may change
    every task of it), then every task approved."""
    from django.db import transaction

    from hilbench_annotate.models import Task
    from validators.services import validation_run_execute, validation_run_start

    for task in Task.objects.filter(pk__in=task_ids):
        with transaction.atomic():
            run = validation_run_start(task=task, actor=lead)
        validation_run_execute(run_id=run.pk)
    Task.objects.filter(pk__in=task_ids).update(status="approved")


def export(project, lead, task_ids, out_dir: Path, *, draft: bool):
    from exchange.services.exports import bundle_export_create, bundle_export_execute

    job = bundle_export_create(
        project=project, actor=lead, selection={"tasks": task_ids}, draft=draft
    )
    out = out_dir / f"export-{job.pk}.tar.gz"
    started, cpu = time.perf_counter(), _cpu()
    job = bundle_export_execute(job_id=job.pk, out=out)
    seconds = time.perf_counter() - started
    job.cpu_seconds = _cpu() - cpu
    if job.status != "succeeded":
        sys.exit(f"export failed: {job.error}")
    if KEEP:
        out.replace(KEEP)
    else:
        out.unlink()
    return seconds, job


def _cpu() -> float:
    """CPU-seconds of this process and its finished children (the sandbox's oracle runs)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
