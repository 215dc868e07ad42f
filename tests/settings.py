"""The test suite's settings: the app's own, with DJANGO_DEBUG on as `make run` has it — the
development secret key, localhost hosts, cookies over plain HTTP for the browser tests.

The app defaults to DEBUG off (hilbench_annotate/settings.py). pytest-django still runs each
test with ``settings.DEBUG`` False, as Django's test runner does; what DJANGO_DEBUG decides
here is the rest. A caller that sets DJANGO_DEBUG itself (a production-settings test, the load
bench's server) keeps its value, and worker processes started by tests inherit it.
"""

import os
import re
from pathlib import Path

os.environ.setdefault("DJANGO_DEBUG", "1")

# The var folder of the whole run: the sandbox's environment cache is shared by all the
# suite's processes (builds of one key take a lock, as a deployment's workers do).
TEST_RUN_VAR_DIR = Path(
    os.environ.get("HILBENCH_TEST_RUN_VAR_DIR")
    or os.environ.get("HILBENCH_VAR_DIR")
    or Path(__file__).resolve().parents[1] / "var"
).resolve()

# Under pytest-xdist (`make test`: both cores), each worker process (gw0, gw1…) has its own
# var folder — its SQLite files, embedded broker and stores — and, on Redis, its own broker
# database (1 + its index; a test's own Celery worker takes 15 - its index,
# tests/conftest.py); pytest-django gives it its own test database. The processes a test
# starts inherit the environment, so it is rewritten once (HILBENCH_TEST_RUN_VAR_DIR set).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
XDIST_INDEX = int(XDIST_WORKER.removeprefix("gw")) if XDIST_WORKER.startswith("gw") else 0
if XDIST_WORKER and not os.environ.get("HILBENCH_TEST_RUN_VAR_DIR"):
    os.environ["HILBENCH_TEST_RUN_VAR_DIR"] = str(TEST_RUN_VAR_DIR)
    os.environ["HILBENCH_VAR_DIR"] = str(TEST_RUN_VAR_DIR / f"xdist-{XDIST_WORKER}")
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith(("redis://", "rediss://")):
        os.environ["CELERY_BROKER_URL"] = re.sub(
            r"(/\d*)?$", f"/{1 + XDIST_INDEX}", broker, count=1
        )

from hilbench_annotate.settings import *  # noqa: E402, F403

# Saving a revision sends the judge's index to a worker; the suite runs no worker for it
# (tests/judge/test_index_prepare.py turns it on with the task run eagerly).
JUDGE_PREPARE_ON_SAVE = False
