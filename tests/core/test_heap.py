"""toolkit/heap.py: the C heap's free pages go back to the system."""

import subprocess
import sys
import textwrap

from ..conftest import ROOT

FREED_IN_THE_MIDDLE = textwrap.dedent(
    """
    import ctypes
    from hilbench_annotate.toolkit.heap import heap_release

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024

    blocks = [libc.malloc(1000) for _ in range(80_000)]  # 80 MB of small blocks
    for block in blocks:
        ctypes.memset(block, 1, 1000)
    pinned = libc.malloc(1000)  # above them: free() alone cannot shrink the heap's top
    for block in blocks:
        libc.free(block)
    before = rss_mb()
    released = heap_release()
    print(released, round(before - rss_mb()))
    """
)


def test_freed_pages_below_the_heaps_top_go_back():
    done = subprocess.run(
        [sys.executable, "-c", FREED_IN_THE_MIDDLE], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    released, returned_mb = done.stdout.split()
    assert released == "True"
    assert int(returned_mb) >= 60


FORKED_WORKER = textwrap.dedent(
    """
    import gc, os, sys, time
    from pathlib import Path
    import hilbench_annotate.wsgi  # what gunicorn's master imports under --preload

    def own_mb():
        fields = {}
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
            name, value, *_ = line.split()
            fields[name.rstrip(":")] = int(value) / 1024
        return fields["Private_Clean"] + fields["Private_Dirty"]

    frozen = gc.get_freeze_count()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # a worker: its first full collection
        before = own_mb()
        gc.collect()
        os.write(writer, str(round(own_mb() - before)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    print(frozen, os.read(reader, 100).decode())
    """
)


def test_a_forked_web_worker_does_not_copy_the_masters_heap_when_it_collects(tmp_path):
    from .test_broker_warmup import _fresh_process

    frozen, copied = _fresh_process(FORKED_WORKER, tmp_path, HILBENCH_PRELOAD="0").split()
    assert int(frozen) > 50_000  # the app's objects, frozen before the fork
    # Without the freeze the collection copied 30-54 MB of the master's heap.
    assert int(copied) < 10


THREADS_MALLOC = textwrap.dedent(
    """
    import ctypes, sys, threading
    from hilbench_annotate.toolkit.heap import heap_arenas_limit

    if sys.argv[1] == "limited":
        assert heap_arenas_limit()
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    start = threading.Barrier(8)

    def work():  # eight threads meeting in malloc, as a gthread worker's requests do
        start.wait()
        for _ in range(20_000):
            libc.free(libc.malloc(200))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc.malloc_stats()  # one "Arena N:" paragraph per arena, on stderr
    """
)


def test_a_web_process_keeps_at_most_two_malloc_arenas_however_many_threads():
    def arenas(mode: str) -> int:
        done = subprocess.run(
            [sys.executable, "-c", THREADS_MALLOC, mode], cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stderr.count("Arena ")

    assert arenas("limited") <= 2
    assert arenas("glibc's default") > 2  # what the limit is for
