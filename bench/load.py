"""Many concurrent users against a real server, PostgreSQL, Redis and Celery workers.

    DATABASE_URL=postgres://… CELERY_BROKER_URL=redis://… \\
    .venv/bin/python bench/load.py [--authors 12] [--reviewers 6] [--harnesses 6] \\
        [--duration 60] [--server-workers 2] [--threads 8] [--celery-workers 2] [--ci]

Empties the database named by DATABASE_URL (never point it at real data), seeds a project
of demo SQL tasks with blockers, starts gunicorn on loopback and Celery workers, then for
``--duration`` seconds drives simulated users over HTTP, each on its own connection:

- authors edit tasks in the workspace and autosave them (the form the page posts, with its
  ``expected_version`` and its editing session: the autosaves of one open page fold into
  one revision); every author may edit every task (authors are also leads), so two
  of them sometimes save the same task at once: the loser gets 409, refetches the
  workspace and saves again (counted as conflicts, not errors). Every fifth save also
  starts a validation run (a Celery job);
- reviewers take the oldest task from the reviewer layer's queue (``SELECT … FOR UPDATE
  SKIP LOCKED``), read it and release it;
- evaluation harnesses start ``ask_human`` runs with a token and ask questions.

Prints requests, throughput and p50 / p95 / p99 latency per endpoint (client-measured,
over HTTP) and the error count, then checks the database: every accepted save is in exactly
one revision (no gap, no duplicate number; the revisions' saves add up to the accepted
saves), every ask_human answer is logged once, no task
was ever held by two reviewers, every validation run finished with one result per check.
Exits 1 when anything is wrong. ``--ci`` is a reduced run for the test suite.
"""

import argparse
import contextlib
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

from _setup import ROOT, configure, fresh_database, start_worker  # noqa: E402 - sibling module

configure("load.sqlite3")

PASSWORD = "load-bench-password-1"  # bench users only, in a database the bench empties
REVIEW_LAYER = 5  # the default pipeline's judge-validation labelling layer (reviewer role)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--authors", type=int, default=12)
    parser.add_argument("--reviewers", type=int, default=6)
    parser.add_argument("--harnesses", type=int, default=6)
    parser.add_argument("--duration", type=float, default=60, help="seconds of load")
    parser.add_argument("--server-workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn process")
    parser.add_argument("--celery-workers", type=int, default=2)
    parser.add_argument("--think-ms", type=float, default=50, help="mean pause between actions")
    parser.add_argument("--ci", action="store_true", help="reduced run for the test suite")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.ci:
        args.authors, args.reviewers, args.harnesses = 4, 3, 3
        args.duration, args.server_workers, args.threads, args.celery_workers = 12, 1, 6, 1

    database, broker = os.environ.get("DATABASE_URL", ""), os.environ.get("CELERY_BROKER_URL", "")
    if not database.startswith("postgres") or not broker.startswith("redis"):
        raise SystemExit(
            "bench/load.py needs DATABASE_URL=postgres://… and CELERY_BROKER_URL=redis://…"
        )
    fresh_database()
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0)
    world = seed(args)
    print(
        f"seeded {len(world['edit_tasks'])} tasks to edit, {len(world['review_tasks'])} in the "
        f"review queue, {len(world['eval_tasks'])} to evaluate; {args.authors} authors, "
        f"{args.reviewers} reviewers, {args.harnesses} harnesses for {args.duration:.0f} s"
    )
    env = _service_env()
    port = _free_port()
    procs = []
    try:
        procs.append(_start_server(env, port, args.server_workers, args.threads))
        procs += [_start_worker(env, i) for i in range(args.celery_workers)]
        base = f"http://127.0.0.1:{port}"
        _wait_for(base + "/login/", 60)
        stats = Stats()
        run_load(base, world, args, stats)
        stats.jobs = _wait_for_jobs(stats, 120)
        problems = check_database(world, stats)
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    figures = report(stats, args.duration, problems)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if figures["errors"] else 0


# --- seeding ------------------------------------------------------------------------------------


