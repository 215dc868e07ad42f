"""What a server process loads before it serves, so no request pays for it.

An app registers a warm-up from its ``AppConfig.ready`` (the judge: its model). The WSGI
module runs them when a web process starts (``runserver``, each gunicorn worker), and the
Celery app in each worker process (``worker_process_init``). Management commands and the
test suite import neither, so ``migrate`` or a test run never load a model they do not use.
``HILBENCH_PRELOAD=0`` turns it off.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from django.conf import settings

logger = logging.getLogger(__name__)

# A warm-up loads what it needs and returns one line for the log; a failure it can name is
# returned too (e.g. "not loaded: …"), so a server still starts and the first request that
# needs the thing reports the error itself.
WarmUp = Callable[[], str]

_WARMUPS: dict[str, WarmUp] = {}


def register_warmup(name: str, warm_up_fn: WarmUp) -> None:
    """Register (or, on a second ``ready``, replace) the warm-up ``name``."""
    _WARMUPS[name] = warm_up_fn


def warm_up() -> dict[str, float]:
    """Run every registered warm-up in this process; seconds each took."""
    if not settings.PRELOAD:
        return {}
    took = {}
    for name, warm_up_fn in _WARMUPS.items():
        started = time.perf_counter()
        line = warm_up_fn()
        took[name] = time.perf_counter() - started
        logger.info("Preloaded %s in %.2f s (process %s): %s", name, took[name], os.getpid(), line)
    return took


def urls_warm_up() -> str:
    """The URL configuration read, and with it every view module it names: Django reads it on
    a process's first request, which each web worker paid (0.12 s, 140 modules). Under
    ``gunicorn --preload`` the master reads it once and every worker has it."""
    from django.urls import get_resolver

    try:
        resolver = get_resolver()
        return f"{len(resolver.reverse_dict)} named routes"
    except Exception as exc:  # the line in the log; the requests that need it say it again
        return f"not loaded: {exc!r}"
