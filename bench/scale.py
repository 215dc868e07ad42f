"""Export time with 1, 2 and 4 Celery workers: the scaling curve of a chunked export.

    .venv/bin/python bench/scale.py [--tasks 10000] [--workers 1,2,4] [--chunk 500] [--rounds 1]

Seeds the tasks as bench/export.py does, exports them once in this process (their lint
findings and oracle runs are then known, as for a team re-exporting a release), then for
each number of workers W: starts W worker processes (solo pool, as many machines would
run them), waits until each says it is ready, starts the export as the Export page does
(``bundle_export_start``: the job fans out over the workers, one chunk of ``--chunk``
tasks at a time) and times it until the job has finished; then stops the workers. Prints
seconds, tasks/s and the speed-up over one worker, and the bundle's size.

Uses PostgreSQL and Redis when DATABASE_URL and CELERY_BROKER_URL are set (as a team
deploys it), else SQLite and the embedded broker. A machine with fewer cores than workers
cannot show more than its cores' worth of speed-up: the curve is the point.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT, configure, fresh_database  # noqa: E402 - sibling module

os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-not-a-secret")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "localhost")
configure("scale.sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--chunk", type=int, default=250, help="EXPORT_CHUNK_SIZE")
    parser.add_argument("--rounds", type=int, default=1, help="exports per worker count")
    parser.add_argument("--bird", action="store_true", help="imported BIRD questions instead")
    parser.add_argument(
        "--timeline", action="store_true", help="each export step's start and end, per worker"
    )
    args = parser.parse_args()
    os.environ["HILBENCH_EXPORT_CHUNK_SIZE"] = str(args.chunk)
    fresh_database(drop_broker=True)
    import export as single  # bench/export.py: the same tasks
    from django.conf import settings

    settings.EXPORT_CHUNK_SIZE = args.chunk
    project, lead, task_ids = (single.seed_bird if args.bird else single.seed)(args.tasks)
    out_dir = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=ROOT / "var" / "bench"))
    seconds, job = single.export(project, lead, task_ids, out_dir, draft=True)
    print(
        f"{args.tasks} tasks; chunks of {args.chunk}; one process first: {seconds:.1f} s "
        f"({job.size_bytes / 1e6:.1f} MB, {job.report['files']} files)"
    )
    print(f"{'workers':>7} {'seconds':>8} {'tasks/s':>8} {'speed-up':>9} {'MB':>7}")
    base = None
    for count in sorted(int(n) for n in args.workers.split(",")):
        times = []
        for _ in range(args.rounds):
            times.append(fanned_out(project, lead, task_ids, count, timeline=args.timeline))
        seconds, size = min(t for t, _ in times), times[0][1]
        if count == 1:
            base = seconds
        speed_up = f"{base / seconds:.2f}" if base else "—"
        print(
            f"{count:>7} {seconds:>8.1f} {args.tasks / seconds:>8.0f} {speed_up:>9} "
            f"{size / 1e6:>7.1f}"
        )


def start_worker(name: str, log: Path) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "celery", "-A", "hilbench_annotate", "worker", "--pool=solo",
        "--loglevel=warning", "--without-gossip", "--without-mingle", "--without-heartbeat",
        "-n", f"{name}@%h",
    ]  # fmt: skip
    handle = open(log, "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "HILBENCH_PRELOAD": "0"},
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def print_timeline(job) -> None:
    """When each step of ``job`` was made, started and finished (seconds after the job was
    made) and by which worker: where a fanned-out export waits."""
    zero = job.created_at

    def at(moment) -> str:
        return f"{(moment - zero).total_seconds():6.2f}" if moment else "     —"

    print(f"  job       made {at(job.created_at)} started {at(job.started_at)} "
          f"finished {at(job.finished_at)}")  # fmt: skip
    for step in job.chunks.order_by("started_at", "pk"):
        print(
            f"  {step.phase:<8} {step.number:>3} made {at(step.created_at)} started "
            f"{at(step.started_at)} finished {at(step.finished_at)} {step.worker}"
        )


def fanned_out(project, lead, task_ids, count: int, *, timeline: bool = False) -> tuple[float, int]:
    from exchange.models import ExportJob
    from exchange.services.exports import bundle_export_start

    folder = Path(tempfile.mkdtemp(prefix="bench-workers-", dir=ROOT / "var" / "bench"))
    logs = [folder / f"worker-{n}.log" for n in range(count)]
    workers = [start_worker(f"bench{n}", log) for n, log in enumerate(logs)]
    try:
        deadline = time.monotonic() + 120
        # Each worker prints the mode it runs in once it is ready (hilbench_annotate/celery.py).
        while not all("HiL-Bench Annotate mode" in log.read_text() for log in logs):
            if time.monotonic() > deadline:
                sys.exit("the workers did not start:\n" + logs[0].read_text()[-2000:])
            time.sleep(0.2)
        started = time.perf_counter()
        job = bundle_export_start(
            project=project, actor=lead, selection={"tasks": task_ids}, draft=True
        )
        while True:
            job = ExportJob.objects.get(pk=job.pk)
            if job.is_finished:
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - started
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)
    if job.status != "succeeded":
        sys.exit(f"export failed: {job.error}\n" + logs[0].read_text()[-2000:])
    if timeline:
        print_timeline(job)
    job.path.unlink()
    return seconds, job.size_bytes


if __name__ == "__main__":
    main()
