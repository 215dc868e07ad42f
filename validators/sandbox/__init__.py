"""Everything that runs task code goes through a sandbox here (tests, install scripts, a
release task's parser): ``local`` (bubblewrap namespaces, ``bwrap.py``) or ``docker``
(``docker.py``). If the configured backend cannot isolate, ``get_sandbox`` raises
``SandboxUnavailable`` and the check says so: task code never runs on the bare host."""

from django.conf import settings

from .base import (
    COPY_FAILED,
    ENV_ROOT,
    TESTBED,
    Mount,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    truncate_output,
)
from .bwrap import BwrapSandbox, probe, run_folder, sandbox_root, sandbox_user
from .docker import DockerSandbox
from .tree import (
    apply_patches,
    checkout,
    note_refused_overlay,
    overlay_generated,
    read_run_file,
)

__all__ = [
    "COPY_FAILED",
    "ENV_ROOT",
    "TESTBED",
    "BwrapSandbox",
    "DockerSandbox",
    "Mount",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "apply_patches",
    "checkout",
    "get_sandbox",
    "limits_from_settings",
    "note_refused_overlay",
    "overlay_generated",
    "probe",
    "read_run_file",
    "run_folder",
    "sandbox_root",
    "sandbox_user",
    "truncate_output",
]


def get_sandbox(name: str | None = None):
    """The sandbox named ``name`` (else ``settings.SANDBOX_BACKEND``), ready to isolate.

    SandboxUnavailable when it cannot: no silent fallback to running on the host.
    """
    name = name or settings.SANDBOX_BACKEND
    if name == BwrapSandbox.name:
        ok, reason = probe()
        if not ok:
            raise SandboxUnavailable(f"The local sandbox cannot isolate task code here: {reason}.")
        return BwrapSandbox()
    if name == DockerSandbox.name:
        ok, reason = DockerSandbox.available()
        if not ok:
            raise SandboxUnavailable(f"The docker sandbox is not available: {reason}.")
        return DockerSandbox(settings.SANDBOX_DOCKER_IMAGE)
    raise SandboxError(f"Unknown sandbox backend {name!r} (expected 'local' or 'docker').")


def limits_from_settings(**overrides) -> SandboxLimits:
    values = {
        "wall_s": settings.SANDBOX_WALL_S,
        "cpu_s": settings.SANDBOX_CPU_S,
        "memory_mb": settings.SANDBOX_MEMORY_MB,
        "processes": settings.SANDBOX_PROCESSES,
        "disk_mb": settings.SANDBOX_DISK_MB,
        "tmp_mb": settings.SANDBOX_TMP_MB,
        "shm_mb": settings.SANDBOX_SHM_MB,
    }
    values.update(overrides)
    return SandboxLimits(**values)
