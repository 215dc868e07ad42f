"""BIRD import speed: 10,000 SQL questions over one database, through ``import_bird``.

    .venv/bin/python bench/import.py [--tasks 10000] [--chunk 500] [--profile]

Writes a synthetic BIRD-format ``dev.json`` (N questions on the fixtures' ``library``
database, fixtures/bird/dev_databases) and imports it into a fresh project the way
``manage.py import_bird`` does (both passes: checking every record, then writing tasks,
environments and revision 1). Prints tasks/s, checks that the revisions were written,
imports the same file again (nothing may change) and, with ``--profile``, a third import
into another project under cProfile with its top entries.
Runs on its own database under var/bench (or DATABASE_URL); figures on a shared machine
are noisy: run it more than once.
"""

import argparse
import cProfile
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

from _setup import ROOT, configure, fresh_database  # noqa: E402 - sibling module

os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-not-a-secret")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "localhost")
configure("import.sqlite3")

DATABASES = ROOT / "fixtures" / "bird" / "dev_databases"


def write_questions(path: Path, count: int) -> None:
    with open(path, "w") as handle:
        json.dump(
            [
                {
                    "question_id": i,
                    "db_id": "library",
                    "question": f"How many books did members of branch {i % 7} borrow in week {i}?",
                    "evidence": f"week {i} refers to the loan's week number {i}",
                    "SQL": "SELECT COUNT(*) FROM loan",
                    "difficulty": ("simple", "moderate", "challenging")[i % 3],
                }
                for i in range(count)
            ],
            handle,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--chunk", type=int, default=0, help="IMPORT_CHUNK_SIZE (0: settings)")
    parser.add_argument("--profile", action="store_true", help="also a profiled import")
    args = parser.parse_args()
    fresh_database()
    from django.conf import settings

    from exchange.importers import import_bird
    from hilbench_annotate.models import Project, Revision, Task, TaskEvent

    if args.chunk:
        settings.IMPORT_CHUNK_SIZE = args.chunk
    work = Path(tempfile.mkdtemp(prefix="bench-import-", dir=ROOT / "var" / "bench"))
    questions = work / "dev.json"
    write_questions(questions, args.tasks)
    print(f"{args.tasks} questions over one database; chunk {settings.IMPORT_CHUNK_SIZE}")

    project = Project.objects.create(name="Bench import", slug="bench-import")
    start = time.perf_counter()
    report = import_bird(project=project, questions=questions, databases=DATABASES)
    seconds = time.perf_counter() - start
    tasks = Task.objects.filter(project=project).count()
    revisions = Revision.objects.filter(task__project=project).count()
    assert len(report.created) == tasks == revisions == args.tasks, (tasks, revisions)
    # Revision 1 tells each task's making: no event a task.
    events = TaskEvent.objects.filter(project=project, task__isnull=False).count()
    assert events == 0, events
    print(f"import : {seconds:6.2f} s  {args.tasks / seconds:8.0f} tasks/s")
    print(f"         {tasks} tasks, {revisions} revisions written")

    start = time.perf_counter()
    again = import_bird(project=project, questions=questions, databases=DATABASES)
    seconds = time.perf_counter() - start
    assert not again.created and len(again.unchanged) == args.tasks
    assert Task.objects.filter(project=project).count() == args.tasks
    print(f"again  : {seconds:6.2f} s  (nothing changed: {len(again.unchanged)} unchanged)")

    if args.profile:
        other = Project.objects.create(name="Bench import 2", slug="bench-import-2")
        profiler = cProfile.Profile()
        profiler.enable()
        import_bird(project=other, questions=questions, databases=DATABASES)
        profiler.disable()
        print("profile of a third import (cumulative, top 25):")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
