"""Side by side with Label Studio 1.23.2: the same work over HTTP, interleaved in rounds.

    .venv/bin/python bench/vs_label_studio.py [--tasks 10000] [--rounds 3] [--requests 30]
        [--ls-venv DIR] [--skip-install] [--only import,list,task,export,memory]

Label Studio is installed from PyPI (``label-studio==1.23.2``) in a virtual environment of
its own outside the repository (``--ls-venv``, default
``~/.cache/hilbench-bench/label-studio-1.23.2``; reused when present, ``--skip-install``
refuses to make one). Both servers run on loopback as their documented start commands run
them, each on fresh data in a temporary folder:

- Label Studio: ``label-studio start`` (Django's threaded development server, one process;
  SQLite in its data dir), its user and API token made by the same command
  (``--username --password --user-token --enable-legacy-api-token``), as a deployment that
  measures it runs it: no error reports (``SENTRY_DSN``, ``FRONTEND_SENTRY_DSN`` empty), no
  version check (``LATEST_VERSION_CHECK=false``), no analytics (``COLLECT_ANALYTICS=false``);
- this app: ``gunicorn hilbench_annotate.wsgi --preload --workers 2 --worker-class gthread
  --threads 8 --timeout 120`` (the Dockerfile's command, DEBUG off) and ``celery -A
  hilbench_annotate worker --loglevel=info --concurrency=N`` (the Makefile's and
  docker-compose's), on SQLite and the embedded broker, or on PostgreSQL and Redis when
  DATABASE_URL and CELERY_BROKER_URL are set (a fresh database is created for the bench next
  to the one named, dropped after); a lead with a password and an API token
  (``create_project``, ``create_api_token``).

Every round runs each phase on both, Label Studio first in even rounds and ours first in
odd ones. Each phase prints the load average when it begins; the table shows each figure's
median over the rounds with its min–max beside it, the ratio ours / LS and the threshold
(issue 31's, issue 46's); every round's figure follows with its load:

- **import**: N BIRD questions on one database (bench/import.py's records; LS's project has a
  labelling config with their fields, question, evidence, db_id and SQL), the same bytes to
  both, in one request and in ten requests of N/10. LS ``POST /api/projects/<id>/import``
  answers when the tasks are written; ours ``POST /api/projects/<id>/tasks/import`` answers
  202 with a job, timed until the job has finished (``GET /api/imports/<id>/?wait=30``,
  which answers when it has: no poll interval in the figure and no polls in the server's
  CPU; the ten jobs are sent at once, then awaited). LS's background imports, where an
  edition has them, are polled every ``POLL_S``, 50 ms. Our project holds the
  library database first (a one-question import, not timed): the API imports questions on
  databases the project has.
  Also our command, ``manage.py import_bird``, whole wall time of the process.
- **list**: p50 / p95 of ``--requests`` requests, each on a new connection and on one kept
  connection, API against API at the same page size (``PAGE``): LS
  ``GET /api/tasks?project=<id>&page=N&page_size=50``, ours ``/api/tasks/`` (50 a page); and
  our HTML task list (``/?project=<id>``, 25 a page, a session cookie), what a browser waits
  for, against LS's API page 1. Page 1 and a random page.
- **task**: one task by id, random ids: LS ``GET /api/tasks/<id>``, ours ``/api/tasks/<id>/``.
- **export**: every task of the one-request project, until the file is on disk (what a user
  waits for). LS ``GET /api/projects/<id>/export?exportType=JSON&download_all_tasks=true``
  (without it LS exports only annotated tasks) written to a file as it arrives; ours
  ``POST /api/exports/`` (a draft bundle: imported questions are drafts), the job followed
  with ``?wait=30`` until it has succeeded, then its ``download`` link
  (``/api/exports/<id>/download``, the same token) written to a file and checked against
  the job's sha256. With two worker processes and then one, each a first export of a
  project, then the same again. Each exported task's oracle runs as a deployment's do (the
  bench's folder lets the sandbox user through); what they said is printed at the end.
- **memory** (once, after the rounds): RSS, PSS and USS of each gunicorn worker of the
  documented command (the judge loaded in the master and shared) after an ask_human
  question through each, against a second gunicorn with ``HILBENCH_PRELOAD=0`` that has
  served pages only (bench/web_memory.py reads them).

During each phase a thread samples each side's process tree (/proc): CPU seconds (own and
reaped children's, end minus start), also by kind of process, and peak RSS and PSS (summed
over the tree at each sample; RSS counts pages the forked workers share with their master
in every one of them, PSS divides them), with each process's PSS and USS at the peak. Ours
is gunicorn plus the Celery worker, and on PostgreSQL + Redis every PostgreSQL and Redis
process of the machine too (nothing else may use them during the run); the command's own
process for the CLI import. Everything is stopped and removed at the end, also on Ctrl-C.
Figures on a shared 2-core machine are noisy: the load is printed with each phase.
"""

import argparse
import collections
import contextlib
import http.client
import importlib
import io
import json
import math
import os
import random
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from _setup import ROOT, configure, fresh_database  # noqa: E402 - sibling module

LS_VERSION = "1.23.2"
DEFAULT_LS_VENV = Path.home() / ".cache" / "hilbench-bench" / f"label-studio-{LS_VERSION}"
PHASES = ("import", "list", "task", "export", "memory")
HTML_PAGE_1 = "list p1, LS API | our HTML"
LIMITS = {HTML_PAGE_1: (1 / 3, "1/3"), "one task, API": (1 / 4, "1/4")}  # of LS's p50
# The Dockerfile's and the operator guide's gunicorn command (bench/load.py's too): two
# processes of eight threads each.
WEB_WORKERS, WEB_THREADS = 2, 8
GUNICORN = ["--preload", "--workers", str(WEB_WORKERS), "--worker-class", "gthread",
            "--threads", str(WEB_THREADS), "--timeout", "120"]  # fmt: skip
# Label Studio as a deployment that measures it runs it: no error reports sent to Sentry
# (its default DSN), no check for a newer version, no analytics (label_studio/core/settings:
# SENTRY_DSN, FRONTEND_SENTRY_DSN, LATEST_VERSION_CHECK, COLLECT_ANALYTICS).
LS_QUIET = {"SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "LATEST_VERSION_CHECK": "false",
            "COLLECT_ANALYTICS": "false"}  # fmt: skip
PAGE = 50  # our API's page (REST_FRAMEWORK PAGE_SIZE); LS is asked for the same
# How often a job (ours) or a background import (LS editions that have them) is looked at
# until it has finished: on average half of it is counted after the end.
POLL_S = 0.05
WAIT_S = 30  # ours: GET /api/{imports,exports}/<id>/?wait=30 answers when the job finishes
LS_USER = "bench@localhost"
LEAD = "bench-lead"
SEED_QUESTION_ID = 10**7  # the one question that gives our API's projects their database
# A project for BIRD-style text-to-SQL records: the question with its evidence and
# database, the gold SQL shown and editable.
LS_LABEL_CONFIG = """<View>
  <Header value="Question"/>
  <Text name="question" value="$question"/>
  <Header value="Evidence"/>
  <Text name="evidence" value="$evidence"/>
  <Header value="Database"/>
  <Text name="db_id" value="$db_id"/>
  <Header value="Gold SQL"/>
  <Text name="sql" value="$SQL"/>
  <TextArea name="gold_sql" toName="question" editable="true" maxSubmissions="1"/>
</View>"""


