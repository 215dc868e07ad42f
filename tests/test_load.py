"""The load bench, reduced: a real server, PostgreSQL, Redis and a Celery worker, concurrent
authors, reviewers and an evaluation harness — and not one error (see bench/load.py)."""

import json
import subprocess
import sys

import pytest
from django.db import connection

from .conftest import ROOT, worker_env


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_reduced_load_run_has_no_errors(worker_broker, tmp_path):
    if connection.vendor != "postgresql" or not worker_broker.startswith("redis"):
        pytest.skip("the load run needs PostgreSQL and Redis (DATABASE_URL, CELERY_BROKER_URL)")
    env = worker_env(worker_broker)  # the test database, emptied by the bench and after
    env["HILBENCH_VAR_DIR"] = str(tmp_path / "var")
    figures = tmp_path / "load.json"
    done = subprocess.run(
        [sys.executable, "bench/load.py", "--ci", "--json", str(figures)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr[-3000:]
    assert done.returncode == 0, output
    result = json.loads(figures.read_text())
    assert result["errors"] == 0, output
    assert result["problems"] == [], output
    # Every kind of user got through, and the worker finished every job it was given.
    for endpoint in ("autosave", "review take-next", "ask_human", "validation start"):
        assert result["endpoints"][endpoint]["requests"] > 0, (endpoint, output)
    assert result["saves"] > 0 and result["answers"] > 0, output
    assert result["validation_finished"] == result["validation_runs"], output
