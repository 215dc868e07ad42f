"""The test suite's settings: the app's own, with DJANGO_DEBUG on as `make run` has it — the
development secret key, localhost hosts, cookies over plain HTTP for the browser tests.

The app defaults to DEBUG off (hilbench_annotate/settings.py). pytest-django still runs each
test with ``settings.DEBUG`` False, as Django's test runner does; what DJANGO_DEBUG decides
here is the rest. A caller that sets DJANGO_DEBUG itself (a production-settings test, the load
bench's server) keeps its value, and worker processes started by tests inherit it.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "1")

from hilbench_annotate.settings import *  # noqa: E402, F403

# Saving a revision sends the judge's index to a worker; the suite runs no worker for it
# (tests/judge/test_index_prepare.py turns it on with the task run eagerly).
JUDGE_PREPARE_ON_SAVE = False
