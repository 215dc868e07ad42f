"""A cgroup per run, where this machine lets the worker make one: the memory and process
limits then hold for the run as a whole — every process it starts, together — instead of for
each process alone (RLIMIT_AS, RLIMIT_NPROC), which a run that forks multiplies.

Either cgroup version: v2, in a folder whose ``cgroup.subtree_control`` enables ``memory`` and
``pids`` (``HILBENCH_SANDBOX_CGROUP``, a folder delegated to the worker's user, or else the
worker's own cgroup); v1, in the worker's own folders of the ``memory`` and ``pids``
hierarchies (writable by root only). ``layout()`` makes a cgroup, writes its limits and
removes it once per process, and sweeps the empty ones killed workers left; when a step
fails, runs have no cgroup and their details say so.

The run's bwrap joins its cgroup before it starts (``join``, in the forked child, through
files the worker opened, so the write is allowed after the drop to the sandbox user): all
the run's processes are born inside. A cgroup's memory counts the pages of the tmpfs the
run writes, so the caller adds their sizes to the limit it sets.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

PREFIX = "hilbench-run-"
STALE_S = 60  # a run cgroup this old and empty was left by a worker killed mid-run


@dataclass(frozen=True)
class Layout:
    """Where run cgroups are made: ``memory`` and ``pids`` are the same folder in v2."""

    version: int
    memory: Path
    pids: Path

    def describe(self) -> str:
        return f"cgroup v{self.version} ({self.memory})"


def _own_paths() -> dict[str, str]:
    """The worker's cgroup per controller (v1) and ``"unified"`` (v2), from /proc/self/cgroup."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _number, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["unified"]:
            paths[name] = path
    return paths


def _cgroup_mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fs type, super options) of every cgroup mount."""
    rows = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        rest = fields[fields.index("-") + 1 :]
        if rest[0] in ("cgroup", "cgroup2"):
            rows.append((fields[3], fields[4], rest[0], set(rest[2].split(","))))
    return rows


def _folder(mount_root: str, mount_point: str, path: str) -> Path:
    if mount_root != "/" and path.startswith(mount_root):
        path = path[len(mount_root) :]
    return Path(mount_point) / path.lstrip("/")


def _candidates() -> list[Layout]:
    own = _own_paths()
    found = []
    configured = getattr(settings, "SANDBOX_CGROUP", "")
    mounts = _cgroup_mounts()
    for root, point, kind, _options in mounts:
        if kind == "cgroup2" and "unified" in own:
            base = Path(configured) if configured else _folder(root, point, own["unified"])
            found.append(Layout(2, base, base))
    memory = [_folder(r, p, own.get("memory", "/")) for r, p, k, o in mounts if "memory" in o]
    pids = [_folder(r, p, own.get("pids", "/")) for r, p, k, o in mounts if "pids" in o]
    if memory and pids:
        found.append(Layout(1, memory[0], pids[0]))
    return found


@functools.cache
def layout() -> tuple[Layout | None, str]:
    """Where this worker can make run cgroups, or None and why not. Cached per process."""
    reasons = []
    for candidate in _candidates():
        if candidate.version == 2:
            try:
                enabled = (candidate.memory / "cgroup.subtree_control").read_text().split()
            except OSError as exc:
                reasons.append(f"v2 at {candidate.memory}: {exc.strerror}")
                continue
            if not {"memory", "pids"} <= set(enabled):
                reasons.append(f"v2 at {candidate.memory} does not enable memory and pids")
                continue
        try:
            RunCgroup(candidate, memory_bytes=64 << 20, processes=8).remove()
        except OSError as exc:
            reasons.append(f"v{candidate.version} at {candidate.memory}: {exc.strerror}")
            continue
        sweep(candidate)
        return candidate, candidate.describe()
    return None, "; ".join(reasons) or "no cgroup hierarchy with memory and pids is mounted"


def sweep(where: Layout) -> None:
    """Remove the run cgroups a killed worker left behind (its runs died with it, so they are
    empty): those older than a run takes to join its cgroup, which is milliseconds."""
    cutoff = time.time() - STALE_S
    for parent in {where.memory, where.pids}:
        for folder in parent.glob(f"{PREFIX}*"):
            with contextlib.suppress(OSError):
                old = folder.stat().st_mtime < cutoff
                if old and not (folder / "cgroup.procs").read_text().strip():
                    folder.rmdir()


@dataclass
class RunCgroup:
    """One run's cgroup (a folder per hierarchy), made with its limits set."""

    layout: Layout
    memory_bytes: int
    processes: int
    folders: list[Path] = field(default_factory=list)
    procs: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
        memory, pids = self.layout.memory / name, self.layout.pids / name
        self.folders = [memory] if memory == pids else [memory, pids]
        try:
            for folder in self.folders:
                folder.mkdir()
            if self.layout.version == 2:
                self._write(memory / "memory.max", self.memory_bytes)
                self._write(memory / "memory.swap.max", 0, optional=True)
            else:
                self._write(memory / "memory.limit_in_bytes", self.memory_bytes)
                self._write(memory / "memory.memsw.limit_in_bytes", self.memory_bytes, True)
            self._write(pids / "pids.max", self.processes)
            self.procs = [
                os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
                for folder in self.folders
            ]
        except OSError:
            self.remove()
            raise

    @staticmethod
    def _write(path: Path, value: int, optional: bool = False) -> None:
        try:
            path.write_text(str(value))
        except OSError:
            if not optional:  # swap limits exist only with swap accounting
                raise

    def join(self) -> None:
        """Move the calling process in (run in the forked child before it executes bwrap)."""
        pid = str(os.getpid()).encode()
        for fd in self.procs:
            os.write(fd, pid)

    def counters(self) -> dict[str, int]:
        """How often the kernel killed for memory and refused a fork, so far."""
        memory, pids = self.folders[0], self.folders[-1]
        events = "memory.events" if self.layout.version == 2 else "memory.oom_control"
        return {
            "oom_kills": _counter(memory / events, "oom_kill"),
            "forks_refused": _counter(pids / "pids.events", "max"),
        }

    def remove(self) -> None:
        """Kill what is left in it (a run's PID namespace dies with bwrap; this is for the
        stragglers still exiting) and remove the folders, waiting up to a few seconds."""
        for fd in self.procs:
            os.close(fd)
        self.procs = []
        deadline = time.monotonic() + 5
        for folder in reversed(self.folders):
            while folder.exists():
                with contextlib.suppress(OSError):
                    for pid in (folder / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(int(pid), signal.SIGKILL)
                    folder.rmdir()
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)


def _counter(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0
