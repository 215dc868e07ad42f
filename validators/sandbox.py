"""Run task code (a repository's test command) with limits, and prepare the tree it runs in.

Anything an author or an upstream project wrote is untrusted: a test may loop forever, allocate
without bound, fork children that outlive it, print gigabytes, read the server's secrets from
the environment or call out to the network. A validation run must end in a result either way,
so every execution of task code goes through a sandbox here:

* :class:`LocalSandbox` - a subprocess in its own session with ``setrlimit`` limits, a wall-time
  limit enforced by killing the whole process group, a minimal environment, output to a file,
  and no network when the machine allows a network namespace (``unshare --net``).
* :class:`DockerSandbox` - the same contract in a throwaway container (memory cgroup, no
  network), for deployments with a container engine.

:func:`checkout` materialises a commit's tree from a bare mirror without writing to the mirror
(a later "history leakage" check inspects it), :func:`apply_patches` applies the task's patches
there, and :func:`parse_pytest_results` reads per-test outcomes from ``pytest -rA`` output.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import clean_path, resolve_commit, run_git, stderr_text
from hilbench_annotate.toolkit.patches import PatchRefused

DEFAULT_DOCKER_IMAGE = "python:3.11-slim"
FSIZE_LIMIT_BYTES = 1 << 30  # no single file the task writes (nor its output) exceeds 1 GB
CHECKOUT_TIMEOUT_S = 300

# Messages that mean an allocation was refused. Under RLIMIT_AS the kernel refuses the mmap/brk
# and the program reports it in its own words: Python raises MemoryError, libc callers print
# strerror(ENOMEM), C++ throws std::bad_alloc, other runtimes say "out of memory".
_MEMORY_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "out of memory",
    "Out of memory",
)


class SandboxError(DomainError):
    """The sandbox itself could not run the command (no engine, no image, ...)."""


@dataclass
class SandboxLimits:
    """Per-run limits. ``cpu_s`` is CPU time (all of the run's processes count separately under
    RLIMIT_CPU); ``memory_mb`` bounds address space locally and the memory cgroup in docker."""

    wall_s: float = 300
    cpu_s: int = 300
    memory_mb: int = 2048
    output_bytes: int = 200_000


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
    details: dict[str, Any] = field(default_factory=dict)


# --- helpers shared by the backends ------------------------------------------------------------


def truncate_output(data: bytes, limit: int) -> tuple[str, bool]:
    """``data`` decoded, keeping the first and last ``limit/2`` bytes when it is longer."""
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace"), False
    head, tail = limit // 2, limit - limit // 2
    omitted = len(data) - head - tail
    text = (
        data[:head].decode("utf-8", errors="replace")
        + f"\n\n[... {omitted} bytes of output omitted ...]\n\n"
        + data[len(data) - tail :].decode("utf-8", errors="replace")
    )
    return text, True


def _read_capped(path: Path, limit: int) -> tuple[str, bool]:
    """The output file's head and tail, without reading a huge file into memory."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        if size <= limit:
            return truncate_output(handle.read(), limit)
        head = handle.read(limit // 2)
        handle.seek(size - (limit - limit // 2))
        tail = handle.read()
    omitted = size - len(head) - len(tail)
    text = (
        head.decode("utf-8", errors="replace")
        + f"\n\n[... {omitted} bytes of output omitted ...]\n\n"
        + tail.decode("utf-8", errors="replace")
    )
    return text, True


def _killed_by(exit_code: int | None, signum: int) -> bool:
    """Killed by ``signum``: directly (negative code) or reported by a shell (128 + n)."""
    return exit_code is not None and exit_code in (-signum, 128 + signum)


def _memory_exceeded(exit_code: int | None, output: str, timed_out: bool) -> bool:
    """Heuristic: a failed run whose output reports a refused allocation, or a SIGKILL we did
    not send (the kernel's OOM killer). A passing run that merely prints "MemoryError" (a test
    about MemoryError, say) is not flagged, nor is a run we killed for its wall time."""
    if exit_code in (0, None) or timed_out:
        return False
    if _killed_by(exit_code, signal.SIGKILL):
        return True
    return any(marker in output for marker in _MEMORY_MARKERS)


def default_path() -> str:
    """``PATH`` inside the sandbox: this interpreter's directory first, so ``python`` is the
    server's Python (with pytest installed) rather than whatever the system has."""
    return os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])


# --- local backend -----------------------------------------------------------------------------


@functools.cache
def network_isolation() -> tuple[list[str], str]:
    """The prefix that runs a command without network, and why (empty prefix: not possible).

    Probed once per process: ``unshare --net`` needs root, otherwise an unprivileged user
    namespace (``--map-root-user``), which some kernels and container runtimes forbid. The new
    namespace has only a loopback interface, and it is down, so even ``127.0.0.1`` is out of
    reach: a test cannot talk to the server's database or Redis either.
    """
    candidates = [["unshare", "--net"]] if os.geteuid() == 0 else []
    candidates.append(["unshare", "--net", "--map-root-user"])
    reasons = []
    for prefix in candidates:
        try:
            probe = subprocess.run(
                [*prefix, "true"], capture_output=True, timeout=10, env={"PATH": default_path()}
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{' '.join(prefix)}: {exc}")
            continue
        if probe.returncode == 0:
            return prefix, f"network namespace via `{' '.join(prefix)}`"
        reasons.append(f"{' '.join(prefix)}: {probe.stderr.decode(errors='replace').strip()}")
    return [], "no network isolation (unshare unavailable: " + "; ".join(reasons) + ")"


def _limit_child(limits: SandboxLimits):
    """The ``preexec_fn``: resource limits set in the child between fork and exec.

    RLIMIT_AS bounds address space (not resident memory: runtimes that reserve large virtual
    ranges, e.g. the JVM or Go, need a higher limit); RLIMIT_CPU sends SIGXCPU at the soft
    limit and SIGKILL a little later; no core files; no file larger than 1 GB. RLIMIT_NPROC is
    not set: it is per user (it would count the server's own processes) and root ignores it.
    """
    memory = int(limits.memory_mb) * 1024 * 1024
    cpu = max(1, int(limits.cpu_s))

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT_BYTES, FSIZE_LIMIT_BYTES))

    return apply


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class LocalSandbox:
    """A subprocess with limits, on this machine.

    The command runs through ``/bin/sh -c`` in a new session, so it leads its own process group
    and everything it forks can be killed at once: on timeout, and also after a normal exit
    (a test that leaves a server running in the background must not outlive its run). A
    process that calls ``setsid`` itself escapes the group; only a container (docker backend)
    or a PID namespace contains that.
    """

    name = "local"

    def run(
        self,
        *,
        workdir: Path,
        command: str,
        limits: SandboxLimits,
        env: Mapping[str, str] | None = None,
    ) -> SandboxResult:
        workdir = Path(workdir).resolve()
        prefix, isolation = network_isolation()
        run_env = {"PATH": default_path(), "HOME": str(workdir), "LANG": "C.UTF-8"}
        if env:
            run_env.update(env)
        argv = [*prefix, "/bin/sh", "-c", command]
        timed_out = False
        with tempfile.TemporaryDirectory(prefix="hilbench-sandbox-out-") as scratch:
            output_path = Path(scratch) / "output"
            start = time.monotonic()
            with output_path.open("wb") as output_file:
                process = subprocess.Popen(
                    argv,
                    cwd=workdir,
                    env=run_env,
                    stdin=subprocess.DEVNULL,
                    stdout=output_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_limit_child(limits),  # only setrlimit: safe after fork
                    close_fds=True,
                )
                try:
                    exit_code = process.wait(timeout=limits.wall_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill_group(process.pid)
                    exit_code = process.wait()
                finally:
                    # Children left behind (background jobs, daemons) die with the run.
                    _kill_group(process.pid)
            duration = time.monotonic() - start
            output, truncated = _read_capped(output_path, limits.output_bytes)
        cpu_exceeded = not timed_out and _killed_by(exit_code, signal.SIGXCPU)
        return SandboxResult(
            exit_code=exit_code,
            output=output,
            truncated=truncated,
            timed_out=timed_out,
            memory_exceeded=_memory_exceeded(exit_code, output, timed_out),
            duration_s=round(duration, 3),
            backend=self.name,
            cpu_exceeded=cpu_exceeded,
            network_isolated=bool(prefix),
            details={"network": isolation},
        )


# --- docker backend ----------------------------------------------------------------------------


class DockerSandbox:
    """A throwaway container per run (docker SDK): the work tree bind-mounted at ``/work``,
    a memory cgroup (``mem_limit``, no extra swap), one CPU, RLIMIT_CPU as a ulimit, a PID
    limit and no network. The container is removed in a ``finally`` rather than with
    ``auto_remove``, so its logs and OOM flag can still be read after it exits.

    The image must have what the test command needs (e.g. pytest); it comes from
    ``settings.SANDBOX_DOCKER_IMAGES[repo_name]``, else ``settings.SANDBOX_DOCKER_IMAGE``,
    else ``python:3.11-slim`` (see :func:`docker_image_for`).
    """

    name = "docker"
    mount_point = "/work"

    def __init__(self, image: str | None = None, *, pids_limit: int = 512):
        self.image = image or DEFAULT_DOCKER_IMAGE
        self.pids_limit = pids_limit

    @staticmethod
    def available() -> tuple[bool, str]:
        """Whether a container engine answers, and why not when it does not."""
        try:
            import docker
        except ImportError as exc:
            return False, f"the docker SDK is not installed ({exc})"
        try:
            client = docker.from_env(timeout=5)
            client.ping()
        except Exception as exc:  # noqa: BLE001 - any failure means "not available"
            return False, f"no container engine answers ({type(exc).__name__}: {exc})"
        version = client.version().get("Version", "?")
        client.close()
        return True, f"docker engine {version}"

    def run(
        self,
        *,
        workdir: Path,
        command: str,
        limits: SandboxLimits,
        env: Mapping[str, str] | None = None,
    ) -> SandboxResult:
        import docker
        from docker.types import Ulimit

        try:
            client = docker.from_env(timeout=30)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"The docker sandbox is not available: {exc}") from exc
        run_env = {"HOME": self.mount_point, "LANG": "C.UTF-8"}
        if env:
            run_env.update({k: v for k, v in env.items() if k != "PATH"})
        cpu = max(1, int(limits.cpu_s))
        start = time.monotonic()
        timed_out = False
        container = None
        try:
            try:
                container = client.containers.run(
                    self.image,
                    ["/bin/sh", "-c", command],
                    detach=True,
                    working_dir=self.mount_point,
                    volumes={
                        str(Path(workdir).resolve()): {"bind": self.mount_point, "mode": "rw"}
                    },
                    environment=run_env,
                    mem_limit=f"{int(limits.memory_mb)}m",
                    memswap_limit=f"{int(limits.memory_mb)}m",
                    nano_cpus=1_000_000_000,
                    pids_limit=self.pids_limit,
                    ulimits=[Ulimit(name="cpu", soft=cpu, hard=cpu + 5), Ulimit(name="core")],
                    network_disabled=True,
                )
            except docker.errors.DockerException as exc:
                raise SandboxError(
                    f"The docker sandbox could not start {self.image}: {exc}"
                ) from exc
            try:
                status = container.wait(timeout=limits.wall_s)
                exit_code = int(status.get("StatusCode", -1))
            except Exception:  # noqa: BLE001 - requests' ReadTimeout/ConnectionError: wall limit
                timed_out = True
                with contextlib.suppress(docker.errors.DockerException):
                    container.kill()
                exit_code = int(container.wait(timeout=30).get("StatusCode", -1))
            duration = time.monotonic() - start
            data = container.logs(stdout=True, stderr=True)
            container.reload()
            oom_killed = bool(container.attrs.get("State", {}).get("OOMKilled"))
        finally:
            if container is not None:
                with contextlib.suppress(docker.errors.DockerException):
                    container.remove(force=True)
            client.close()
        output, truncated = truncate_output(data, limits.output_bytes)
        return SandboxResult(
            exit_code=exit_code,
            output=output,
            truncated=truncated,
            timed_out=timed_out,
            memory_exceeded=oom_killed or _memory_exceeded(exit_code, output, timed_out),
            duration_s=round(duration, 3),
            backend=self.name,
            cpu_exceeded=not timed_out and _killed_by(exit_code, signal.SIGXCPU),
            network_isolated=True,
            details={"network": "container with networking disabled", "image": self.image},
        )


