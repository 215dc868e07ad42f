import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from hilbench_annotate.celery import app as celery_app
from hilbench_annotate.vocabulary import Role

from .factories import MembershipFactory, ProjectFactory, UserFactory
from .skipsummary import pytest_terminal_summary  # noqa: F401 - a hook, registered here

ROOT = Path(__file__).resolve().parents[1]
# Real third-party data beside the clone; HILBENCH_SHARED_DIR=/nonexistent shows what a fresh
# clone runs without it.
SHARED = Path(os.environ.get("HILBENCH_SHARED_DIR") or ROOT.parent / "shared")


# The project's own small data in every format it reads (fixtures/README.md): always here.
FIXTURES = ROOT / "fixtures"


def shared_path(*parts: str) -> Path:
    """A path in ../shared; tests that need it are skipped where it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    return path


@pytest.fixture(
    params=[
        pytest.param("fixtures", id="fixtures"),
        pytest.param("release", id="release", marks=pytest.mark.shared_data),
    ]
)
def release_examples(request) -> Path:
    """Task folders in the HiL-Bench release's layout (``sql/sql_0``, ``swe/swe_0``…): the
    project's own (fixtures/hilbench), and the release's five examples where ../shared is."""
    if request.param == "fixtures":
        return FIXTURES / "hilbench"
    return shared_path("examples", "hilbench")


def pytest_itemcollected(item):
    """``browser`` on every test of tests/e2e (`make test-fast` leaves them out)."""
    if item.nodeid.startswith("tests/e2e/"):
        item.add_marker(pytest.mark.browser)


# The order of a run: the modules that hold container, slow or browser tests first, so that
# under xdist (`make test`) whichever worker is free takes the next long test and the short
# ones fill the end. pytest-django's rule is kept (it sorts first, as Django's runner does): no
# test on the plain ``db`` runs after one that empties the database (``transaction=True``,
# ``transactional_db``, ``live_server``).
_FIRST = ("containers", "slow", "browser")


def _empties_the_database(item) -> bool:
    marker = item.get_closest_marker("django_db")
    if marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")):
        return True
    if marker and marker.args and marker.args[0]:
        return True
    return bool({"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config, items):
    rank: dict[str, int] = {}
    for item in items:
        mine = next((i for i, m in enumerate(_FIRST) if item.get_closest_marker(m)), len(_FIRST))
        rank[item.path] = min(rank.get(item.path, len(_FIRST)), mine)
    items.sort(key=lambda item: (_empties_the_database(item), rank[item.path]))


def pytest_report_header(config):
    from django.conf import settings

    return settings.RUNTIME_MODE


@pytest.fixture(autouse=True)
def _judge_caches():
    """The judge's per-process caches are keyed by row ids, which each test's database
    hands out again from 1."""
    from judge.services import forget_process_caches

    forget_process_caches()
    yield
    forget_process_caches()


@pytest.fixture(autouse=True)
def _stores(settings, tmp_path):
    """Each test gets its own database, repository and upload stores (and a fast hasher)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.DATABASE_STORE = tmp_path / "store" / "databases"
    settings.REPOSITORY_STORE = tmp_path / "store" / "repositories"
    settings.UPLOAD_STORE = tmp_path / "store" / "uploads"
    settings.BUNDLE_STORE = tmp_path / "store" / "bundles"
    # Shared by the whole run (and the next): built environments are cached by key, and the
    # sandbox user must be able to reach it (pytest's own temporary folders are closed).
    # Under pytest-xdist, the run's folder: both workers build into one cache.
    settings.SANDBOX_ROOT = settings.TEST_RUN_VAR_DIR / "sandbox-tests"


@pytest.fixture
def project(db):
    return ProjectFactory(name="HiL-Bench SQL v2", slug="hilbench-sql-v2")


def _member(project, username, role):
    user = UserFactory(username=username)
    MembershipFactory(project=project, user=user, role=role)
    return user


@pytest.fixture
def author(project):
    return _member(project, "author", Role.AUTHOR)


@pytest.fixture
def reviewer(project):
    return _member(project, "reviewer", Role.REVIEWER)


@pytest.fixture
def auditor(project):
    return _member(project, "auditor", Role.AUDITOR)


@pytest.fixture
def lead(project):
    return _member(project, "lead", Role.LEAD)


@pytest.fixture
def harness(project):
    return _member(project, "harness", Role.HARNESS)


@pytest.fixture
def outsider(db):
    """An author in another project only."""
    other = ProjectFactory(name="Other team", slug="other-team")
    return _member(other, "outsider", Role.AUTHOR)


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory):
    """The demo inputs ``make run`` imports, built once per test session."""
    from exchange.demo import build_all

    return build_all(tmp_path_factory.mktemp("demo"))


