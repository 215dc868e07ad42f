"""A web process imports the broker's client before it serves, without connecting to it."""

import json
import os
import subprocess
import sys

from django.conf import settings

SCRIPT = """
import json, sys
import django
django.setup()
before = {m for m in ("kombu.transport.sqlalchemy", "sqlalchemy.dialects.sqlite.pysqlite")
          if m in sys.modules}
from hilbench_annotate.celery import broker_warm_up
line = broker_warm_up()
after = [m for m in ("kombu.transport.sqlalchemy", "sqlalchemy.dialects.sqlite.pysqlite")
         if m in sys.modules]
print(json.dumps({"before": sorted(before), "after": after, "line": line}))
"""


def _fresh_process(script: str, tmp_path, **env: str) -> str:
    """The last line ``script`` prints in a new Python process of the app, embedded (no
    DATABASE_URL; the embedded broker unless ``env`` names one), its files in ``tmp_path``."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CELERY_BROKER_URL", "DATABASE_URL")
    }
    environ.update(
        DJANGO_SETTINGS_MODULE="hilbench_annotate.settings",
        DJANGO_SECRET_KEY="test-only",
        HILBENCH_VAR_DIR=str(tmp_path),
        **env,
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=environ,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_the_embedded_brokers_client_is_imported_and_no_connection_opened(tmp_path):
    found = json.loads(_fresh_process(SCRIPT, tmp_path))
    assert found["before"] == []  # the warm-up, not start-up, imported them
    assert found["after"] == ["kombu.transport.sqlalchemy", "sqlalchemy.dialects.sqlite.pysqlite"]
    assert found["line"] == "kombu.transport.sqlalchemy"
    assert not (tmp_path / "celery-broker.sqlite").exists()  # nothing connected


def test_a_broker_it_cannot_name_is_reported_not_raised(tmp_path):
    """A misspelt broker URL must not stop the web server from starting."""
    script = (
        "import django; django.setup()\n"
        "from hilbench_annotate.celery import broker_warm_up\n"
        "print(broker_warm_up())\n"
    )
    line = _fresh_process(script, tmp_path, CELERY_BROKER_URL="nosuchtransport://localhost/0")
    assert line.startswith("not loaded: ")


def test_the_urls_and_their_views_are_read_before_the_first_request(tmp_path):
    """Django reads the URL configuration on a process's first request (0.12 s, some 140
    modules: every view): the warm-up reads it, so under ``gunicorn --preload`` the master
    does it once and no worker's first request pays for it."""
    script = (
        "import json, sys, django; django.setup()\n"
        "before = 'exchange.api' in sys.modules\n"
        "from hilbench_annotate.warmup import urls_warm_up\n"
        "line = urls_warm_up()\n"
        "print(json.dumps({'before': before, 'after': 'exchange.api' in sys.modules,"
        " 'line': line}))\n"
    )
    found = json.loads(_fresh_process(script, tmp_path))
    assert (found["before"], found["after"]) == (False, True)
    assert found["line"].endswith(" named routes") and int(found["line"].split()[0]) > 100