def seed(args) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from exchange.demo import sql_demo
    from exchange.demo.blocked_task import BLOCKED_QUESTION, DEMO_BLOCKERS
    from exchange.importers import import_bird
    from hilbench_annotate import services
    from hilbench_annotate.models import Membership, Project, Task
    from hilbench_annotate.services.tokens import api_token_create
    from review.services import pipeline_ensure

    User = get_user_model()
    project = Project.objects.create(name="Load bench", slug="load-bench")
    pipeline_ensure(project)

    def user(name: str, *roles: str):
        person = User.objects.create(username=name)
        person.set_password(PASSWORD)
        person.save()
        for role in roles:
            Membership.objects.create(project=project, user=person, role=role)
        return person

    authors = [user(f"load-author-{i}", "author", "lead") for i in range(args.authors)]
    reviewers = [user(f"load-reviewer-{i}", "reviewer") for i in range(args.reviewers)]
    harnesses = [user(f"load-harness-{i}", "harness") for i in range(args.harnesses)]

    n_edit = max(2, 2 * args.authors)  # two tasks per author: concurrent edits do happen
    n_review = max(3, 2 * args.reviewers)
    n_eval = 6
    paths = sql_demo.build(Path(tempfile.mkdtemp(prefix="load-bench-")) / "sql")
    records = json.loads(paths["questions"].read_text())
    copies = math.ceil((n_edit + n_review + n_eval) / len(records))
    many = [
        {**r, "question_id": copy * 1000 + r["question_id"]}
        for copy in range(copies)
        for r in records
    ]
    paths["questions"].write_text(json.dumps(many))
    import_bird(
        project=project,
        questions=paths["questions"],
        databases=paths["databases"],
        actor=authors[0],
    )
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    for task in tasks:
        with transaction.atomic():
            task = Task.objects.select_for_update().get(pk=task.pk)
            services.task_update(
                task=task,
                actor=authors[0],
                expected_version=task.version,
                blocked_spec={"question": BLOCKED_QUESTION, "evidence": ""},
            )
            for blocker in DEMO_BLOCKERS:
                services.blocker_create(
                    task=task, actor=authors[0], expected_version=task.version, **blocker
                )
    edit = tasks[:n_edit]
    review = tasks[n_edit : n_edit + n_review]
    evaluate = tasks[n_edit + n_review : n_edit + n_review + n_eval]
    # The review queue, seeded directly: these tasks wait at the reviewer layer.
    Task.objects.filter(pk__in=[t.pk for t in review]).update(
        status="in_review", review_layer=REVIEW_LAYER, layer_entered_at=timezone.now()
    )
    return {
        "project": project.pk,
        "authors": [a.username for a in authors],
        "reviewers": {r.username: api_token_create(user=r, name="load")[1] for r in reviewers},
        "harnesses": {h.username: api_token_create(user=h, name="load")[1] for h in harnesses},
        "edit_tasks": [t.pk for t in edit],
        "review_tasks": [t.pk for t in review],
        "eval_tasks": [t.pk for t in evaluate],
        "trigger_questions": [q for b in DEMO_BLOCKERS for q in b["trigger_questions"]],
    }


# --- processes ---------------------------------------------------------------------------------


def _service_env() -> dict[str, str]:
    from django.conf import settings

    return {
        **os.environ,
        "HILBENCH_VAR_DIR": str(settings.VAR_DIR),
        "HILBENCH_DATABASE_STORE": str(settings.DATABASE_STORE),
        "HILBENCH_REPOSITORY_STORE": str(settings.REPOSITORY_STORE),
        "HILBENCH_UPLOAD_STORE": str(settings.UPLOAD_STORE),
        # As deployed: DEBUG off (no query log kept per request), plain HTTP on loopback.
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "load-bench-" + os.urandom(16).hex(),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_COOKIES": "0",
        # The harnesses ask far faster than an agent does: limits high enough never to
        # refuse them, but still checked, so their queries are part of what is measured.
        "HILBENCH_ASK_HUMAN_RATE_PER_TOKEN": "1000000/60",
        "HILBENCH_ASK_HUMAN_RUN_RATE_PER_TASK": "1000000/60",
        "HILBENCH_ASK_HUMAN_SESSION_ANSWER_CAP": "1000000",
    }


def _server_log() -> Path:
    from django.conf import settings

    return settings.VAR_DIR / "load-server.log"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_server(env, port: int, workers: int, threads: int) -> subprocess.Popen:
    # Its log (a warning per 409, tracebacks if any) goes to a file, printed on errors.
    log = open(_server_log(), "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "hilbench_annotate.wsgi:application",
            f"--bind=127.0.0.1:{port}",
            f"--workers={workers}",
            "--worker-class=gthread",
            f"--threads={threads}",
            "--timeout=120",
            "--log-level=warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _start_worker(env, index: int) -> subprocess.Popen:
    return start_worker(f"load{index}", env)


def _wait_for(url: str, timeout: float) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=5).status_code == 200:
                return
        time.sleep(0.3)
    raise SystemExit(f"the server did not answer {url} within {timeout:.0f} s")