@pytest.fixture
def sql_task(project, author, demo_data):
    """The first demo BIRD question, imported by ``author`` with its database."""
    from exchange.importers import import_bird
    from hilbench_annotate.models import Task

    import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=demo_data["sql"]["databases"],
        actor=author,
        limit=1,
    )
    return Task.objects.get(project=project)


@pytest.fixture
def swe_task(project, author, demo_data):
    """The demo SWE-bench instance, imported by ``author`` with its repository."""
    from exchange.importers import import_swebench
    from hilbench_annotate.models import Task

    import_swebench(
        project=project,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=author,
    )
    return Task.objects.get(project=project, domain="swe")


# --- real worker processes -------------------------------------------------------------


def worker_env(broker: str) -> dict[str, str]:
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        # Worker and web share the stores, as they do on a deployment (shared volume).
        "HILBENCH_UPLOAD_STORE": str(settings.UPLOAD_STORE),
        "HILBENCH_DATABASE_STORE": str(settings.DATABASE_STORE),
        "HILBENCH_REPOSITORY_STORE": str(settings.REPOSITORY_STORE),
        "HILBENCH_BUNDLE_STORE": str(settings.BUNDLE_STORE),
        "HILBENCH_SANDBOX_ROOT": str(settings.SANDBOX_ROOT),
        # These processes judge little or nothing: they load the judge's model when a test
        # needs it, not at start (tests/judge/test_preload.py starts them with it).
        "HILBENCH_PRELOAD": "0",
    }
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["HILBENCH_SQLITE_PATH"] = str(db["NAME"])
    else:
        user = f"{db['USER']}@" if db.get("USER") else ""
        host = f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
        env["DATABASE_URL"] = f"postgres://{user}{host}/{db['NAME']}"
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_web(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """gunicorn, as deployed (one gthread worker), with ``env``; its output in
    ``tmp_path / "web.log"``. Returns the process once ``/login/`` answers, and its base URL."""
    import requests

    port = free_port()
    with open(tmp_path / "web.log", "a") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "hilbench_annotate.wsgi:application",
                f"--bind=127.0.0.1:{port}",
                "--workers=1",
                "--worker-class=gthread",
                "--threads=2",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(base + "/login/", timeout=2).status_code == 200:
                return proc, base
        except requests.RequestException:
            pass
        log_text = (tmp_path / "web.log").read_text()
        assert proc.poll() is None and time.monotonic() < deadline, log_text
        time.sleep(0.2)


def slow_swe_task(demo_data, *, username: str, sleep_s: int):
    """The demo SWE task, with blockers, whose tests sleep first: a validation run of it
    stays busy in the worker long enough to be interrupted."""
    from exchange.demo.blocked_task import DEMO_BLOCKERS
    from exchange.importers import import_swebench
    from hilbench_annotate import services as core
    from hilbench_annotate.models import SweEnvironment, Task

    project = ProjectFactory()
    author = UserFactory(username=username)
    MembershipFactory(project=project, user=author, role="author")
    import_swebench(
        project=project,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=author,
    )
    task = Task.objects.get(project=project)
    SweEnvironment.objects.filter(task=task).update(
        test_command=f"sleep {sleep_s}; python -m pytest -rA tests"
    )
    for blocker in DEMO_BLOCKERS:
        core.blocker_create(
            task=task,
            actor=author,
            expected_version=task.version,
            **{**blocker, "type": "missing parameters", "subtype": ""},
        )
    task.refresh_from_db()
    return task


def start_worker(
    broker: str, log_path, *, env: dict[str, str] | None = None, beat_schedule=None
) -> subprocess.Popen:
    """A real Celery worker process (solo pool) on ``broker``, logging to ``log_path``;
    with ``beat_schedule`` (a path) it runs beat inside it. The caller terminates it."""
    command = [
        sys.executable, "-m", "celery", "-A", "hilbench_annotate", "worker",
        "--pool=solo", "--loglevel=info",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip
    if beat_schedule is not None:
        command += ["--beat", "--schedule", str(beat_schedule)]
    log = open(log_path, "a")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**worker_env(broker), **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@pytest.fixture
def worker_broker(tmp_path, monkeypatch):
    if settings.EMBEDDED_BROKER:
        broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}"
    else:
        # Each xdist worker's tests start their Celery workers on a Redis database of their own.
        broker = settings.CELERY_BROKER_URL.rsplit("/", 1)[0] + f"/{15 - settings.XDIST_INDEX}"
    previous = celery_app.conf.broker_url
    # Celery reads CELERY_BROKER_URL from the environment before its own config.
    monkeypatch.setenv("CELERY_BROKER_URL", broker)
    _use_broker(broker)
    yield broker
    monkeypatch.undo()
    _use_broker(previous)


def _use_broker(url: str) -> None:
    """Point this process's producer at ``url``; Celery and kombu cache pools, so drop them
    (kombu keeps them in a process-wide registry keyed by URL)."""
    from kombu import pools

    pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url
