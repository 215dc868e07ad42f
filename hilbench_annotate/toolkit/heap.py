"""Give the C heap's free memory back to the system after a large piece of work, and keep a
forking master's objects out of its children's garbage collections.

glibc's ``malloc`` keeps what Python and the libraries free below the top of its heaps for
later use: after the judge's model is loaded (onnxruntime parses and folds the graph, then
frees the copies) a process kept about 47 MB it no longer used, and a Celery process kept
30 MB after an export. Every web worker and Celery process is long-lived, so that memory
stayed theirs; under ``gunicorn --preload`` the master's kept copy was even inherited by each
worker. ``malloc_trim(0)`` returns it. It walks the heap (a millisecond or so on a process of
200 MB), so it runs after work of that size, not after every request: the warm-ups, each
Celery job, a request that read a large body (``hilbench_annotate.middleware``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc

M_ARENA_MAX = -8  # mallopt's parameter (glibc's malloc.h)
THREAD_ARENAS = 2


@functools.cache
def _libc_function(name: str):
    """A function of glibc's (``malloc_trim``, ``mallopt``), or None where the C library
    has none (musl, macOS)."""
    library = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(library), name) if library else None
    except (OSError, AttributeError):
        return None


def heap_arenas_limit() -> bool:
    """At most ``THREAD_ARENAS`` malloc arenas in this process and the processes it forks.
    glibc gives each thread that meets another in ``malloc`` an arena of its own, up to
    eight per core, and keeps what each arena freed: a web worker of eight threads (gthread)
    grew by tens of MB a round of requests. Set before any thread starts; whether it could."""
    mallopt = _libc_function("mallopt")
    return bool(mallopt and mallopt(M_ARENA_MAX, THREAD_ARENAS))


def heap_release() -> bool:
    """Return the heap's free pages to the system; whether it could."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True


def heap_freeze() -> None:
    """Collect, then freeze what is alive: the garbage collector never scans those objects
    again. Called by a master before it forks (gunicorn's under ``--preload``, in
    ``wsgi.py``; Celery's main process before its pool starts). A full collection in a
    child writes to the header of every object it scans, so the kernel copied each page of
    the master's heap into each child at its first one: 54 MB of a web worker's own, for
    objects (modules, the URL configuration, the judge) that live as long as the process."""
    gc.collect()
    gc.freeze()
