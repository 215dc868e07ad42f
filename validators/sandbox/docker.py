"""The container backend (docker SDK), with the local backend's contract: no network unless a
build asks for it, a read-only root, a non-root user, every capability dropped, no new
privileges, PID / memory / CPU limits, the repository copied into a size-limited tmpfs at
``/testbed`` and a private ``/tmp``. An environment is an image built from a generated
Dockerfile (``validators/environments.py``)."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .base import (
    COPY_FAILED,
    SANDBOX_UID,
    SOURCE,
    TESTBED,
    CappedOutput,
    Mount,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    host_paths_hidden,
    killed_by,
    memory_exceeded,
)
from .bwrap import FORK_MARKERS, under_root

DEFAULT_IMAGE = "python:3.11-slim"
IMAGE_TREE = f"{TESTBED}-image"  # an environment image's installed repository
START = (
    f"if [ -d {IMAGE_TREE} ]; then cp -a {IMAGE_TREE}/. {TESTBED}/ || exit {COPY_FAILED}; fi; "
    f"if [ -d {SOURCE} ]; then cp -a {SOURCE}/. {TESTBED}/ || exit {COPY_FAILED}; fi; "
    f'cd {TESTBED} && exec /bin/sh -c "$HILBENCH_COMMAND"'
)


def container_output(container, limit: int) -> tuple[str, bool]:
    """The container's logs, streamed through a cap (head and tail kept): a run that printed
    gigabytes is never read into memory whole."""
    output = CappedOutput(limit)
    for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=False):
        output.add(chunk)
    return output.text()


class DockerSandbox:
    """A throwaway container per run; removed in a ``finally`` so its logs and OOM flag can
    still be read after it exits."""

    name = "docker"

    def __init__(self, image: str | None = None):
        self.image = image or DEFAULT_IMAGE

    @staticmethod
    def available() -> tuple[bool, str]:
        """Whether a container engine answers, and why not when it does not."""
        import docker

        try:
            client = docker.from_env(timeout=5)
            client.ping()
        except Exception as exc:  # noqa: BLE001 - any failure means "not available"
            return False, f"no container engine answers ({type(exc).__name__}: {exc})"
        version = client.version().get("Version", "?")
        client.close()
        return True, f"docker engine {version}"

    @staticmethod
    def container_options(
        *, limits: SandboxLimits, tree: Path | None, mounts: Sequence[Mount], network: bool
    ) -> dict:
        """The isolation contract as docker SDK arguments (tested without an engine)."""
        from docker.types import Mount as DockerMount  # the SDK is loaded when a run needs it
        from docker.types import Ulimit

        binds = [
            DockerMount(
                target=m.target, source=str(m.source), type="bind", read_only=not m.writable
            )
            for m in mounts
        ]
        if tree is not None:
            binds.append(DockerMount(target=SOURCE, source=str(tree), type="bind", read_only=True))
        cpu = max(1, int(limits.cpu_s))
        # The container's memory cgroup counts its tmpfs pages too: room for them, as locally.
        memory_mb = limits.run_memory_mb()
        return {
            "mounts": binds,
            "tmpfs": {
                "/tmp": f"size={int(limits.tmp_mb)}m,mode=1777",
                # Owned by the run's user: `cp -a` sets the times of /testbed itself.
                TESTBED: f"size={int(limits.disk_mb)}m,mode=0777,"
                f"uid={SANDBOX_UID},gid={SANDBOX_UID}",
            },
            "shm_size": f"{int(limits.shm_mb)}m",
            "read_only": True,
            "user": f"{SANDBOX_UID}:{SANDBOX_UID}",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "network_disabled": not network,
            "mem_limit": f"{memory_mb}m",
            "memswap_limit": f"{memory_mb}m",
            "nano_cpus": 1_000_000_000,
            "pids_limit": int(limits.processes),
            "ulimits": [
                Ulimit(name="cpu", soft=cpu, hard=cpu + 5),
                Ulimit(name="core", soft=0, hard=0),
                Ulimit(
                    name="fsize", soft=int(limits.file_mb) << 20, hard=int(limits.file_mb) << 20
                ),
            ],
        }

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
        image: str | None = None,
    ) -> SandboxResult:
        if persist_tree:
            raise SandboxError("The docker backend builds environments as images, not in trees.")
        under_root([tree, *(m.source for m in mounts)])  # the local backend's contract too
        import docker

        try:
            client = docker.from_env(timeout=30)
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(f"The docker sandbox is not available: {exc}") from exc
        run_env = {"HOME": "/tmp", "LANG": "C.UTF-8", **(env or {}), "HILBENCH_COMMAND": command}
        start = time.monotonic()
        timed_out, container = False, None
        try:
            try:
                container = client.containers.run(
                    image or self.image,
                    ["/bin/sh", "-c", START],
                    detach=True,
                    environment=run_env,
                    **self.container_options(
                        limits=limits, tree=tree, mounts=mounts, network=network
                    ),
                )
            except docker.errors.DockerException as exc:
                raise SandboxError(f"The docker sandbox could not start: {exc}") from exc
            try:
                exit_code = int(container.wait(timeout=limits.wall_s).get("StatusCode", -1))
            except Exception:  # noqa: BLE001 - requests' ReadTimeout: the wall-time limit
                timed_out = True
                with contextlib.suppress(docker.errors.DockerException):
                    container.kill()
                exit_code = int(container.wait(timeout=30).get("StatusCode", -1))
            duration = time.monotonic() - start
            output, truncated = container_output(container, limits.output_bytes)
            container.reload()
            oom_killed = bool(container.attrs.get("State", {}).get("OOMKilled"))
        finally:
            if container is not None:
                with contextlib.suppress(docker.errors.DockerException):
                    container.remove(force=True)
            client.close()
        return SandboxResult(
            exit_code=exit_code,
            output=host_paths_hidden(output),
            truncated=truncated,
            timed_out=timed_out,
            memory_exceeded=oom_killed or memory_exceeded(exit_code, output, timed_out),
            duration_s=round(duration, 3),
            backend=self.name,
            cpu_exceeded=not timed_out and killed_by(exit_code, signal.SIGXCPU),
            # As the local backend reads them: a fork refused at pids_limit, a full tmpfs.
            processes_exceeded=any(marker in output for marker in FORK_MARKERS),
            disk_exceeded="No space left on device" in output,
            network_isolated=not network,
            details={"isolation": "container", "image": image or self.image},
        )