# --- measuring ---------------------------------------------------------------------------------


class Stats:
    """Latencies per endpoint, errors (with a sample), conflicts, and what was accepted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.samples: list[str] = []
        self.conflicts = 0
        # task → the revision number of each accepted save (a session's autosaves share one)
        self.saves: dict[int, list[int]] = defaultdict(list)
        self.answers = 0  # ask_human answers the server returned
        self.runs: list[int] = []  # ask_human runs
        self.validation_runs: list[int] = []
        self.takes = 0
        self.held: dict[int, str] = {}  # task → reviewer holding it (as seen by clients)
        self.jobs: dict = {}

    def time(self, endpoint: str, seconds: float) -> None:
        with self.lock:
            self.times[endpoint].append(seconds * 1000)

    def error(self, endpoint: str, what: str) -> None:
        with self.lock:
            self.errors[endpoint] += 1
            if len(self.samples) < 10:
                self.samples.append(f"{endpoint}: {what}"[:300])


def _call(stats: Stats, endpoint: str, method, url: str, ok=(200,), **kwargs):
    """One request, timed; anything but an ``ok`` status (or an exception) is an error."""
    import requests

    started = time.perf_counter()
    try:
        response = method(url, timeout=60, allow_redirects=False, **kwargs)
    except requests.RequestException as exc:
        stats.error(endpoint, repr(exc))
        return None
    stats.time(endpoint, time.perf_counter() - started)
    if response.status_code not in ok:
        stats.error(endpoint, f"{response.status_code} {response.text[:200]}")
        return None
    return response


class _WorkspaceForm(HTMLParser):
    """The fields a browser would post from ``<form id="workspace">``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fields: list[tuple[str, str]] = []
        self._in_form = False
        self._textarea: str | None = None
        self._text: list[str] = []
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []
        self._option: list | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and a.get("id") == "workspace":
            self._in_form = True
        if not self._in_form:
            return
        if tag == "input" and a.get("name"):
            kind = (a.get("type") or "text").lower()
            if kind in {"button", "submit", "file", "reset"}:
                return
            if kind in {"checkbox", "radio"}:
                if "checked" in a:
                    self.fields.append((a["name"], a.get("value") or "on"))
                return
            self.fields.append((a["name"], a.get("value") or ""))
        elif tag == "textarea" and a.get("name"):
            self._textarea, self._text = a["name"], []
        elif tag == "select" and a.get("name"):
            self._select, self._options = a["name"], []
        elif tag == "option" and self._select is not None:
            self._option = [a.get("value"), "selected" in a, []]

    def handle_data(self, data):
        if self._textarea is not None:
            self._text.append(data)
        if self._option is not None:
            self._option[2].append(data)

    def handle_endtag(self, tag):
        if tag == "form" and self._in_form:
            self._in_form = False
        elif tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            # A browser drops one newline right after <textarea>.
            self.fields.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None
        elif tag == "option" and self._option is not None:
            value, selected, text = self._option
            self._options.append((value if value is not None else "".join(text), selected))
            self._option = None
        elif tag == "select" and self._select is not None:
            chosen = [v for v, s in self._options if s] or [v for v, _ in self._options[:1]]
            if chosen:
                self.fields.append((self._select, chosen[0]))
            self._select = None


def _login(base: str, username: str):
    import requests

    session = requests.Session()
    session.get(base + "/login/", timeout=30)
    response = session.post(
        base + "/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        timeout=60,
        allow_redirects=False,
    )
    if response.status_code != 302:
        raise SystemExit(f"{username} could not log in: {response.status_code}")
    return session


def _pause(rng: random.Random, think_ms: float) -> None:
    if think_ms > 0:
        time.sleep(rng.expovariate(1000 / think_ms))


def _workspace_fields(stats: Stats, session, base: str, task_id: int):
    page = _call(stats, "workspace page", session.get, f"{base}/tasks/{task_id}/edit/")
    if page is None:
        return None
    form = _WorkspaceForm()
    form.feed(page.text)
    return form.fields


