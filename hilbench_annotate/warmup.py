"""What a server process loads before it serves, so no request pays for it.

An app registers a warm-up from its ``AppConfig.ready`` (the judge: its model), naming the
kinds of process it is for. The WSGI module runs the ``"web"`` ones when a web process starts
(``runserver``; once in the gunicorn master under ``--preload``, shared by the workers it
forks), and the Celery app the ``"worker"`` ones in each worker process
(``worker_process_init``). The judge is a web warm-up only: every web worker may answer an
``ask_human`` question at once, while a Celery process judges only in the jobs that need it
(validation, calibration, an index), which load it on first use; preloaded in each prefork
child it held about 200 MB of its own that an import or an export never touched
(bench/vs_label_studio.py, "memory"). Management commands and the test suite import
neither, so ``migrate`` or a test run never load a model they do not use.
``HILBENCH_PRELOAD=0`` turns it off.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from django.conf import settings

from hilbench_annotate.toolkit.heap import heap_release

logger = logging.getLogger(__name__)

# A warm-up loads what it needs and returns one line for the log; a failure it can name is
# returned too (e.g. "not loaded: …"), so a server still starts and the first request that
# needs the thing reports the error itself.
WarmUp = Callable[[], str]

PROCESSES = ("web", "worker")
_WARMUPS: dict[str, tuple[WarmUp, tuple[str, ...]]] = {}


def register_warmup(name: str, warm_up_fn: WarmUp, *, processes: tuple[str, ...] = PROCESSES):
    """Register (or, on a second ``ready``, replace) the warm-up ``name``, run in the kinds
    of process named (``"web"``, ``"worker"``)."""
    if unknown := set(processes) - set(PROCESSES):
        raise ValueError(f"unknown kind of process {sorted(unknown)}; choose from {PROCESSES}")
    _WARMUPS[name] = (warm_up_fn, tuple(processes))


def warm_up(process: str) -> dict[str, float]:
    """Run every warm-up registered for this kind of process; seconds each took."""
    if not settings.PRELOAD:
        return {}
    took = {}
    for name, (warm_up_fn, processes) in _WARMUPS.items():
        if process not in processes:
            continue
        started = time.perf_counter()
        line = warm_up_fn()
        took[name] = time.perf_counter() - started
        logger.info("Preloaded %s in %.2f s (process %s): %s", name, took[name], os.getpid(), line)
    if took:  # what the warm-ups freed, given back before a master forks its workers
        heap_release()
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
