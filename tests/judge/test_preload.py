"""Web and worker processes load the judge's model when they start, not in the first request
that needs it; management commands (migrate, check) and the test suite do not load it."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ..conftest import ROOT, start_worker, worker_env

pytestmark = pytest.mark.django_db

# What a process holds of the judge: the encoder (the ONNX model) and the shipped judge.
LOADED = textwrap.dedent(
    """
    import judge.encoder, judge.services
    print("encoder", judge.encoder._encoder is not None)
    print("judges", sorted(key[0] for key in judge.services._judges))
    """
)


def _python(code: str, **env) -> subprocess.CompletedProcess:
    environment = {
        **worker_env("memory://"),
        "DJANGO_SETTINGS_MODULE": "hilbench_annotate.settings",
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done


def test_a_web_process_has_the_judge_loaded_before_its_first_request():
    # What runserver and every gunicorn worker import before they serve.
    views = "import sys\nprint('views', 'exchange.api' in sys.modules)\n"
    done = _python("import hilbench_annotate.wsgi\n" + LOADED + views, HILBENCH_PRELOAD="1")
    assert "encoder True" in done.stdout
    assert "judges ['embedded']" in done.stdout
    assert "Preloaded judge in" in done.stderr and "judge embedded-4-" in done.stderr
    # And the URLs with their views (a worker's first request read them).
    assert "Preloaded urls in" in done.stderr and " named routes" in done.stderr
    assert "views True" in done.stdout

    off = _python("import hilbench_annotate.wsgi\n" + LOADED + views, HILBENCH_PRELOAD="0")
    assert "encoder False" in off.stdout and "Preloaded" not in off.stderr
    assert "views False" in off.stdout


def test_management_commands_do_not_load_it():
    done = _python(
        "import django\ndjango.setup()\nfrom django.core.management import call_command\n"
        "call_command('check')\n" + LOADED,
        HILBENCH_PRELOAD="1",
    )
    assert "encoder False" in done.stdout and "judges []" in done.stdout


def test_a_worker_process_loads_it_when_it_starts(worker_broker, tmp_path):
    log = tmp_path / "worker.log"
    worker = start_worker(worker_broker, log, env={"HILBENCH_PRELOAD": "1"})
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and "Preloaded judge" not in log.read_text():
            assert worker.poll() is None, log.read_text()
            time.sleep(0.5)
        text = log.read_text()
        # No job was sent: the process loaded it when it started. (Each pool process loads it
        # before its loop takes a job; the main process may say "ready." before or after.)
        assert "Preloaded judge in" in text and "judge embedded-4-" in text
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
