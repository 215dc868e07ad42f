"""What every sandbox backend shares: limits, the result of a run, mounts, capped output.

Task code — a repository's tests, its install scripts, a release task's ``parser.py`` — is
untrusted. Each run gets a fresh writable copy of the repository and nothing else of this
machine it could change; its output is read through a pipe and only its head and tail are
kept, so a run that prints gigabytes costs nothing.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from hilbench_annotate.errors import DomainError

# Where things are inside the sandbox.
TESTBED = "/testbed"  # the repository copy (writable), as SWE-bench names it
ENV_ROOT = "/env"  # a built environment (read-only while tests run)
SOURCE = "/.source"  # the prepared tree, read-only, copied into TESTBED at start
SANDBOX_UID = 1000  # the user inside the sandbox
COPY_FAILED = 97  # exit code when the tree could not be copied in (disk limit)

# Messages that mean an allocation was refused: under RLIMIT_AS the kernel refuses the
# mmap/brk and the program reports it in its own words.
MEMORY_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "out of memory",
    "Out of memory",
)


class SandboxError(DomainError):
    """The sandbox itself could not run the command (no engine, a path it cannot reach…)."""


class SandboxUnavailable(SandboxError):
    """No isolating backend works on this machine: task code is not run at all."""


@dataclass
class SandboxLimits:
    """Per-run limits. ``cpu_s`` is CPU time per process (RLIMIT_CPU). ``memory_mb`` bounds
    each process's address space (RLIMIT_AS) and, where the run gets a cgroup (always in
    docker; locally where the machine allows, see ``bwrap.py``), all its processes together
    beside its tmpfs; ``processes`` bounds how many processes the run may have at once.
    ``disk_mb`` bounds the repository copy plus everything the run writes there, ``tmp_mb``
    ``/tmp`` (which is also ``$HOME``), ``shm_mb`` ``/dev/shm``; nothing else is writable."""

    wall_s: float = 300
    cpu_s: int = 300
    memory_mb: int = 2048
    output_bytes: int = 200_000
    processes: int = 256
    disk_mb: int = 2048
    tmp_mb: int = 512
    shm_mb: int = 64
    file_mb: int = 1024

    def run_memory_mb(self, *, tmpfs_testbed: bool = True) -> int:
        """What a run's cgroup allows all its processes together: ``memory_mb`` plus the
        sizes of its tmpfs, whose pages the cgroup counts (the repository copy is one unless
        the run works on a tree on disk)."""
        tmpfs = self.tmp_mb + self.shm_mb + (self.disk_mb if tmpfs_testbed else 0)
        return int(self.memory_mb) + int(tmpfs)


@dataclass(frozen=True)
class Mount:
    """A host path shown inside the sandbox at ``target`` (read-only unless ``writable``)."""

    source: Path
    target: str
    writable: bool = False


@dataclass
class SandboxResult:
    """What a run did. ``output`` is stdout and stderr interleaved, cut to the limit (head and
    tail kept, since the summary a test runner prints is at the end)."""

    exit_code: int | None
    output: str
    truncated: bool
    timed_out: bool
    memory_exceeded: bool
    duration_s: float
    backend: str
    cpu_exceeded: bool = False
    network_isolated: bool = False
    processes_exceeded: bool = False  # a fork was refused (pids.max, RLIMIT_NPROC)
    disk_exceeded: bool = False  # a tmpfs of the run was full
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def stopped(self) -> str | None:
        """Why the sandbox stopped the run, in a few words, or None."""
        if self.timed_out:
            return "wall-time limit"
        if self.memory_exceeded:
            return "memory limit"
        if self.cpu_exceeded:
            return "CPU-time limit"
        if self.processes_exceeded:
            return "process limit"
        if self.disk_exceeded:
            return "disk limit"
        return None


def host_paths_hidden(text: str) -> str:
    """``text`` with this machine's own folders named by role, not by path: a run can read
    where its mounts come from (``/proc/self/mountinfo`` gives every bind's host path), and
    what it prints reaches the author, so the output never tells where the app, its var
    folder or the sandbox root live."""
    names = {
        "<sandbox-root>": settings.SANDBOX_ROOT,
        "<var>": settings.VAR_DIR,
        "<app>": settings.BASE_DIR,
    }
    pairs = []
    for name, path in names.items():
        for form in {str(path), str(Path(path).resolve())}:
            if len(form) > 1:
                pairs.append((form, name))
    for form, name in sorted(pairs, key=lambda pair: -len(pair[0])):
        text = text.replace(form, name)
    return text


def truncate_output(data: bytes, limit: int) -> tuple[str, bool]:
    """``data`` decoded, keeping the first and last ``limit/2`` bytes when it is longer."""
    output = CappedOutput(limit)
    output.add(data)
    return output.text()


class CappedOutput:
    """Keeps the first and last ``limit / 2`` bytes of what is added, counting the rest: the
    output of a run is never held whole, however much it prints."""

    def __init__(self, limit: int):
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        half = self.limit // 2
        self.total += len(chunk)
        room = half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        keep = self.limit - half
        if chunk and keep > 0:
            self.tail += chunk[-keep:]
            if len(self.tail) > keep:
                del self.tail[: len(self.tail) - keep]

    def text(self) -> tuple[str, bool]:
        omitted = self.total - len(self.head) - len(self.tail)
        if omitted <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace"), False
        return (
            bytes(self.head).decode("utf-8", errors="replace")
            + f"\n\n[... {omitted} bytes of output omitted ...]\n\n"
            + bytes(self.tail).decode("utf-8", errors="replace"),
            True,
        )


class CappedReader(threading.Thread):
    """Drains a pipe into a ``CappedOutput``."""

    def __init__(self, pipe: IO[bytes], limit: int):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.output = CappedOutput(limit)

    def run(self) -> None:
        while chunk := self.pipe.read(65536):
            self.output.add(chunk)
        self.pipe.close()

    def text(self) -> tuple[str, bool]:
        return self.output.text()


def killed_by(exit_code: int | None, signum: int) -> bool:
    """Killed by ``signum``: directly (negative code) or reported by a shell (128 + n)."""
    return exit_code is not None and exit_code in (-signum, 128 + signum)


def memory_exceeded(exit_code: int | None, output: str, timed_out: bool) -> bool:
    """Heuristic: a failed run whose output reports a refused allocation, or a SIGKILL we did
    not send (the kernel's OOM killer). A passing run that merely prints "MemoryError" is not
    flagged, nor is a run we killed for its wall time."""
    if exit_code in (0, None) or timed_out:
        return False
    if killed_by(exit_code, signal.SIGKILL):
        return True
    return any(marker in output for marker in MEMORY_MARKERS)