def bench_import():
    """bench/import.py (its name is a keyword): its records and the fixtures' databases.
    Imported once the environment is set (it sets defaults of its own)."""
    return importlib.import_module("import")


# --- processes and what they use --------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


class Processes:
    """Every server the bench starts, in a session of its own; all stopped at the end."""

    def __init__(self) -> None:
        self.live: list[subprocess.Popen] = []

    def start(self, command: list[str], *, env: dict, log: Path, cwd: Path = ROOT):
        with open(log, "ab") as handle:
            process = subprocess.Popen(
                command, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        self.live.append(process)
        return process

    def stop(self, process: subprocess.Popen, timeout: float = 60) -> None:
        """SIGTERM to the leader (gunicorn and Celery then stop their workers), then SIGKILL
        to whatever of its session is left."""
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        if process in self.live:
            self.live.remove(process)

    def stop_all(self) -> None:
        for process in reversed(list(self.live)):
            self.stop(process, timeout=30)


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (children of every thread)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for thread in os.listdir(f"/proc/{current}/task"):
                with contextlib.suppress(OSError):
                    children = Path(f"/proc/{current}/task/{thread}/children").read_text()
                    todo += [int(child) for child in children.split()]
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User and system time of the processes and of their children they reaped."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / TICK


def _stat(pid: int) -> tuple[str, int]:
    """(comm, parent pid) from /proc/<pid>/stat."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.index("(") + 1 : text.rindex(")")], int(text.rsplit(")", 1)[1].split()[1])


def service_roots() -> dict[str, list[int]]:
    """This machine's PostgreSQL (its postmaster: every backend is its child) and Redis
    servers, whose work ours causes on PostgreSQL + Redis: their CPU and memory are counted
    with ours. Nothing else uses them while the bench runs (say so if something does)."""
    found: dict[str, list[int]] = {"PostgreSQL": [], "Redis": []}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            comm, parent = _stat(int(entry))
            if comm == "postgres" and _stat(parent)[0] != "postgres":
                found["PostgreSQL"].append(int(entry))
            elif comm == "redis-server":
                found["Redis"].append(int(entry))
    return {name: pids for name, pids in found.items() if pids}


def process_label(pid: int, root: int) -> str:
    """What a process of a tree is, for the per-process table: gunicorn's master or a
    worker, Celery's main process or a pool process, Label Studio's server, PostgreSQL's
    postmaster or a backend, Redis."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(a.decode(errors="replace") for a in argv if a)
    label = _label(pid, root, text)
    with contextlib.suppress(OSError):
        if "onnxruntime" in Path(f"/proc/{pid}/maps").read_text():
            label += " (judge loaded)"
    return label


def _label(pid: int, root: int, text: str) -> str:
    if "gunicorn" in text:
        return "gunicorn master" if pid == root else "gunicorn worker"
    if "celery" in text:
        return "Celery main process" if pid == root else "Celery pool process"
    if "label-studio" in text or "label_studio" in text:
        return "Label Studio server" if pid == root else "Label Studio child"
    if text.startswith("postgres:"):
        return "PostgreSQL " + " ".join(text.split()[1:3]).rstrip(":")
    if "postgres" in text:
        return "PostgreSQL postmaster"
    if "redis" in text:
        return "Redis"
    return text[:40]


class Sampler:
    """CPU seconds and peak RSS / PSS of process trees while a block runs.

    ``sides`` maps a name to the root pids of its servers, fixed for the block (a server
    started or stopped inside it would not be counted right). CPU is end minus start over
    each tree, children's time included once reaped; memory is read every ``interval``.
    ``groups`` names sums of sides whose peak is taken over the sum at each sample (a whole
    deployment: our servers with PostgreSQL and Redis). At each side's (and group's) peak the
    PSS of each of its processes is kept: what each held then."""

    def __init__(self, sides: dict[str, list[int]], interval: float = 0.25,
                 groups: dict[str, list[str]] | None = None) -> None:  # fmt: skip
        self.sides, self.interval = sides, interval
        self.groups = {name: members for name, members in (groups or {}).items()
                       if set(members) <= set(sides)}  # fmt: skip
        every = [*sides, *self.groups]
        self.peak = {side: {"rss": 0.0, "pss": 0.0} for side in every}
        self.at_peak: dict[str, list[tuple[str, float, float]]] = {side: [] for side in every}
        self.cpu: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _pids(self, side: str) -> list[int]:
        return [pid for root in self.sides[side] for pid in tree(root)]

    def _sample(self) -> None:
        from web_memory import memory  # bench/web_memory.py: /proc/<pid>/smaps_rollup

        now: dict[str, tuple[float, float, list]] = {}
        for side in self.sides:
            rss = pss = 0.0
            each = []
            for root in self.sides[side]:
                for pid in tree(root):
                    with contextlib.suppress(OSError, KeyError, ValueError):
                        figures = memory(pid)
                        rss, pss = rss + figures["rss"], pss + figures["pss"]
                        each.append((process_label(pid, root), figures["pss"], figures["uss"]))
            now[side] = (rss, pss, each)
        for name, members in self.groups.items():
            now[name] = (sum(now[m][0] for m in members), sum(now[m][1] for m in members),
                         [item for m in members for item in now[m][2]])  # fmt: skip
        for side, (rss, pss, each) in now.items():
            self.peak[side]["rss"] = max(self.peak[side]["rss"], rss)
            if pss > self.peak[side]["pss"]:
                self.peak[side]["pss"], self.at_peak[side] = pss, each

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _cpu_by_process(self) -> dict[tuple[str, int], tuple[int, float]]:
        """(side, pid) -> (the root of its tree, its CPU seconds)."""
        return {
            (side, pid): (root, cpu_seconds([pid]))
            for side in self.sides
            for root in self.sides[side]
            for pid in tree(root)
        }

    def __enter__(self) -> "Sampler":
        self._start = {side: cpu_seconds(self._pids(side)) for side in self.sides}
        self._start_each = self._cpu_by_process()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.cpu = {s: cpu_seconds(self._pids(s)) - self._start[s] for s in self.sides}
        # Per kind of process (a process started inside the block counts from zero).
        self.cpu_each: dict[str, dict[str, float]] = {side: {} for side in self.sides}
        for (side, pid), (root, seconds) in self._cpu_by_process().items():
            label = process_label(pid, root).replace(" (judge loaded)", "")
            used = seconds - self._start_each.get((side, pid), (root, 0.0))[1]
            self.cpu_each[side][label] = self.cpu_each[side].get(label, 0.0) + used
        for name, members in self.groups.items():
            self.cpu[name] = sum(self.cpu[m] for m in members)


# --- HTTP ---------------------------------------------------------------------------------------


class Client:
    """Requests to one server on loopback, timed to the last byte of the body: each on a new
    connection, or (``keep``) on one kept connection, opened again when the server closes it."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.port, self.headers = port, headers
        self._kept: http.client.HTTPConnection | None = None
        self.closed_by_server = 0  # kept connections the server closed after a response

    def call(self, method, path, body=None, *, keep=False, headers=None, ok=(200,)):
        """(seconds, body, response)."""
        conn = (self._kept if keep else None) or http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=900
        )
        started = time.perf_counter()
        conn.request(method, path, body, {**self.headers, **(headers or {})})
        response = conn.getresponse()
        data = response.read()
        seconds = time.perf_counter() - started
        if keep and not response.will_close:
            self._kept = conn
        else:
            self.closed_by_server += keep
            self._kept = None
            conn.close()
        if response.status not in ok:
            raise SystemExit(f"{method} {path} on :{self.port}: {response.status} {data[:500]!r}")
        return seconds, data, response

    def download(self, path: str, into: Path) -> int:
        """GET ``path`` on a new connection, the body written to ``into`` as it comes, as a
        user's client saves a download; its bytes."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=900)
        try:
            conn.request("GET", path, headers=self.headers)
            response = conn.getresponse()
            if response.status != 200:
                raise SystemExit(f"GET {path} on :{self.port}: {response.status} "
                                 f"{response.read()[:500]!r}")  # fmt: skip
            size = 0
            with open(into, "wb") as handle:
                while chunk := response.read(1 << 20):
                    handle.write(chunk)
                    size += len(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            return size
        finally:
            conn.close()

    def close(self) -> None:
        if self._kept is not None:
            self._kept.close()
            self._kept = None

    def json(self, method, path, payload=None, *, ok=(200,)):
        body = None if payload is None else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        return json.loads(self.call(method, path, body, headers=headers, ok=ok)[1])


def wait_until_up(port: int, path: str, process: subprocess.Popen, log: Path, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server on :{port} exited:\n{log.read_text()[-3000:]}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        conn.close()
        time.sleep(0.5)
    raise SystemExit(f"the server on :{port} did not answer {path} in {timeout:.0f} s:\n"
                     f"{log.read_text()[-3000:]}")  # fmt: skip


def timed_series(client: Client, paths, *, count: int, keep: bool) -> dict:
    from load import _pct  # bench/load.py: nearest-rank percentile

    for _ in range(2):  # warm: a first request of a kind is not what is compared
        client.call("GET", paths(), keep=keep)
    closed = client.closed_by_server
    times = [client.call("GET", paths(), keep=keep)[0] * 1000 for _ in range(count)]
    client.close()
    return {
        "p50": statistics.median(times),
        "p95": _pct(times, 95),
        "kept": keep and client.closed_by_server - closed < count,
    }


# --- Label Studio ---------------------------------------------------------------------------------


def ls_install(venv: Path, *, skip: bool) -> Path:
    """The venv's ``label-studio`` script, installing Label Studio first unless it is there."""
    script, marker = venv / "bin" / "label-studio", venv / ".installed"
    if script.exists() and marker.exists():
        return script
    if skip:
        raise SystemExit(f"--skip-install: no Label Studio {LS_VERSION} in {venv}")
    print(f"installing label-studio=={LS_VERSION} into {venv} (once) …", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    log = venv.parent / f"install-{LS_VERSION}.log"
    with open(log, "w") as handle:
        for command in (
            [base, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--upgrade", "pip"],
            [str(venv / "bin" / "python"), "-m", "pip", "install", f"label-studio=={LS_VERSION}"],
        ):
            if subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT).returncode:
                raise SystemExit(f"installing Label Studio failed: {' '.join(command)}\n"
                                 f"{log.read_text()[-3000:]}")  # fmt: skip
    marker.write_text(LS_VERSION + "\n")
    return script


class LabelStudio:
    name = "LS"

    def __init__(self, script: Path, folder: Path, processes: Processes, port: int) -> None:
        self.script, self.folder, self.processes, self.port = script, folder, processes, port
        self.token = os.urandom(20).hex()
        self.client = Client(port, {"Authorization": f"Token {self.token}"})
        self.database = folder / "data" / "label_studio.sqlite3"

    def start(self) -> None:
        self.folder.mkdir(parents=True)
        log = self.folder / "server.log"
        # Its own environment: none of ours (DJANGO_*, DATABASE_URL) may reach it.
        env = {"PATH": f"{self.script.parent}:/usr/bin:/bin", "HOME": str(self.folder),
               "LANG": "C.UTF-8", **LS_QUIET}  # fmt: skip
        self.process = self.processes.start(
            [str(self.script), "start", "--no-browser", "--internal-host", "127.0.0.1",
             "--port", str(self.port), "--data-dir", str(self.folder / "data"),
             "--username", LS_USER, "--password", os.urandom(12).hex(),
             "--user-token", self.token, "--enable-legacy-api-token"],
            env=env, log=log, cwd=self.folder,
        )  # fmt: skip
        # The first start migrates its database: minutes on a busy 2-core machine.
        wait_until_up(self.port, "/health", self.process, log, timeout=1200)
        self.client.call("GET", "/api/projects/")  # the token works

    def roots(self) -> list[int]:
        return [self.process.pid]

    def project(self, title: str) -> int:
        created = self.client.json(
            "POST", "/api/projects/", {"title": title, "label_config": LS_LABEL_CONFIG}, ok=(201,)
        )
        return created["id"]

    def import_records(self, project: int, body: bytes) -> None:
        seconds, data, _ = self.client.call(
            "POST", f"/api/projects/{project}/import", body,
            headers={"Content-Type": "application/json"}, ok=(201,),
        )  # fmt: skip
        answer = json.loads(data)
        if "import" in answer:  # editions that import in the background: wait for it
            while True:
                state = self.client.json(
                    "GET", f"/api/projects/{project}/imports/{answer['import']}"
                )
                if state.get("status") in ("completed", "failed"):
                    break
                time.sleep(POLL_S)

    def count(self, project: int) -> int:
        with contextlib.closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)) as db:
            return db.execute(
                "SELECT COUNT(*) FROM task WHERE project_id = ?", (project,)
            ).fetchone()[0]

    def task_ids(self, project: int) -> list[int]:
        with contextlib.closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT id FROM task WHERE project_id = ?", (project,)).fetchall()
        return [row[0] for row in rows]

    def export(self, project: int, into: Path) -> tuple[float, int, int]:
        """(seconds until the export is on disk, bytes, tasks in it)."""
        started = time.perf_counter()
        size = self.client.download(
            f"/api/projects/{project}/export?exportType=JSON&download_all_tasks=true", into
        )
        seconds = time.perf_counter() - started
        with open(into, "rb") as handle:
            count = len(json.load(handle))
        into.unlink()
        return seconds, size, count


# --- this app ------------------------------------------------------------------------------------


class Ours:
    name = "ours"

    def __init__(self, folder: Path, processes: Processes, port: int, env: dict) -> None:
        self.folder, self.processes, self.port, self.env = folder, processes, port, env
        self.worker: subprocess.Popen | None = None
        self.concurrency = 0
        self.last_import: tuple | None = None
        self.services: dict[str, list[int]] = {}  # PostgreSQL's and Redis' roots, when used
        # What the exported tasks' oracle runs said (each task's line in the job's report):
        # printed at the end, so a sandbox the deployment cannot reach is seen, not measured.
        self.oracle_lines: collections.Counter = collections.Counter()
        self.exported: list[int] = []  # export jobs whose oracle lines are not counted yet

    def start(self) -> None:
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from load import PASSWORD, _login  # bench/load.py: a browser's login

        User = get_user_model()
        self.lead = User.objects.create_user(username=LEAD, password=PASSWORD)
        out = io.StringIO()
        call_command("create_api_token", LEAD, name="vs-label-studio", stdout=out)
        self.api = Client(self.port, {"Authorization": f"Bearer {out.getvalue().strip()}"})
        self.log = self.folder / "server.log"
        self.process = self.processes.start(
            [sys.executable, "-m", "gunicorn", "hilbench_annotate.wsgi", *GUNICORN,
             "--bind", f"127.0.0.1:{self.port}"],
            env=self.env, log=self.log,
        )  # fmt: skip
        wait_until_up(self.port, "/login/", self.process, self.log, timeout=600)
        session = _login(f"http://127.0.0.1:{self.port}", LEAD)
        self.html = Client(self.port, {"Cookie": f"sessionid={session.cookies['sessionid']}"})

    def start_worker(self, concurrency: int) -> None:
        """``celery -A hilbench_annotate worker --loglevel=info --concurrency=N``, ready: it
        said its mode (its processes load the judge only in a job that judges)."""
        if self.worker is not None and self.concurrency == concurrency:
            return
        self.stop_worker()
        log = self.folder / f"worker-{concurrency}-{time.monotonic_ns()}.log"
        self.worker = self.processes.start(
            [sys.executable, "-m", "celery", "-A", "hilbench_annotate", "worker",
             "--loglevel=info", f"--concurrency={concurrency}", "-n", f"bench{concurrency}@%h"],
            env=self.env, log=log,
        )  # fmt: skip
        self.concurrency = concurrency
        deadline = time.monotonic() + 600
        while True:
            text = log.read_text(errors="replace")
            if "HiL-Bench Annotate mode" in text and " ready." in text:
                return
            if self.worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the Celery worker did not start:\n{text[-3000:]}")
            time.sleep(0.3)

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.processes.stop(self.worker)
            self.worker, self.concurrency = None, 0

    def roots(self) -> list[int]:
        return [self.process.pid] + ([self.worker.pid] if self.worker else [])

    def sampler(self, **kwargs) -> Sampler:
        """Our servers' trees (side ``ours``) and, on PostgreSQL + Redis, theirs, summed as
        the ``deployment``."""
        sides = {"ours": self.roots(), **self.services}
        return Sampler(sides, groups={"deployment": list(sides)}, **kwargs)

    def project(self, name: str, *, database: bool = True):
        """A project with the lead (``create_project``); with ``database``, its library
        database from a one-question import (the API names databases a project has)."""
        from django.core.management import call_command
        from django.db import connections

        from hilbench_annotate.models import Project

        slug = name.lower().replace(" ", "-").replace(",", "")
        call_command("create_project", name=name, slug=slug, member=[f"{LEAD}:lead"],
                     stdout=io.StringIO())  # fmt: skip
        project = Project.objects.get(slug=slug)
        if database:
            from exchange.importers import import_bird

            seed = self.folder / f"seed-{slug}.json"
            seed.write_text(json.dumps([{
                "question_id": SEED_QUESTION_ID, "db_id": "library", "SQL": "SELECT 1",
                "question": "How many branches are there?", "evidence": "", "difficulty": "simple",
            }]))  # fmt: skip
            import_bird(
                project=project, questions=seed, databases=bench_import().DATABASES, actor=self.lead
            )
        connections.close_all()
        return project

    def _job(self, url: str) -> dict:
        """The job once finished: each request waits for it server-side (``?wait=``, the
        API's way to follow a job) instead of a poll every ``POLL_S``."""
        while True:
            job = self.api.json("GET", f"{url}?wait={WAIT_S}")
            if job["status"] not in ("queued", "running"):
                if job["status"] != "succeeded":
                    raise SystemExit(f"{url}: {job['status']}: {job.get('error')}")
                return job

    def import_records(self, project: int, bodies: list[bytes]) -> None:
        """Every body sent (each a job), then every job awaited. Where a one-request import's
        time went is printed: the POST until its 202, the job waiting for a worker, the
        import in the worker, and the poll seeing it finished (the job's own timestamps)."""
        sent = time.time()
        urls = [
            json.loads(self.api.call(
                "POST", f"/api/projects/{project}/tasks/import", body,
                headers={"Content-Type": "application/json"}, ok=(202,),
            )[1])["url"]
            for body in bodies
        ]  # fmt: skip
        answered = time.time()
        for url in urls:
            self._job(url)
        self.last_import = (project, sent, answered, time.time()) if len(urls) == 1 else None

    def print_import_breakdown(self) -> None:
        """Where the last one-request import's time went (read once it is timed: the query
        is not part of it)."""
        if self.last_import is None:
            return
        from exchange.models import ImportJob

        project, sent, answered, seen = self.last_import
        job = ImportJob.objects.filter(project_id=project).latest("pk")
        created, started = job.created_at.timestamp(), job.started_at.timestamp()
        finished = job.finished_at.timestamp()
        print(
            f"    ours, one request: POST {answered - sent:.3f} s (job made at "
            f"{created - sent:.3f}), waiting for a worker {started - created:.3f} s, "
            f"import {finished - started:.3f} s, seen finished {seen - finished:.3f} s "
            f"later; {seen - sent:.3f} s in all",
            flush=True,
        )

    def import_command(self, slug: str, questions: Path) -> tuple[float, float, float]:
        """``manage.py import_bird``: (wall seconds, CPU seconds, peak RSS MB)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "manage.py", "import_bird", "--project", slug,
             "--questions", str(questions), "--databases", str(bench_import().DATABASES),
             "--as-user", LEAD],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        with Sampler({"cli": [process.pid]}, interval=0.1) as sampler:
            output = process.communicate()[0]
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if process.returncode:
            raise SystemExit(f"import_bird failed:\n{output.decode()[-3000:]}")
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return seconds, cpu, sampler.peak["cli"]["rss"]

    def count(self, project: int) -> int:
        from hilbench_annotate.models import Task

        return (
            Task.objects.filter(project_id=project)
            .exclude(source_id=f"library/{SEED_QUESTION_ID}")
            .count()
        )

    def task_ids(self, project: int) -> list[int]:
        from hilbench_annotate.models import Task

        return list(Task.objects.filter(project_id=project).values_list("pk", flat=True))

    def export(self, project: int, into: Path) -> tuple[float, int, float]:
        """(seconds until the bundle is on disk, its bytes, seconds of them the download took):
        ``POST /api/exports/``, the job followed (``?wait=``) until it has succeeded, then its
        ``download`` link with the same token, written to ``into``; checked against the job's
        sha256.
        Both copies are deleted after."""
        import hashlib

        from exchange.models import ExportJob

        started = time.perf_counter()
        job = self.api.json("POST", "/api/exports/", {"project": project, "draft": True},
                            ok=(202,))  # fmt: skip
        job = self._job(f"/api/exports/{job['id']}/")
        ready = time.perf_counter()
        size = self.api.download(job["download"], into)
        seconds = time.perf_counter() - started
        digest = hashlib.sha256()
        with open(into, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        if size != job["size_bytes"] or digest.hexdigest() != job["sha256"]:
            raise SystemExit(f"the downloaded bundle is not the job's: {size} bytes")
        into.unlink()
        self.exported.append(job["id"])
        with contextlib.suppress(OSError, TypeError):
            ExportJob.objects.get(pk=job["id"]).path.unlink()
        return seconds, size, seconds - (ready - started)

    def count_oracle_lines(self) -> None:
        """What the exports' oracle runs said, read once their phase is measured (the read
        is the bench's, not the user's)."""
        from django.db import connection

        from exchange.models import ExportJob
        from exchange.selectors import export_entries

        for job in ExportJob.objects.filter(pk__in=self.exported):
            self.oracle_lines.update(entry.get("oracle", "") for entry in export_entries(job=job))
        self.exported.clear()
        connection.close()  # its backend, counted with ours, does not keep what it read


# --- the rounds ----------------------------------------------------------------------------------


class Figures:
    """Each figure's value per round, per side, with the load average when its phase began;
    resources per phase and side, and what each process held at the side's peak."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], list[float]] = {}
        self.rounds: dict[tuple[str, str], list[int]] = {}
        self.resources: dict[tuple[str, str], list[dict]] = {}
        self.at_peak: dict[str, tuple[float, list[tuple[str, float, float]]]] = {}
        self.loads: dict[tuple[int, str], str] = {}
        self.cpu_each: dict[str, list[dict[str, float]]] = {}  # phase -> per round
        self.notes: list[str] = []
        self.round = 0

    def begin(self, r: int, phase: str) -> None:
        self.round = r
        self.loads[r, phase] = load_average()
        print(f"  round {r + 1}, {phase}: load {self.loads[r, phase]}", flush=True)

    def add(self, figure: str, side: str, value: float) -> None:
        self.values.setdefault((figure, side), []).append(value)
        self.rounds.setdefault((figure, side), []).append(self.round)

    def used(self, phase: str, side: str, sampler: Sampler, key: str | None = None) -> None:
        """The phase's CPU and peak memory of ``key`` (a side or group of the sampler),
        filed under ``side``; the processes at the highest peak seen for ``side``."""
        key = key or side
        self.resources.setdefault((phase, side), []).append(
            {"cpu": sampler.cpu[key], **sampler.peak[key]}
        )
        if sampler.peak[key]["pss"] > self.at_peak.get(side, (0.0, []))[0]:
            self.at_peak[side] = (sampler.peak[key]["pss"], sampler.at_peak[key])

    def median(self, figure: str, side: str) -> float | None:
        values = self.values.get((figure, side))
        return statistics.median(values) if values else None

    def spread(self, figure: str, side: str) -> str:
        """min–max over the rounds."""
        values = self.values.get((figure, side))
        if not values or len(values) < 2:
            return ""
        return f"{_fmt(min(values))}–{_fmt(max(values))}"


def ordered(round_: int, ls: LabelStudio, ours: Ours) -> tuple:
    return (ls, ours) if round_ % 2 == 0 else (ours, ls)


def phase_import(r: int, ls, ours, work: Path, args, figures: Figures, projects: dict) -> None:
    questions = work / "questions.json"
    body = questions.read_bytes()
    records = json.loads(body)
    step = math.ceil(len(records) / 10)
    tenths = [json.dumps(records[i : i + step]).encode() for i in range(0, len(records), step)]
    n = len(records)
    figures.begin(r, "import")
    for side in ordered(r, ls, ours):
        for label, bodies, slot in (("one request", [body], "A"), ("ten requests", tenths, "B")):
            title = f"vs-ls r{r} {label}"
            project = ls.project(title) if side is ls else ours.project(title).pk
            sampling = Sampler({"LS": ls.roots()}) if side is ls else ours.sampler()
            key = "LS" if side is ls else "deployment"
            with sampling as sampler:
                started = time.perf_counter()
                if side is ls:
                    for part in bodies:
                        ls.import_records(project, part)
                else:
                    ours.import_records(project, bodies)
                seconds = time.perf_counter() - started
            if side is ours:
                ours.print_import_breakdown()
            assert side.count(project) == n, (side.name, label, side.count(project), n)
            figures.add(f"import {n:,}, {label}", side.name, n / seconds)
            figures.add(f"import {n:,}, {label}, CPU s", side.name, sampler.cpu[key])
            figures.add(f"import {n:,}, {label}, peak PSS MB", side.name, sampler.peak[key]["pss"])
            figures.used(f"import, {label}", side.name, sampler, key)
            projects[side.name, slot] = project
        if side is ours:
            project = ours.project(f"vs-ls r{r} command", database=False)
            seconds, cpu, rss = ours.import_command(project.slug, questions)
            assert ours.count(project.pk) == n
            figures.add(f"import {n:,}, command (import_bird)", "ours", n / seconds)
            figures.resources.setdefault(("import, command", "ours"), []).append(
                {"cpu": cpu, "rss": rss, "pss": float("nan")}
            )


def projects_without_import(r: int, ls, ours, work: Path, projects: dict) -> None:
    """Two projects of the tasks on each side, imported without timing (--only without import)."""
    from exchange.importers import import_bird

    questions = work / "questions.json"
    for key in ("A", "B"):
        project = ls.project(f"vs-ls r{r} {key}")
        ls.import_records(project, questions.read_bytes())
        projects["LS", key] = project
        mine = ours.project(f"vs-ls r{r} {key}", database=False)
        import_bird(
            project=mine, questions=questions, databases=bench_import().DATABASES, actor=ours.lead
        )
        projects["ours", key] = mine.pk


def phase_list(r: int, ls, ours, args, figures: Figures, projects: dict) -> None:
    rng = random.Random(r)
    n = args.tasks
    ls_pages = our_pages = math.ceil(n / PAGE)
    figures.begin(r, "list")
    for side in ordered(r, ls, ours):
        project = projects[side.name, "A"]
        if side is ls:
            # LS has one list, its API: compared with our API at the same page size (and,
            # for what a browser waits for, with our HTML page of 25).
            base = f"/api/tasks?project={project}&page_size={PAGE}"
            series = {
                (HTML_PAGE_1, "list p1, API"): (
                    ls.client, lambda base=base: base + "&page=1"),
                ("list random page, API",): (
                    ls.client, lambda base=base: f"{base}&page={rng.randint(1, ls_pages)}"),
            }  # fmt: skip
        else:
            series = {
                (HTML_PAGE_1,): (ours.html, lambda p=project: f"/?project={p}"),
                ("list p1, API",): (
                    ours.api, lambda p=project: f"/api/tasks/?project={p}"),
                ("list random page, API",): (
                    ours.api,
                    lambda p=project: f"/api/tasks/?project={p}&page={rng.randint(1, our_pages)}"),
            }  # fmt: skip
        with Sampler({side.name: side.roots()}) as sampler:
            for names, (client, paths) in series.items():
                for keep in (False, True):
                    result = timed_series(client, paths, count=args.requests, keep=keep)
                    for figure in names:
                        record_latency(figures, figure, side.name, keep, result)
        figures.used("list", side.name, sampler)


def phase_task(r: int, ls, ours, args, figures: Figures, projects: dict) -> None:
    rng = random.Random(100 + r)
    figures.begin(r, "task")
    for side in ordered(r, ls, ours):
        ids = side.task_ids(projects[side.name, "A"])
        client = ls.client if side is ls else ours.api
        path = "/api/tasks/{}" if side is ls else "/api/tasks/{}/"
        with Sampler({side.name: side.roots()}) as sampler:
            for keep in (False, True):
                result = timed_series(
                    client,
                    lambda path=path, ids=ids: path.format(rng.choice(ids)),
                    count=args.requests,
                    keep=keep,
                )  # fmt: skip
                record_latency(figures, "one task, API", side.name, keep, result)
        figures.used("task", side.name, sampler)


def record_latency(figures: Figures, figure: str, side: str, keep: bool, result: dict) -> None:
    how = "keep-alive" if keep else "new conn"
    if keep and not result["kept"]:
        note = (
            f"{side}: the server closed every connection (no keep-alive), so its keep-alive "
            "rows are new connections"
        )
        if note not in figures.notes:
            figures.notes.append(note)
    figures.add(f"{figure} [{how}] p50 ms", side, result["p50"])
    figures.add(f"{figure} [{how}] p95 ms", side, result["p95"])


def phase_export(r: int, ls, ours, work: Path, args, figures: Figures, projects: dict) -> None:
    """Each side's export of the one-request project until its file is on disk; ours with two
    worker processes (first export of the project, then the same again), then one worker on
    the ten-request project. CPU: the servers' trees (ours with PostgreSQL and Redis)."""
    n = args.tasks
    figures.begin(r, "export")
    for side in ordered(r, ls, ours):
        if side is ls:
            with Sampler({"LS": ls.roots()}) as sampler:
                seconds, size, count = ls.export(projects["LS", "A"], work / "ls-export.json")
            assert count == n, (count, n)
            figures.add(f"export {n:,} tasks, s", "LS", seconds)
            figures.add(f"export {n:,} tasks, MB", "LS", size / 1e6)
            figures.add(f"export {n:,} tasks, CPU s", "LS", sampler.cpu["LS"])
            figures.add(f"export {n:,} tasks, peak PSS MB", "LS", sampler.peak["LS"]["pss"])
            figures.used("export", "LS", sampler)
            continue
        for concurrency, key in ((2, "A"), (1, "B")):
            ours.start_worker(concurrency)
            workers = f"{concurrency} worker{'s' * (concurrency > 1)}"
            for which in ("first", "again"):
                with ours.sampler() as sampler:
                    seconds, size, download = ours.export(
                        projects["ours", key], work / "ours-export.tar.gz"
                    )
                name = f"export {n:,} tasks, {workers}, {which}"
                figures.add(f"{name}, s", "ours", seconds)
                figures.add(f"{name}, download s", "ours", download)
                figures.add(f"{name}, CPU s", "ours", sampler.cpu["deployment"])
                figures.add(f"{name}, peak PSS MB", "ours", sampler.peak["deployment"]["pss"])
                figures.used(f"export ({workers}, {which})", "ours", sampler, "deployment")
                figures.cpu_each.setdefault(f"export ({workers}, {which})", []).append(
                    {k: v for side in sampler.cpu_each.values() for k, v in side.items()}
                )
            figures.add(f"export {n:,} tasks, MB", "ours", size / 1e6)
            ours.count_oracle_lines()


def phase_memory(ours: Ours, work: Path, processes: Processes, port: int, figures: Figures):
    """Per gunicorn worker: the documented command after an ask_human question through each,
    and one started with HILBENCH_PRELOAD=0 that has served pages only."""
    from web_memory import memory, workers_of

    from hilbench_annotate.models import Task

    task_ids = list(Task.objects.order_by("pk").values_list("pk", flat=True)[: WEB_WORKERS * 3])
    for task in task_ids:  # sequential requests: every worker gets some
        run = ours.api.json("POST", "/api/ask_human/runs", {"task": task, "label": "vs-ls"},
                            ok=(200, 201))  # fmt: skip
        question = {"run": run["run"], "question": "Which week counts as the first one?"}
        ours.api.json("POST", "/api/ask_human", question)
    ready = [memory(pid) for pid in workers_of(ours.process.pid)]
    log = work / "ours-no-judge.log"
    plain = processes.start(
        [sys.executable, "-m", "gunicorn", "hilbench_annotate.wsgi", *GUNICORN,
         "--bind", f"127.0.0.1:{port}"],
        env={**ours.env, "HILBENCH_PRELOAD": "0"}, log=log,
    )  # fmt: skip
    try:
        wait_until_up(port, "/login/", plain, log, timeout=600)
        for _ in range(WEB_WORKERS * 4):
            Client(port, {}).call("GET", "/login/")
        time.sleep(1)
        without = [memory(pid) for pid in workers_of(plain.pid)]
    finally:
        processes.stop(plain)
    return ready, without


# --- the report -------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}" if abs(value) < 100 or digits == 0 else f"{value:,.0f}"


def report(figures: Figures, args, mode: str, memory_result) -> None:
    n = args.tasks
    pg = mode.startswith("PostgreSQL")
    rows: list[tuple[str, ...]] = []

    def row(label, figure=None, ls_value=None, ours_value=None, ratio=None, threshold="",
            digits=1):  # fmt: skip
        """A figure's medians (``figure``: its name for both sides, with the spread over
        rounds), or the values given."""
        spread_ls = spread_ours = ""
        if figure is not None:
            ls_value, ours_value = figures.median(figure, "LS"), figures.median(figure, "ours")
            spread_ls, spread_ours = figures.spread(figure, "LS"), figures.spread(figure, "ours")
            if ratio is None and ls_value and ours_value is not None:
                ratio = ours_value / ls_value
        shown = "—" if ratio is None else f"{ratio:.2f}×"
        rows.append((label, _fmt(ls_value, digits), spread_ls, _fmt(ours_value, digits),
                     spread_ours, shown, threshold))  # fmt: skip

    def verdict(ratio, limit, words):
        if ratio is None:
            return ""
        return f"≤ {words}" + (" ok" if ratio <= limit else " MISSED")

    ls_one = figures.median(f"import {n:,}, one request", "LS")
    for label in ("one request", "ten requests", "command (import_bird)"):
        ls_rate = figures.median(f"import {n:,}, {label}", "LS")
        ours_rate = figures.median(f"import {n:,}, {label}", "ours")
        if ours_rate is None:
            continue
        base = ls_rate if ls_rate is not None else ls_one
        ratio = ours_rate / base if base else None
        threshold = "≥ 2× LS one request (31)" if label != "ten requests" else ""
        if threshold and ratio is not None:
            threshold += " ok" if ratio >= 2 else " MISSED"
        row(f"import {n:,}, {label}: tasks/s", f"import {n:,}, {label}", ratio=ratio,
            threshold=threshold, digits=0)  # fmt: skip
        row("   seconds", None, n / ls_rate if ls_rate else None, n / ours_rate)
        for what in ("CPU s", "peak PSS MB"):
            if figures.median(f"import {n:,}, {label}, {what}", "ours") is not None:
                row(f"   {what}", f"import {n:,}, {label}, {what}")

    latency = list(dict.fromkeys(f for f, _ in figures.values if f.endswith(" ms")))
    for figure in latency:
        limit, words = LIMITS.get(figure.split(" [")[0], (None, ""))
        ls_value, ours_value = figures.median(figure, "LS"), figures.median(figure, "ours")
        ratio = ours_value / ls_value if ls_value and ours_value is not None else None
        threshold = ""
        if limit and "[new conn] p50" in figure:
            threshold = verdict(ratio, limit, words + " (31)")
        row(figure, figure, threshold=threshold)

    # Issue 46: the export a user waits for (until the file is on disk), its CPU (ours with
    # PostgreSQL's and Redis'), its bytes.
    ls_export = f"export {n:,} tasks"
    ls_seconds = figures.median(f"{ls_export}, s", "LS")
    ls_cpu = figures.median(f"{ls_export}, CPU s", "LS")
    for workers in ("2 workers", "1 worker"):
        for which in ("first", "again"):
            name = f"export {n:,} tasks, {workers}, {which}"
            seconds = figures.median(f"{name}, s", "ours")
            if seconds is None:
                continue
            ratio = seconds / ls_seconds if ls_seconds else None
            threshold = verdict(ratio, 1.0, "1× (46)") if workers == "2 workers" else ""
            row(f"export ({workers}, {which}): s to disk", None, ls_seconds, seconds, ratio,
                threshold)  # fmt: skip
            row(
                "   of which the download, s",
                None,
                None,
                figures.median(f"{name}, download s", "ours"),
            )
            cpu = figures.median(f"{name}, CPU s", "ours")
            ratio = cpu / ls_cpu if ls_cpu and cpu is not None else None
            threshold = verdict(ratio, 1.0, "1× (46)") if workers == "2 workers" else ""
            label = "   CPU s" + (" (with PostgreSQL, Redis)" if pg else "")
            row(label, None, ls_cpu, cpu, ratio, threshold)
    if ls_seconds is not None:
        mb = figures.median(f"{ls_export}, MB", "ours")
        ls_mb = figures.median(f"{ls_export}, MB", "LS")
        ratio = mb / ls_mb if ls_mb and mb is not None else None
        row(f"export {n:,} tasks: MB downloaded", f"{ls_export}, MB",
            threshold=verdict(ratio, 5.0, "5× (46)"))  # fmt: skip

    # Issue 46: the whole deployment's PSS at its peak over the import and the export.
    peaks: dict[str, list[float]] = {}
    for (figure, side), values in figures.values.items():
        if figure.endswith("peak PSS MB"):
            for round_, value in zip(figures.rounds[figure, side], values, strict=True):
                by_round = peaks.setdefault(side, [])
                by_round.extend([0.0] * (round_ + 1 - len(by_round)))
                by_round[round_] = max(by_round[round_], value)
    if "LS" in peaks and "ours" in peaks:
        ls_peak, ours_peak = statistics.median(peaks["LS"]), statistics.median(peaks["ours"])
        row("peak PSS over import and export, MB" + (" (with PG, Redis)" if pg else ""), None,
            ls_peak, ours_peak, ours_peak / ls_peak,
            verdict(ours_peak / ls_peak, 2.0, "2× (46)"), digits=0)  # fmt: skip

    width = max(len(r[0]) for r in rows)
    print(f"\nmedians over {args.rounds} round(s) (min–max beside), {n:,} tasks, ours on {mode}"
          "; Label Studio without error reports, version check or analytics\n")  # fmt: skip
    print(f"{'figure':{width}} {'LS':>9} {'':13} {'ours':>9} {'':13} {'ours/LS':>8}  threshold")
    for label, ls_value, ls_spread, ours_value, ours_spread, ratio, threshold in rows:
        print(f"{label:{width}} {ls_value:>9} {ls_spread:13} {ours_value:>9} {ours_spread:13} "
              f"{ratio:>8}  {threshold}")  # fmt: skip

    print("\neach round (the load average when the phase began):")
    for (figure, side), values in figures.values.items():
        if " ms" in figure or not figure.startswith(("export", "import")):
            continue
        cells = []
        for round_, value in zip(figures.rounds[figure, side], values, strict=True):
            phase = figure.split()[0]
            load = figures.loads.get((round_, phase), "?").split()[0]
            cells.append(f"r{round_ + 1} {_fmt(value)} (load {load})")
        print(f"  {side:4} {figure}: " + "; ".join(cells))

    if figures.resources:
        print("\nserver CPU seconds and peak memory per phase (median over rounds; MB summed "
              "over the process tree" + ("; ours with PostgreSQL and Redis" if pg else "")
              + ")\n")  # fmt: skip
        print(f"{'phase':30} {'side':5} {'CPU s':>7} {'RSS MB':>8} {'PSS MB':>8}")
        for (phase, side), values in figures.resources.items():
            med = {k: statistics.median(v[k] for v in values) for k in ("cpu", "rss", "pss")}
            print(
                f"{phase:30} {side:5} {med['cpu']:7.1f} {med['rss']:8.0f} {_fmt(med['pss'], 0):>8}"
            )
    for phase, by_round in figures.cpu_each.items():
        kinds = sorted({k for each in by_round for k in each})
        cells = [f"{k} {statistics.median(e.get(k, 0.0) for e in by_round):.1f}" for k in kinds]
        print(f"  CPU s by process, {phase}: " + ", ".join(cells))
    for side, (pss, each) in figures.at_peak.items():
        print(f"\n{side} at its highest peak, {pss:,.0f} MB PSS: what each process held (MB)")
        grouped: dict[str, list[tuple[float, float]]] = {}
        for label, value, own in each:
            grouped.setdefault(label, []).append((value, own))
        print(f"  {'process':34} PSS (of which its own, USS)")
        for label, values in sorted(grouped.items(), key=lambda item: -sum(v for v, _ in item[1])):
            cells = ", ".join(f"{v:.0f} ({own:.0f})" for v, own in values)
            print(f"  {label:34} {len(values):2} × {cells}")

    if memory_result:
        ready, without = memory_result
        print("\nper gunicorn worker (MB, median of the workers): RSS / PSS / USS")
        meds = []
        for label, workers in (("judge ready (--preload, after ask_human)", ready),
                               ("no judge (HILBENCH_PRELOAD=0)", without)):  # fmt: skip
            med = {k: statistics.median(w[k] for w in workers) for k in ("rss", "pss", "uss")}
            meds.append(med)
            print(f"  {label:42} {med['rss']:6.0f} {med['pss']:6.0f} {med['uss']:6.0f}")
        above = meds[0]["rss"] - meds[1]["rss"]
        print(f"  RSS above a worker without the judge: {above:+.0f} MB (threshold ≤ 250 MB: "
              f"{'ok' if above <= 250 else 'MISSED'}); PSS {meds[0]['pss'] - meds[1]['pss']:+.0f},"
              f" USS {meds[0]['uss'] - meds[1]['uss']:+.0f}")  # fmt: skip
    if pg:
        figures.notes.append(
            "ours' CPU and memory count PostgreSQL's and Redis' processes (every one on this "
            "machine: nothing else may use them during the run)"
        )
    for note in figures.notes:
        print(f"note: {note}")


# --- main -------------------------------------------------------------------------------------


def fresh_postgres(url: str) -> tuple[str, str]:
    """A new database next to the one ``url`` names: (its url, its name)."""
    import psycopg

    name = f"hilbench_vs_ls_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path="/" + name)), name


def drop_postgres(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def free_port() -> int:
    from load import _free_port  # bench/load.py

    return _free_port()


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=30, help="per latency series")
    parser.add_argument("--ls-venv", type=Path, default=DEFAULT_LS_VENV)
    parser.add_argument("--skip-install", action="store_true", help="never install LS")
    parser.add_argument("--only", default=",".join(PHASES), help="comma-separated phases")
    args = parser.parse_args()
    phases = [p.strip() for p in args.only.split(",") if p.strip()]
    if unknown := set(phases) - set(PHASES):
        parser.error(f"unknown phase(s) {', '.join(sorted(unknown))}; choose from {PHASES}")
    script = ls_install(args.ls_venv, skip=args.skip_install)

    def interrupted(*_):  # SIGTERM as Ctrl-C: the clean-up below runs
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    work = Path(tempfile.mkdtemp(prefix="bench-vs-ls-"))
    # Our deployment's var folder is under it: the sandbox user must reach it, or no oracle
    # runs and every task's export pays for finding that out (its validation.json says so).
    work.chmod(0o711)
    processes = Processes()
    admin_url, pg_name = os.environ.get("DATABASE_URL", ""), None
    try:
        (work / "ours").mkdir()
        env = {
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "vs-ls-bench-" + os.urandom(16).hex(),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            # Plain HTTP on loopback: the session cookie must come back over it.
            "DJANGO_SECURE_COOKIES": "0",
            "HILBENCH_VAR_DIR": str(work / "ours"),
            "HILBENCH_SQLITE_PATH": str(work / "ours" / "db.sqlite3"),
        }
        if admin_url:
            env["DATABASE_URL"], pg_name = fresh_postgres(admin_url)
        os.environ.update(env)
        configure("vs-label-studio.sqlite3")  # the paths above win: set already
        fresh_database(drop_broker=True)
        from django.conf import settings

        database = "PostgreSQL" if admin_url else "SQLite"
        mode = f"{database} + {'embedded broker' if settings.EMBEDDED_BROKER else 'Redis'}"
        bench_import().write_questions(work / "questions.json", args.tasks)
        print(f"load average before: {load_average()} ({os.cpu_count()} cores)", flush=True)

        ls = LabelStudio(script, work / "ls", processes, free_port())
        ours = Ours(work / "ours", processes, free_port(), {**os.environ})
        if admin_url:
            ours.services = service_roots()
            print("counted with ours: " + ", ".join(
                f"{name} ({len(pids)} server)" for name, pids in ours.services.items()
            ) or "no PostgreSQL or Redis process found", flush=True)  # fmt: skip
        started = time.perf_counter()
        ls.start()
        print(f"Label Studio {LS_VERSION} up on :{ls.port} ({time.perf_counter() - started:.0f} s)")
        ours.start()
        print(f"ours up on :{ours.port} (gunicorn {' '.join(GUNICORN)})", flush=True)
        figures, memory_result = Figures(), None
        for r in range(args.rounds):
            projects: dict = {}
            first = "LS" if r % 2 == 0 else "ours"
            print(f"round {r + 1}/{args.rounds} ({first} first), load {load_average()}", flush=True)
            if "import" in phases or "export" in phases:
                ours.start_worker(2)
            if "import" in phases:
                phase_import(r, ls, ours, work, args, figures, projects)
            elif {"list", "task", "export"} & set(phases):
                projects_without_import(r, ls, ours, work, projects)
            if "list" in phases:
                phase_list(r, ls, ours, args, figures, projects)
            if "task" in phases:
                phase_task(r, ls, ours, args, figures, projects)
            if "export" in phases:
                phase_export(r, ls, ours, work, args, figures, projects)
            ours.stop_worker()
        if "memory" in phases:
            memory_result = phase_memory(ours, work, processes, free_port(), figures)
        print(f"load average after: {load_average()}")
        report(figures, args, mode, memory_result)
        if ours.oracle_lines:
            print("ours' exported tasks, by what their oracle runs said: " + "; ".join(
                f"{line or '(none)'}: {count}" for line, count in ours.oracle_lines.most_common()
            ))  # fmt: skip
    except KeyboardInterrupt:
        print("\ninterrupted: stopping the servers and removing the temporary folder")
        sys.exit(130)
    finally:
        processes.stop_all()
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        if pg_name:
            drop_postgres(admin_url, pg_name)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
