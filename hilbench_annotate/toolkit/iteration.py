"""Iterating in batches (``itertools.batched`` arrives with Python 3.12), and bulk work with
fewer runs of the cyclic garbage collector."""

import contextlib
import gc
import threading
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read lazily."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


# Python looks for reference cycles every 700 allocations by default; a chunk of an export
# makes some hundred thousand short-lived objects (file entries, headers, rows) and almost
# no cycles, and each look also walks the process's long-lived objects now and then.
BULK_GC_THRESHOLD = 50_000


_lock = threading.Lock()
_inside = 0  # blocks running now, in any thread
_restore: tuple[int, ...] = ()


@contextlib.contextmanager
def fewer_collections(threshold: int = BULK_GC_THRESHOLD) -> Iterator[None]:
    """Within the block the collector's youngest generation is examined every ``threshold``
    allocations (not 700); the thresholds are put back when the last such block, in any
    thread, ends, and the cycles it let through are collected then. Reference counting still
    frees everything that is not in a cycle at once: a 13% faster export chunk.

    The collection at the end: a chunk of 250 tasks leaves some 9,300 objects in cycles
    (ORM instances and their querysets). With the higher threshold they outlived the young
    generations, and the oldest one is collected rarely: a Celery process writing chunk after
    chunk grew by about 3 MB of its own a chunk (42 MB to 61 over six). Collected when the
    block ends (4-5 ms), it stays at 33 MB between chunks."""
    global _inside, _restore
    with _lock:
        if not _inside:
            _restore = gc.get_threshold()
            gc.set_threshold(max(threshold, _restore[0]), *_restore[1:])
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            last = not _inside
            if last:
                gc.set_threshold(*_restore)
        if last:
            gc.collect()