def docker_image_for(repo_name: str | None = None) -> str:
    """The image a task environment's tests run in under the docker backend."""
    from django.conf import settings

    images = getattr(settings, "SANDBOX_DOCKER_IMAGES", None) or {}
    if repo_name and repo_name in images:
        return images[repo_name]
    return getattr(settings, "SANDBOX_DOCKER_IMAGE", None) or DEFAULT_DOCKER_IMAGE


def get_sandbox(name: str | None = None, *, image: str | None = None):
    """The sandbox named ``name``, else ``settings.SANDBOX_BACKEND`` ("local" by default)."""
    if name is None:
        from django.conf import settings

        name = getattr(settings, "SANDBOX_BACKEND", "local")
    if name == LocalSandbox.name:
        return LocalSandbox()
    if name == DockerSandbox.name:
        return DockerSandbox(image or docker_image_for())
    raise SandboxError(f"Unknown sandbox backend {name!r} (expected 'local' or 'docker').")


# --- preparing the tree ------------------------------------------------------------------------


def _tree_rows(repo_path: Path, sha: str) -> list[tuple[str, str, str, str]]:
    output = run_git(repo_path, ["ls-tree", "-r", "-z", "--full-tree", sha]).stdout
    rows = []
    for record in output.split(b"\x00"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, object_type, oid = meta.decode().split()
        rows.append((mode, object_type, oid, name.decode("utf-8", "surrogateescape")))
    return rows


def _read_blobs(repo_path: Path, oids: list[str]) -> dict[str, bytes]:
    """Blob contents by oid, from one ``git cat-file --batch``."""
    if not oids:
        return {}
    data = run_git(
        repo_path,
        ["cat-file", "--batch"],
        input=("\n".join(oids) + "\n").encode(),
        timeout=CHECKOUT_TIMEOUT_S,
    ).stdout
    blobs: dict[str, bytes] = {}
    position = 0
    while position < len(data):
        end = data.index(b"\n", position)
        header = data[position:end].decode().split()
        if len(header) != 3:
            raise DomainError(f"git cat-file could not read object {header[0]}.")
        size = int(header[2])
        blobs[header[0]] = data[end + 1 : end + 1 + size]
        position = end + 1 + size + 1
    return blobs


def checkout(repo_path: Path, commit: str, dest: Path) -> Path:
    """Write the tree of ``commit`` from the bare mirror into ``dest`` and return ``dest``.

    Read with ``ls-tree`` and ``cat-file`` (plumbing that only reads the mirror) rather than
    ``git archive``: archive honours the tree's ``.gitattributes``, so ``export-ignore`` would
    silently drop files (often the tests) and ``export-subst`` would rewrite others. The tree
    is written as committed: no end-of-line conversion, no filters, executable bits kept,
    submodules as empty directories. Paths are checked (no ``..``, no ``.git``) and symbolic
    links are created last, so no file is ever written through one.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    sha = resolve_commit(repo_path, commit)
    rows = _tree_rows(repo_path, sha)
    blobs = _read_blobs(repo_path, sorted({oid for _, kind, oid, _ in rows if kind == "blob"}))
    links = []
    for mode, kind, oid, name in rows:
        path = clean_path(name)
        if any(part.lower() == ".git" for part in path.split("/")):
            raise DomainError(f"The tree at {commit} has a path inside .git: {path!r}.")
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "commit":
            target.mkdir(exist_ok=True)
        elif mode == "120000":
            links.append((target, blobs[oid]))
        else:
            target.write_bytes(blobs[oid])
            target.chmod(0o755 if mode == "100755" else 0o644)
    for target, link in links:
        os.symlink(os.fsdecode(link), target)
    return dest


def apply_patches(dest: Path, patches: list[tuple[str, str]]) -> None:
    """Apply ``(label, text)`` patches to the plain tree in ``dest``, in order.

    ``git apply`` outside a repository behaves like ``patch -p1`` without fuzz and refuses
    paths that leave the directory. ``GIT_CEILING_DIRECTORIES`` stops it from discovering a
    repository above ``dest`` (which would make it apply relative to that repository).
    Whitespace is not judged here: that is the patch check's job, and upstream patches may
    legitimately contain trailing spaces. Empty patches are skipped. A refusal raises
    :class:`~toolkit.patches.PatchRefused` naming the patch (``label``) with git's message.
    """
    dest = Path(dest).resolve()
    for label, text in patches:
        if not text or not text.strip():
            continue
        result = run_git(
            None,
            ["apply", "--whitespace=nowarn", "-"],
            input=text.encode("utf-8", "surrogateescape"),
            cwd=dest,
            env={"GIT_CEILING_DIRECTORIES": str(dest.parent)},
            check=False,
            timeout=CHECKOUT_TIMEOUT_S,
        )
        if result.returncode != 0:
            message = stderr_text(result)
            raise PatchRefused(
                f"The {label} does not apply to the checked-out tree. git apply says:\n{message}",
                label=label,
                git_message=message,
            )


# --- reading pytest's report -------------------------------------------------------------------

_STATUSES = {
    "PASSED": "PASSED",
    "FAILED": "FAILED",
    "ERROR": "ERROR",
    "SKIPPED": "SKIPPED",
    "XFAIL": "SKIPPED",  # an expected failure proves neither a pass nor a fail
    "XPASS": "PASSED",  # the test body passed (a strict XPASS is reported as FAILED)
}
_RANK = {"PASSED": 0, "SKIPPED": 1, "FAILED": 2, "ERROR": 3}
_SUMMARY_HEADER = re.compile(r"^=+ short test summary info =+\s*$")
_SUMMARY_END = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|deselected|no tests ran)\b")
_SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$")
_VERBOSE_LINE = re.compile(
    r"^(\S.*?::.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b(?:.*?)\s*\[\s*\d+%\]\s*$"
)
_SKIP_LOCATION = re.compile(r"^\[\d+\] (.+?:\d+)(?::.*)?$")


def _node_id(rest: str) -> str:
    """The test id at the start of a summary line's remainder (``id`` or ``id - message``).

    A parametrized id may contain spaces, brackets and even `` - ``; it ends at the first
    ``]`` followed by the end of the line or by `` - ``.
    """
    bracket = rest.find("[")
    dash = rest.find(" - ")
    if bracket != -1 and (dash == -1 or bracket < dash):
        for index in range(bracket, len(rest)):
            if rest[index] == "]" and (index + 1 == len(rest) or rest.startswith(" - ", index + 1)):
                return rest[: index + 1]
    return rest[:dash] if dash != -1 else rest.rstrip()


def _record(results: dict[str, str], test_id: str, status: str) -> None:
    """Keep the worst outcome: a test that passed but errored in teardown is an ERROR."""
    previous = results.get(test_id)
    if previous is None or _RANK[status] > _RANK[previous]:
        results[test_id] = status


def parse_pytest_results(output: str) -> dict[str, str]:
    """``{test_id: "PASSED" | "FAILED" | "ERROR" | "SKIPPED"}`` from ``pytest -rA`` output.

    The short test summary is authoritative. Only the lines after its (last) header are read,
    because the PASSES section before it replays captured output, in which a test could print
    a line that looks like ``FAILED x``. Progress lines of ``-v`` runs (``id PASSED [ 50%]``)
    are read too, as the only place a skipped test's id appears: the summary reports skips by
    location (``SKIPPED [1] tests/t.py:12: reason``), which is recorded under ``tests/t.py:12``.
    Without a summary header (a truncated run) summary-looking lines anywhere are used.
    """
    lines = output.splitlines()
    results: dict[str, str] = {}
    for line in lines:
        match = _VERBOSE_LINE.match(line)
        if match:
            _record(results, match.group(1), _STATUSES[match.group(2)])
    headers = [index for index, line in enumerate(lines) if _SUMMARY_HEADER.match(line)]
    summary = lines[headers[-1] + 1 :] if headers else lines
    for line in summary:
        if headers and _SUMMARY_END.match(line):
            break
        match = _SUMMARY_LINE.match(line)
        if not match:
            continue
        status, rest = _STATUSES[match.group(1)], match.group(2)
        location = _SKIP_LOCATION.match(rest)
        if location and match.group(1) == "SKIPPED":
            _record(results, location.group(1), status)
            continue
        _record(results, _node_id(rest), status)
    return results
