"""Memory of each gunicorn web worker with the judge's model ready, and without it.

    .venv/bin/python bench/web_memory.py [--workers 3] [--port 8123]

Starts gunicorn on a fresh migrated database (DEBUG off) three ways: the judge not preloaded
(``HILBENCH_PRELOAD=0``), preloaded in each worker (no ``--preload``), and preloaded once in
the master before it forks (``--preload``, the documented start command); sends one request
to each so every worker has served, then reads each worker's ``/proc/<pid>/smaps_rollup``.
Prints per worker, in MB: RSS (what ``ps`` shows, pages shared with the master counted in
full), PSS (shared pages divided among the processes sharing them) and USS (the worker's own
pages: what one more worker costs), and each set-up's median over its workers against the
worker without the judge.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPS = {
    "no judge (HILBENCH_PRELOAD=0)": ({"HILBENCH_PRELOAD": "0"}, []),
    "judge in each worker": ({}, []),
    "judge in the master (--preload)": ({}, ["--preload"]),
}


def memory(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) / 1024
    return {
        "rss": fields["Rss"],
        "pss": fields["Pss"],
        "uss": fields["Private_Clean"] + fields["Private_Dirty"],
    }


def workers_of(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def serve(setup: str, env: dict, extra: list[str], args, folder: Path) -> list[dict]:
    pidfile = folder / "gunicorn.pid"
    pidfile.unlink(missing_ok=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "hilbench_annotate.wsgi", *extra,
         "--bind", f"127.0.0.1:{args.port}", "--workers", str(args.workers),
         "--pid", str(pidfile), "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/login/", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"gunicorn did not start for {setup!r}") from None
                time.sleep(0.5)
        for _ in range(args.workers * 4):  # the workers have each served a page
            urllib.request.urlopen(f"http://127.0.0.1:{args.port}/login/", timeout=5).read()
        time.sleep(1)
        return [memory(pid) for pid in workers_of(int(pidfile.read_text()))]
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--port", type=int, default=8123)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="web-memory-") as tmp:
        folder = Path(tmp)
        os.environ.update(
            DJANGO_DEBUG="0",
            DJANGO_SECRET_KEY="bench-only-not-a-secret",
            DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
            HILBENCH_VAR_DIR=str(folder),
            HILBENCH_SQLITE_PATH=str(folder / "db.sqlite3"),
        )
        os.environ.pop("DATABASE_URL", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True)
        results = {setup: serve(setup, env, extra, args, folder)
                   for setup, (env, extra) in SETUPS.items()}  # fmt: skip
    base = {
        k: statistics.median(w[k] for w in results[next(iter(SETUPS))])
        for k in ("rss", "pss", "uss")
    }
    print(f"{'set-up':34} {'worker':>6} {'RSS MB':>8} {'PSS MB':>8} {'USS MB':>8}")
    for setup, workers in results.items():
        for i, w in enumerate(workers, 1):
            print(f"{setup:34} {i:>6} {w['rss']:8.1f} {w['pss']:8.1f} {w['uss']:8.1f}")
    print("\nmedian per worker above a worker without the judge (MB):")
    for setup, workers in list(results.items())[1:]:
        above = {k: statistics.median(w[k] for w in workers) - base[k] for k in base}
        print(
            f"  {setup:34} RSS +{above['rss']:.0f}  PSS +{above['pss']:.0f}"
            f"  USS +{above['uss']:.0f}"
        )


if __name__ == "__main__":
    main()
