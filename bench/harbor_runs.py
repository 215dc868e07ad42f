"""Agent runs the app drives in Harbor: trials per minute, and the app's own share of it.

    .venv/bin/python bench/harbor_runs.py [--concurrency 1,2] [--agent oracle] [--passes 1]

Needs `make containers` and `make harbor`. Seeds the demo, then for each concurrency N runs
the agent (a reference agent by default: no model, so the figures are Harbor's and the
app's) on the demo's blocked SQL task and its planted SWE task (``--all``: every demo task),
every mode, as a lead's run does
(``harbor_run_start`` → ``evaluation_run_execute`` in this process, the worker's code), and
prints: trials, wall time, trials per minute; the app's overhead — the export of the run's
tasks and the import of each trial (its reward, ask log judged, trajectory) — against
Harbor's own run time, per trial.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT, configure, fresh_database  # noqa: E402 - sibling module

configure("harbor_runs.sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,2")
    parser.add_argument("--agent", default="oracle")
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--all", action="store_true", help="every demo task, not two")
    args = parser.parse_args()
    if not (ROOT / ".venv-harbor" / ".installed").is_file() or shutil.which("docker") is None:
        sys.exit("needs `make containers` and `make harbor`")
    fresh_database()
    from django.conf import settings
    from django.core.management import call_command

    from evaluation.services import evaluation_run_execute, harbor_run_start
    from hilbench_annotate.models import Project, Task
    from tests.exchange.bundle_helpers import plant_swe

    call_command("seed_demo", verbosity=0)
    project = Project.objects.get(slug="demo")
    lead = project.memberships.get(user__username="lead").user
    work = Path(tempfile.mkdtemp(prefix="bench-harbor-runs-"))
    swe = plant_swe(project, work)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    if not args.all:
        tasks = [Task.objects.get(project=project, source_id="retail_bank/4"), swe]
    print(f"cores: {os.cpu_count()}; {len(tasks)} tasks ({sum(t.domain == 'swe' for t in tasks)} "
          f"SWE), every mode, {args.passes} pass(es), agent {args.agent}")  # fmt: skip
    for concurrency in (int(c) for c in args.concurrency.split(",")):
        settings.HARBOR_CONCURRENCY = concurrency
        settings.HARBOR_RUNS_DIR = work / f"runs-{concurrency}"
        run = harbor_run_start(
            project=project, actor=lead, agent=args.agent, task_ids=[t.pk for t in tasks],
            modes=["baseline", "ask_human", "full_info"], passes=args.passes,
        )  # fmt: skip
        start = time.perf_counter()
        evaluation_run_execute(run_id=run.pk)
        wall = time.perf_counter() - start
        run.refresh_from_db()
        timing = run.harbor.get("timing", {})
        trials = run.done
        export, imports = timing.get("export_s", 0), timing.get("import_s", 0)
        harbor = timing.get("harbor_s", 0)
        print(
            f"\n{concurrency} at a time: {run.status}, {trials}/{run.total} trials in {wall:.0f} s "
            f"= {60 * trials / wall:.2f} trials/min"
        )
        print(
            f"  app: export {export:.1f} s + import {imports:.1f} s = "
            f"{(export + imports) / max(trials, 1):.2f} s per trial; Harbor's run {harbor:.0f} s "
            f"= {harbor / max(trials, 1):.1f} s per trial; the app's share "
            f"{100 * (export + imports) / max(wall, 1e-9):.1f}% of the wall time"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