_MARK = re.compile(r" \[load-author-\d+ edit \d+\]$")


def _autosave(stats: Stats, session, base, task_id, fields, mark: str, rng, think_ms, deadline):
    """Post the edited form as the page's autosave; on 409 reload the co-author's version
    (a new page: a new editing session) and edit it again.

    Returns the form as the page holds it afterwards (the new expected_version), or None
    (an error, or the run ended while the edit was still being retried).
    """
    headers = {"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true"}
    while True:
        edited = [
            (k, _MARK.sub("", v) + f" [{mark}]" if k == "spec.question" else v) for k, v in fields
        ]
        edited = [(k, v) for k, v in edited if k != "autosave"] + [("autosave", "1")]
        response = _call(
            stats,
            "autosave",
            session.post,
            f"{base}/tasks/{task_id}/edit/save/",
            ok=(200, 409),
            data=edited,
            headers=headers,
        )
        if response is None:
            return None
        if response.status_code == 200:
            revision = re.search(r"revision (\d+)", response.text)
            version = re.search(r'name="expected_version" value="(\d+)"', response.text)
            if not revision or not version:
                stats.error("autosave", "200 without a revision number: " + response.text[:200])
                return None
            with stats.lock:
                stats.saves[task_id].append(int(revision.group(1)))
            # The page takes the new version (htmx out-of-band swap).
            return [(k, version.group(1) if k == "expected_version" else v) for k, v in edited]
        with stats.lock:
            stats.conflicts += 1
        if time.monotonic() >= deadline:
            return None
        fields = _workspace_fields(stats, session, base, task_id)
        if fields is None:
            return None
        _pause(rng, think_ms)  # reading their version before typing the edit again


def author_loop(base, username, world, stats: Stats, deadline, think_ms, seed_) -> None:
    rng = random.Random(seed_)
    session = _login(base, username)
    saves = 0
    while time.monotonic() < deadline:
        task_id = rng.choice(world["edit_tasks"])
        fields = _workspace_fields(stats, session, base, task_id)
        # A few edits on the open page, each autosaved.
        for _ in range(rng.randint(1, 4)):
            if fields is None or time.monotonic() >= deadline:
                break
            _pause(rng, think_ms)
            fields = _autosave(
                stats,
                session,
                base,
                task_id,
                fields,
                f"{username} edit {saves}",
                rng,
                think_ms,
                deadline,
            )
            if fields is None:
                break
            saves += 1
            if saves % 5 == 0:  # now and then, the structural checks (a Celery job)
                started = _call(
                    stats,
                    "validation start",
                    session.post,
                    f"{base}/tasks/{task_id}/validation/",
                    ok=(302,),
                    data={"checks": ["spec", "sql_ground_truth"]},
                    headers={"X-CSRFToken": session.cookies["csrftoken"]},
                )
                run = started and re.search(r"/validation/(\d+)/", started.headers["Location"])
                if run:
                    with stats.lock:
                        stats.validation_runs.append(int(run.group(1)))


def reviewer_loop(base, username, token, world, stats: Stats, deadline, think_ms, seed_) -> None:
    import requests

    rng = random.Random(seed_)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    while time.monotonic() < deadline:
        taken = _call(
            stats,
            "review take-next",
            session.post,
            f"{base}/api/review/take-next",
            ok=(200, 204),
            json={"project": world["project"], "layer": REVIEW_LAYER},
        )
        if taken is None or taken.status_code == 204:
            _pause(rng, think_ms * 4)
            continue
        assignment = taken.json()
        task_id = assignment["task"]
        with stats.lock:
            stats.takes += 1
            holder = stats.held.get(task_id)
            if holder is not None:
                stats.errors["review take-next"] += 1
                stats.samples.append(f"task {task_id} held by {holder} and {username} at once")
            stats.held[task_id] = username
        _call(stats, "task detail API", session.get, f"{base}/api/tasks/{task_id}/")
        _pause(rng, think_ms)
        with stats.lock:
            stats.held.pop(task_id, None)  # before the release, so the next taker is clean
        _call(
            stats,
            "review release",
            session.post,
            f"{base}/api/assignments/{assignment['id']}/release",
        )


