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
