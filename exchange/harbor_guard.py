"""The guard between a worker and the ``harbor run`` it starts (standard library only; run by
path with the worker's interpreter, so it imports nothing of the app).

Harbor runs task containers. A worker that dies (killed, out of memory, a host restart of
the worker alone) must not leave them running, and Harbor's own teardown on a signal can
take minutes or hang. The guard:

- starts Harbor in a process group of its own, with a parent-death SIGTERM (should the
  guard itself be killed);
- receives SIGTERM when its worker dies (its own parent-death signal) and SIGINT when the
  run is cancelled;
- on either, asks Harbor to stop (SIGINT to its group: Harbor tears its trials down), waits
  ``--grace`` seconds, then SIGKILLs the group;
- in the end, whatever happened, removes every container and network Docker Compose made
  for a task folder under ``--folder`` (the run's own folder), so nothing of the run stays.

Usage: ``python harbor_guard.py --folder RUN_FOLDER --grace SECONDS --parent PID -- harbor ...``
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
WORKING_DIR = "com.docker.compose.project.working_dir"
PROJECT = "com.docker.compose.project"
stopping: list[int] = []


def _die_with_parent(sig: int) -> None:
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6").prctl(PR_SET_PDEATHSIG, sig)


def _harbor_preexec() -> None:  # pragma: no cover - runs in the child
    os.setsid()
    _die_with_parent(signal.SIGTERM)


def _on_signal(signum, _frame) -> None:
    stopping.append(signum)


def _stop(harbor: subprocess.Popen, grace: float) -> None:
    """SIGINT to Harbor's group; SIGKILL to it after ``grace`` seconds."""
    try:
        os.killpg(harbor.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        harbor.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(harbor.pid, signal.SIGKILL)  # what is left of the group (compose calls)
    harbor.wait()


def _docker(*args: str) -> str:
    try:
        done = subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def sweep(folder: str) -> list[str]:
    """Remove the containers Compose made for task folders under ``folder``, and their
    projects' networks; the ids of what was removed. Nothing without a Docker CLI (a cloud
    environment)."""
    if not shutil.which("docker"):
        return []
    root = os.path.realpath(folder).rstrip("/") + "/"
    containers, projects = [], set()
    for line in _docker(
        "container", "ls", "-a", "--filter", f"label={WORKING_DIR}",
        "--format", f'{{{{.ID}}}}\t{{{{.Label "{PROJECT}"}}}}\t{{{{.Label "{WORKING_DIR}"}}}}',
    ).splitlines():  # fmt: skip
        parts = line.split("\t")
        if len(parts) == 3 and (parts[2].rstrip("/") + "/").startswith(root):
            containers.append(parts[0])
            projects.add(parts[1])
    if containers:
        _docker("container", "rm", "-f", *containers)
    networks = [
        line.split("\t")[0]
        for line in _docker(
            "network",
            "ls",
            "--filter",
            f"label={PROJECT}",
            "--format",
            f'{{{{.ID}}}}\t{{{{.Label "{PROJECT}"}}}}',
        ).splitlines()  # fmt: skip
        if "\t" in line and line.split("\t")[1] in projects
    ]
    if networks:
        _docker("network", "rm", *networks)
    return containers + networks


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", required=True)
    parser.add_argument("--grace", type=float, default=60)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    _die_with_parent(signal.SIGTERM)
    if args.parent and os.getppid() != args.parent:
        stopping.append(signal.SIGTERM)  # the worker died before the guard could watch it
    harbor = None
    if not stopping:
        harbor = subprocess.Popen(command, preexec_fn=_harbor_preexec)  # noqa: PLW1509
    try:
        while harbor is not None and harbor.poll() is None and not stopping:
            time.sleep(0.5)
        if harbor is not None and stopping:
            _stop(harbor, args.grace)
    finally:
        removed = sweep(args.folder)
        if removed and stopping:
            print(f"harbor_guard: removed {len(removed)} containers and networks", flush=True)
    if stopping:
        return 128 + stopping[0]
    return harbor.returncode if harbor is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