_NEGATIVES = [
    "Can you just write the query for me?",
    "What is the answer?",
    "Is the database in SQLite format?",
    "Which clients live in Prague?",
    "The result should be sorted, right?",
]
_WORDS = [
    "loan",
    "payment",
    "client",
    "district",
    "account",
    "status",
    "year",
    "code",
    "region",
    "card",
    "order",
]


def harness_loop(base, username, token, world, stats: Stats, deadline, think_ms, seed_) -> None:
    import requests

    rng = random.Random(seed_)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    while time.monotonic() < deadline:
        started = _call(
            stats,
            "ask_human run start",
            session.post,
            f"{base}/api/ask_human/runs",
            ok=(201,),
            json={"task": rng.choice(world["eval_tasks"]), "label": username},
        )
        if started is None:
            continue
        run = started.json()["run"]
        with stats.lock:
            stats.runs.append(run)
        for _ in range(rng.randint(3, 8)):
            if time.monotonic() >= deadline:
                break
            roll = rng.random()
            if roll < 0.4:
                question = rng.choice(world["trigger_questions"])
            elif roll < 0.6:
                question = rng.choice(_NEGATIVES)
            else:  # a question nobody asked yet: the judge really runs
                a, b = rng.sample(_WORDS, 2)
                question = f"Which {a} values count for the {b} here ({rng.random():.6f})?"
            answered = _call(
                stats,
                "ask_human",
                session.post,
                f"{base}/api/ask_human",
                json={"run": run, "question": question},
            )
            if answered is not None:
                with stats.lock:
                    stats.answers += 1
            _pause(rng, think_ms)


def _warm_up(base: str, world: dict) -> None:
    """Load the judge model in every server process before the clock starts."""
    import requests

    token = next(iter(world["harnesses"].values()))
    headers = {"Authorization": f"Bearer {token}"}
    run = requests.post(
        base + "/api/ask_human/runs",
        json={"task": world["eval_tasks"][0], "label": "warm-up"},
        headers=headers,
        timeout=120,
    ).json()["run"]

    def ask(i: int) -> None:
        requests.post(
            base + "/api/ask_human",
            json={"run": run, "question": f"Warm-up question {i}?"},
            headers=headers,
            timeout=120,
        )

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run_load(base: str, world: dict, args, stats: Stats) -> None:
    _warm_up(base, world)
    deadline = time.monotonic() + args.duration
    threads = []
    for i, name in enumerate(world["authors"]):
        threads.append((author_loop, (base, name, world, stats, deadline, args.think_ms, i)))
    for i, (name, token) in enumerate(world["reviewers"].items()):
        threads.append(
            (reviewer_loop, (base, name, token, world, stats, deadline, args.think_ms, 100 + i))
        )
    for i, (name, token) in enumerate(world["harnesses"].items()):
        threads.append(
            (harness_loop, (base, name, token, world, stats, deadline, args.think_ms, 200 + i))
        )

    def guarded(target, target_args):
        try:
            target(*target_args)
        except Exception as exc:  # noqa: BLE001 - a crashed user is an error, reported
            stats.error(target.__name__, repr(exc))

    running = [threading.Thread(target=guarded, args=t) for t in threads]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()


def _wait_for_jobs(stats: Stats, timeout: float) -> dict:
    from validators.models import ValidationRun

    deadline = time.monotonic() + timeout
    runs = ValidationRun.objects.filter(pk__in=stats.validation_runs)
    while runs.exclude(status__in=ValidationRun.FINISHED).exists():
        if time.monotonic() > deadline:
            break
        time.sleep(0.3)
    waits = sorted(
        (r.finished_at - r.created_at).total_seconds() * 1000
        for r in runs
        if r.finished_at is not None
    )
    return {"queued": len(stats.validation_runs), "finished": len(waits), "ms": waits}


# --- checking -----------------------------------------------------------------------------------


