"""``bench/judge.py --http``: ``/api/ask_human`` over the app's own server (docstring there)."""

import contextlib
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from _setup import ROOT, configure, fresh_database

PORT = 8791


def _seed() -> tuple[int, str, int]:
    """The demo's blocked task in a project of its own, a harness token; (task, token,
    revision) — the revision's index prepared as a save prepares it."""
    import tempfile
    from pathlib import Path

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from exchange.demo import sql_demo
    from exchange.demo.plant import plant_demo_blockers
    from exchange.importers import import_bird
    from hilbench_annotate.models import Membership, Project, Task
    from hilbench_annotate.services.tokens import api_token_create
    from judge.services import judge_index_prepare

    User = get_user_model()
    project = Project.objects.create(name="Judge bench", slug="judge-bench")
    author = User.objects.create(username="bench-author")
    harness = User.objects.create(username="bench-harness")
    Membership.objects.create(project=project, user=author, role="author")
    Membership.objects.create(project=project, user=harness, role="harness")
    paths = sql_demo.build(Path(tempfile.mkdtemp(prefix="judge-bench-")) / "sql")
    import_bird(
        project=project, questions=paths["questions"], databases=paths["databases"], actor=author
    )
    with transaction.atomic():
        task = Task.objects.select_for_update().filter(project=project).order_by("pk").first()
        plant_demo_blockers(task, author)
    revision = task.revisions.order_by("-number").first()
    started = time.perf_counter()
    print(judge_index_prepare(revision_id=revision.pk), end="")
    print(f" ({(time.perf_counter() - started) * 1000:.0f} ms, on save, in a worker)")
    return task.pk, api_token_create(user=harness, name="bench")[1], revision.pk


def _env() -> dict[str, str]:
    from django.conf import settings

    return {
        **os.environ,
        "HILBENCH_VAR_DIR": str(settings.VAR_DIR),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "judge-bench-" + os.urandom(16).hex(),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_COOKIES": "0",
        # Answers are what is measured, not the limits: no cap stops the judge running.
        "HILBENCH_ASK_HUMAN_ANSWER_CAP": "0",
        "HILBENCH_ASK_HUMAN_SESSION_ANSWER_CAP": "1000000",
        "HILBENCH_ASK_HUMAN_RATE_PER_TOKEN": "1000000/60",
        "HILBENCH_ASK_HUMAN_RUN_RATE_PER_TASK": "1000000/60",
    }


def _post(conn, path: str, body: dict, token: str) -> tuple[float, dict]:
    payload = json.dumps(body)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    started = time.perf_counter()
    conn.request("POST", path, payload, headers)
    response = conn.getresponse()
    data = response.read()
    took = (time.perf_counter() - started) * 1000
    if response.status >= 300:
        raise SystemExit(f"{path}: {response.status} {data[:300]!r}")
    return took, json.loads(data)


def _figures(name: str, times: list[float]) -> None:
    times = sorted(times)
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    print(
        f"{name}: p50 {statistics.median(times):.1f} ms, p95 {pick(0.95):.1f} ms, "
        f"p99 {pick(0.99):.1f} ms over {len(times)} requests"
    )


def main(requests: int = 300) -> None:
    configure("judge-http.sqlite3")
    fresh_database()
    task, token, _revision = _seed()
    log = open(ROOT / "var" / "bench" / "judge-http-server.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "hilbench_annotate.wsgi:application",
         f"--bind=127.0.0.1:{PORT}", "--workers=2", "--log-level=warning"],
        cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        conn = _connect()
        _took, run = _post(conn, "/api/ask_human/runs", {"task": task, "label": "bench"}, token)
        first, _ = _post(
            conn,
            "/api/ask_human",
            {"run": run["run"], "question": "Which loan states count as troubled here?"},
            token,
        )
        print(f"first question of the run: {first:.1f} ms (the index built from the store)")
        fresh = [
            _post(conn, "/api/ask_human", {"run": run["run"], "question": q}, token)[0]
            for q in _questions(requests)
        ]
        _figures("/api/ask_human, new questions (the judge runs)", fresh)
        repeats = [
            _post(conn, "/api/ask_human", {"run": run["run"], "question": q}, token)[0]
            for q in _questions(requests)
        ]
        _figures("/api/ask_human, repeated questions (verdict cache)", repeats)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _connect() -> http.client.HTTPConnection:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
        try:
            conn.request("GET", "/accounts/login/")
            conn.getresponse().read()
            return conn
        except OSError:
            conn.close()
            time.sleep(0.3)
    raise SystemExit("the server did not start")


def _questions(count: int) -> list[str]:
    subjects = ["troubled loans", "loan servicing payments", "the review year", "k_symbol codes",
                "loan status values", "transaction purpose codes"]  # fmt: skip
    frames = ["Which {} count for case {}?", "How are {} marked in record {}?",
              "What defines {} in variant {}?"]  # fmt: skip
    return [frames[i % 3].format(subjects[i % len(subjects)], i) for i in range(count)]
