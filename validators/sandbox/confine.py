"""A host program the app trusts, confined to the one folder of untrusted data it works on.

Harbor is the project's consumer, not task code, but everything it reads back — a trial's
logs, links and files — was written inside the task's containers. So ``harbor run`` starts in
a mount namespace (bubblewrap, the sandbox's binary) that shows it its own run folder and
nothing else of this machine that could be written or read by a link: the machine's ``/usr``
and a few ``/etc`` files read-only, the interpreter and virtual environment it runs from and
the project's ``harbor_agents/`` read-only, the Docker socket, a private ``/tmp``, a ``/dev``
of ``null`` and ``urandom`` only (a link to ``/dev/zero`` points at nothing), and a ``/proc``
of its own PID namespace (no ``/proc/1/root`` back onto the host). It keeps no capability.

A link a trial leaves to another run's trajectory, the app's database or a device then points
at nothing Harbor can open. Limits hold for the whole process tree (``preexec``): a cgroup
whose memory it cannot pass (``cgroups.py``; its peak is read back for the run's record),
CPU time and file size per process (RLIMIT_CPU, RLIMIT_FSIZE), no core files.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import cgroups
from .base import SandboxUnavailable
from .bwrap import ETC_ENTRIES, ROOT_LINKS, bwrap_binary
from .cgroups import RunCgroup

DOCKER_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock")
# What a Python program and the Docker CLI need of /etc: the sandbox's list and the accounts.
ETC = (*ETC_ENTRIES, "passwd", "group")


@dataclass(frozen=True)
class HostLimits:
    memory_mb: int
    cpu_s: int
    file_mb: int
    processes: int = 4096


def _system() -> list[str]:
    argv = ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), f"/{name}"]
    for name in ETC:
        if (Path("/etc") / name).exists():
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return argv


def _docker_socket() -> list[str]:
    """The Docker socket at its usual paths (``DOCKER_HOST`` as a unix socket too)."""
    host = os.environ.get("DOCKER_HOST", "")
    paths = [host.removeprefix("unix://")] if host.startswith("unix://") else []
    argv: list[str] = []
    for path in [*paths, *DOCKER_SOCKETS]:
        real = os.path.realpath(path)
        if os.path.exists(real) and path not in argv:
            argv += ["--bind", real, real]
            if real != path:
                argv += ["--symlink", real, path]
    return argv


def confined_command(
    command: Sequence[str],
    *,
    writable: Path,
    readable: Sequence[Path],
    env: Mapping[str, str],
) -> list[str]:
    """``command`` under bubblewrap, seeing ``writable`` (read-write) and ``readable``
    (read-only) at their own paths, with ``env`` as its whole environment."""
    binary = bwrap_binary()
    if binary is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed; Harbor cannot run confined.")
    argv = [str(binary), "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
    else:  # an unprivileged worker: a user namespace of its own, the same uid inside
        argv += ["--unshare-user", "--uid", str(os.geteuid()), "--gid", str(os.getegid())]
    argv += _system()
    argv += ["--proc", "/proc", "--tmpfs", "/dev"]
    argv += ["--dev-bind", "/dev/null", "/dev/null", "--dev-bind", "/dev/urandom", "/dev/urandom"]
    argv += ["--tmpfs", "/tmp"]
    seen: set[str] = set()
    for path in readable:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            argv += ["--ro-bind", real, real]
    argv += ["--bind", str(writable), str(writable)]
    argv += _docker_socket()
    argv += ["--chdir", str(writable), "--clearenv"]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return [*argv, "--", *command]


def host_cgroup(limits: HostLimits) -> tuple[RunCgroup | None, str]:
    """A cgroup holding the confined program's whole tree at ``limits.memory_mb``, or None and
    why this machine gives none."""
    where, why = cgroups.layout()
    if where is None:
        return None, why
    try:
        return RunCgroup(where, memory_bytes=limits.memory_mb << 20, processes=limits.processes), (
            where.describe()
        )
    except OSError as exc:
        return None, f"{where.describe()}: {exc.strerror}"


def host_preexec(limits: HostLimits, cgroup: RunCgroup | None):
    """The ``preexec_fn`` of the confined program's first process (its tree inherits it):
    system calls only, so it is safe whichever thread forks. A write past the file size
    limit fails (Python ignores SIGXFSZ, and the programs it starts inherit that)."""
    cpu = max(1, int(limits.cpu_s))
    file_size = int(limits.file_mb) << 20
    # Without a cgroup each process is held alone: twice the run's memory of address space
    # (the Docker CLI, a Go program, reserves far more than it uses).
    address_space = (int(limits.memory_mb) << 21) if cgroup is None else None

    def apply() -> None:
        os.setsid()
        if cgroup is not None:
            cgroup.join()
        else:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def memory_peak(cgroup: RunCgroup | None) -> int | None:
    """The most memory the cgroup's processes held at once, in bytes (None without one)."""
    if cgroup is None or not cgroup.folders:
        return None
    folder = cgroup.folders[0]
    name = "memory.peak" if cgroup.layout.version == 2 else "memory.max_usage_in_bytes"
    try:
        return int((folder / name).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
