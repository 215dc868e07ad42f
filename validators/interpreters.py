"""The Python interpreters environments are built with: the machine's, by version.

A specification asks for a version ("3.9"); the interpreter comes from
``HILBENCH_SANDBOX_PYTHONS``, then ``/usr`` (which every sandbox sees read-only), then pyenv's
versions. One outside ``/usr`` (pyenv keeps them under the root user's home, which the sandbox
user may not read) is copied once into the sandbox root, without its site-packages, and shown
to runs read-only at its own path (its libpython is found through an absolute rpath).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from hilbench_annotate.errors import DomainError

from .sandbox import Mount, sandbox_root

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Interpreter:
    version: str  # the full version, e.g. "3.9.18"
    executable: str  # its path inside the sandbox (the same as on the machine)
    mount: Mount | None  # how runs see it (None: under /usr, already visible)


def _version_of(executable: Path) -> str | None:
    try:
        done = subprocess.run(
            [str(executable), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=20,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _matches(found: str, wanted: str) -> bool:
    return found == wanted or found.startswith(wanted + ".")


def _candidates(wanted: str):
    major_minor = ".".join(wanted.split(".")[:2])
    configured = settings.SANDBOX_PYTHONS.get(wanted) or settings.SANDBOX_PYTHONS.get(major_minor)
    if configured:
        yield Path(configured)
    for folder in ("/usr/bin", "/usr/local/bin"):
        yield Path(folder) / f"python{major_minor}"
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    for root in filter(None, roots):
        versions = Path(root) / "versions"
        if versions.is_dir():
            for prefix in sorted(versions.glob(f"{major_minor}*"), reverse=True):
                yield prefix / "bin" / f"python{major_minor}"


def available_versions() -> list[str]:
    """The Python versions this machine can build environments with (for the Environment tab)."""
    found = set()
    for minor in range(6, 15):
        for candidate in _candidates(f"3.{minor}"):
            if candidate.is_file():
                found.add(f"3.{minor}")
                break
    return sorted(found, key=lambda v: int(v.split(".")[1]))


def _prefix(executable: Path) -> Path:
    return executable.resolve().parent.parent


def _store_copy(prefix: Path, version: str) -> Path:
    """A copy of ``prefix`` under the sandbox root, made once, without its site-packages."""
    store = sandbox_root() / "interpreters"
    store.mkdir(exist_ok=True, mode=0o755)
    store.chmod(0o755)
    target = store / f"cpython-{version}"
    if (target / ".complete").exists():
        return target
    partial = store / f".copy-{version}-{uuid.uuid4().hex}"
    ignore = shutil.ignore_patterns("site-packages", "test", "tests", "__pycache__", "idle_test")
    shutil.copytree(prefix, partial, symlinks=True, ignore=ignore)
    for lib in partial.glob("lib/python*"):
        (lib / "site-packages").mkdir(exist_ok=True)
    for directory, _dirs, files in os.walk(partial):
        os.chmod(directory, 0o755)  # noqa: S103 - the sandbox user reads it
        for name in files:
            path = Path(directory) / name
            if not path.is_symlink():
                path.chmod(0o755 if os.access(path, os.X_OK) else 0o644)
    (partial / ".complete").write_text(str(prefix))
    try:
        partial.rename(target)
    except OSError:  # another worker copied it first
        shutil.rmtree(partial, ignore_errors=True)
    return target


def resolve(wanted: str) -> Interpreter:
    """The machine's interpreter for ``wanted`` ("3.9" or "3.9.18"), or DomainError saying
    which versions there are."""
    if not _VERSION.match(wanted or ""):
        raise DomainError(f"The specification asks for Python {wanted!r}; give a version.")
    for candidate in _candidates(wanted):
        if not candidate.is_file():
            continue
        version = _version_of(candidate)
        if not version or not _matches(version, wanted):
            continue
        prefix = _prefix(candidate)
        if prefix.is_relative_to("/usr"):  # every run sees /usr already
            return Interpreter(version, str(candidate), None)
        copy = _store_copy(prefix, version)
        return Interpreter(version, str(candidate), Mount(copy, str(prefix)))
    have = ", ".join(available_versions()) or "none"
    raise DomainError(
        f"No Python {wanted} on this machine (it has {have}); install it, or name one in "
        "HILBENCH_SANDBOX_PYTHONS."
    )
