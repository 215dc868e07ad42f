"""Web processes load the judge's model when they start, not in the first request that needs
it; Celery processes, management commands (migrate, check) and the test suite do not load it
(a job that judges loads it on first use)."""

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
    views = (
        "import sys\nprint('views', 'exchange.api' in sys.modules)\n"
        "from hilbench_annotate.toolkit.heap import heap_release\n"
        "print('trimmed after loading', judge.encoder.after_load is heap_release)\n"
    )
    done = _python("import hilbench_annotate.wsgi\n" + LOADED + views, HILBENCH_PRELOAD="1")
    assert "encoder True" in done.stdout
    assert "judges ['embedded']" in done.stdout
    assert "Preloaded judge in" in done.stderr and "judge embedded-4-" in done.stderr
    # And the URLs with their views (a worker's first request read them).
    assert "Preloaded urls in" in done.stderr and " named routes" in done.stderr
    assert "views True" in done.stdout
    # What onnxruntime freed goes back (the sidecar's copy of the encoder leaves it alone).
    assert "trimmed after loading True" in done.stdout

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


def test_a_worker_process_does_not_load_it_before_a_job_judges():
    # What worker_process_init runs in each prefork child: the worker warm-ups, not the judge.
    done = _python(
        "import django\ndjango.setup()\nimport hilbench_annotate.celery\n"
        "from hilbench_annotate.warmup import warm_up\nprint('ran', sorted(warm_up('worker')))\n"
        + LOADED,
        HILBENCH_PRELOAD="1",
    )
    assert "ran []" in done.stdout
    assert "encoder False" in done.stdout and "judges []" in done.stdout


def test_a_started_worker_has_not_loaded_it(worker_broker, tmp_path):
    log = tmp_path / "worker.log"
    worker = start_worker(worker_broker, log, env={"HILBENCH_PRELOAD": "1"})
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and "ready." not in log.read_text():
            assert worker.poll() is None, log.read_text()
            time.sleep(0.5)
        time.sleep(2)  # the children's worker_process_init has run by now
        text = log.read_text()
        assert "ready." in text, text
        assert "Preloaded" not in text
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)


def test_the_judges_version_is_read_without_loading_its_model():
    # An export names the version in each task's validation.json, in a Celery process.
    done = _python(
        "import django, sys\ndjango.setup()\nfrom judge.services import judge_version\n"
        "print('version', judge_version(None))\nprint('numpy', 'numpy' in sys.modules)\n" + LOADED,
        HILBENCH_PRELOAD="1",
    )
    assert "version embedded-4-" in done.stdout
    assert "numpy False" in done.stdout and "judges []" in done.stdout