def check_database(world: dict, stats: Stats) -> list[str]:
    """What the database must show after the run; each problem counts as an error."""
    from django.db.models import Count, Sum

    from hilbench_annotate.models import Revision, Task
    from judge.models import AskHumanCall
    from review.models import ReviewAssignment
    from validators.models import ValidationResult, ValidationRun

    problems = []
    for task_id in world["edit_tasks"]:
        numbers = list(
            Revision.objects.filter(task_id=task_id)
            .order_by("number")
            .values_list("number", flat=True)
        )
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append(f"task {task_id}: revision numbers {numbers} have a gap or repeat")
        accepted = stats.saves.get(task_id, [])
        if not set(accepted) <= set(numbers):
            problems.append(f"task {task_id}: accepted revisions {accepted} missing from {numbers}")
        version = Task.objects.values_list("version", flat=True).get(pk=task_id)
        # Each accepted save is held by exactly one workspace revision: the autosaves of one
        # session folded into one count as its saves, and none was lost or counted twice.
        workspace = Revision.objects.filter(task_id=task_id, reason="saved in workspace")
        saved = workspace.aggregate(n=Sum("saves"))["n"] or 0
        if saved != len(accepted):
            problems.append(
                f"task {task_id}: workspace revisions hold {saved} saves, not {len(accepted)}"
            )
        if workspace.count() > len(set(accepted)):
            problems.append(f"task {task_id}: a workspace revision no accepted save reported")
        if numbers and version < numbers[-1]:
            problems.append(f"task {task_id}: version {version} behind revision {numbers[-1]}")
    logged = AskHumanCall.objects.filter(run_id__in=stats.runs).count()
    if logged != stats.answers:
        problems.append(f"{stats.answers} ask_human answers but {logged} logged calls")
    doubled = (
        ReviewAssignment.objects.filter(status="active")
        .values("task_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    if doubled.exists():
        problems.append(f"tasks with two active assignments: {list(doubled)}")
    unfinished = ValidationRun.objects.filter(pk__in=stats.validation_runs).exclude(
        status__in=ValidationRun.FINISHED
    )
    if unfinished.exists():
        problems.append(f"{unfinished.count()} validation runs never finished")
    repeated = (
        ValidationResult.objects.filter(run_id__in=stats.validation_runs)
        .values("run_id", "check_name")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    if repeated.exists():
        problems.append(f"validation results stored twice: {list(repeated)[:5]}")
    return problems


def _pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def report(stats: Stats, duration: float, problems: list[str]) -> dict:
    figures: dict = {"endpoints": {}, "duration_s": duration}
    print(
        f"\n{'endpoint':22} {'requests':>8} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p99 ms':>8} {'errors':>6}"
    )
    names = sorted(set(stats.times) | set(stats.errors))
    total = 0
    for name in names:
        times = stats.times.get(name, [])
        total += len(times)
        row = {
            "requests": len(times),
            "per_s": len(times) / duration,
            "p50_ms": _pct(times, 50),
            "p95_ms": _pct(times, 95),
            "p99_ms": _pct(times, 99),
            "errors": stats.errors.get(name, 0),
        }
        figures["endpoints"][name] = row
        print(
            f"{name:22} {row['requests']:8d} {row['per_s']:7.1f} {row['p50_ms']:8.1f} "
            f"{row['p95_ms']:8.1f} {row['p99_ms']:8.1f} {row['errors']:6d}"
        )
    saves = sum(len(v) for v in stats.saves.values())
    jobs = stats.jobs
    errors = sum(stats.errors.values()) + len(problems)
    figures.update(
        requests=total,
        per_s=total / duration,
        saves=saves,
        conflicts=stats.conflicts,
        takes=stats.takes,
        ask_human_runs=len(stats.runs),
        answers=stats.answers,
        validation_runs=jobs.get("queued", 0),
        validation_finished=jobs.get("finished", 0),
        validation_p50_ms=_pct(jobs.get("ms", []), 50),
        validation_p95_ms=_pct(jobs.get("ms", []), 95),
        problems=problems,
        errors=errors,
    )
    print(
        f"\nall endpoints: {total} requests, {total / duration:.1f} req/s; "
        f"{saves} saves accepted, {stats.conflicts} conflicts (409, refetched and saved again); "
        f"{stats.takes} review tasks taken; {len(stats.runs)} ask_human runs, "
        f"{stats.answers} answers"
    )
    print(
        f"validation runs (Celery): {jobs.get('queued', 0)} queued, {jobs.get('finished', 0)} "
        f"finished, queued → finished p50 {figures['validation_p50_ms']:.0f} ms, "
        f"p95 {figures['validation_p95_ms']:.0f} ms"
    )
    for line in stats.samples + problems:
        print(f"  ! {line}")
    if errors and _server_log().exists():
        print("server log (last lines):\n" + _server_log().read_text()[-3000:])
    print(f"errors: {errors}")
    return figures


if __name__ == "__main__":
    sys.exit(main())
