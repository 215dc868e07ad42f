"""Environment builds: what a SWE task's tests need, built once per specification and reused.

A build runs as a job (``EnvironmentBuild``). It writes into a fresh folder, renames it to a
version folder of its own (``.v-<key>-<hex>``) only when every step passed, with
``manifest.json`` last, and then points the link ``SANDBOX_ROOT/environments/<key>`` at it in
one rename: a worker killed mid-build leaves a stray folder (swept) and a job the reaper hands
to another worker, never a half-built environment that a test run would use. A forced rebuild
never deletes a version a run holds (``environment_use``): the old one stays until no run
holds it, then a later build sweeps it. Network is allowed while building (package
installs); never while tests run.

What the build's sandbox may write is only the folders it fills — the repository
(``/testbed``), ``/env/venv``, ``/env/go`` — never the environment's own folder, where the
host writes ``manifest.json``: task code could otherwise leave a link there for the host to
write through. Folders that were the sandbox's are then given back to the worker's user and
read with links left unfollowed. Each step works on copies of them in one tmpfs of the disk
limit (``SANDBOX_DISK_MB``, all of them together) and only what fit is copied back, so no
build leaves more than the limit. Trees a build wrote are walked and removed without
recursing (``toolkit/trees.py``): a folder thousands deep fails no build and blocks no sweep.

Steps (local backend): ``repository`` (the tree at the setup commit, as a fresh git
repository, so tools that ask git for a version work), ``interpreter``, ``venv``,
``requirements`` (the repository's own requirement files, resolved on the host from the
mirror at ``requirements_commit`` — ``validators/requirements.py`` — and installed from
``/env/requirements/requirements.txt``), ``packages``, ``pre_install``, ``install``,
``finish`` (list the files the install generated in the repository — a version module,
``*.egg-info`` — which every test tree then carries).
Task code runs in the sandbox with the environment mounted at ``/env`` and the repository at
``/testbed``, the paths it keeps afterwards.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shlex
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from hilbench_annotate.envspec import build_key, spec_clean
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import (
    job_claim,
    job_fail,
    job_finish,
    job_heartbeat,
    job_heartbeat_while,
    job_send,
)
from hilbench_annotate.toolkit.gitrepo import resolve_commit, run_git
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.toolkit.trees import files_under, own_tree, remove_tree

from . import interpreters
from .environment_images import REQUIREMENTS_FILE, base_image, dockerfile
from .models import EnvironmentBuild
from .requirements import Requirements, conda_unavailable, resolve_requirements
from .sandbox import (
    ENV_ROOT,
    Mount,
    SandboxError,
    checkout,
    get_sandbox,
    limits_from_settings,
    read_run_file,
    sandbox_root,
    sandbox_user,
)

LOG_LIMIT = 200_000
STEP_TAIL = 4000
MANIFEST = "manifest.json"
VERSION = ".v-"  # a built environment's folder: .v-<key>-<hex>; <key> links to it
LOCKS = ".locks"  # flock files of the versions, by inode (never shown to a sandbox)
PASS_THROUGH = ("PIP_", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuiltEnvironment:
    """A ready environment: where it is and how a test run mounts and uses it."""

    key: str
    path: Path
    manifest: dict[str, Any]

    @property
    def mounts(self) -> list[Mount]:
        mounts = [Mount(self.path, ENV_ROOT)]
        interpreter = self.manifest.get("interpreter_mount")
        if interpreter:
            mounts.append(Mount(Path(interpreter["source"]), interpreter["target"]))
        return mounts

    @property
    def testbed(self) -> Path:
        return self.path / "testbed"

    def run_env(self, spec: dict[str, Any]) -> dict[str, str]:
        """Variables of a test run: the specification's, and the environment's tools first."""
        path = "/usr/local/bin:/usr/bin:/bin"
        if self.manifest.get("venv"):
            path = f"{ENV_ROOT}/venv/bin:{path}"
        env = {"PATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
        if spec.get("language") == "go":
            env.update(GOPATH=f"{ENV_ROOT}/go", GOMODCACHE=f"{ENV_ROOT}/go/pkg/mod")
            env.update(GOCACHE="/tmp/go-build", GOFLAGS="-mod=mod", GOPROXY="off")
        return {**env, **spec.get("env", {})}


def environments_root() -> Path:
    root = sandbox_root() / "environments"
    root.mkdir(exist_ok=True, mode=0o755)
    root.chmod(0o755)
    return root


def environment_key(swe_environment) -> str:
    spec = spec_clean(swe_environment.environment_spec)
    return build_key(spec, base_commit=swe_environment.base_commit)


def ready_environment(key: str) -> BuiltEnvironment | None:
    """The built environment for ``key``, if its build finished: the version folder its link
    names (resolved now, so a rebuild that moves the link does not change what a run mounts).
    A real folder at ``<key>`` is an environment built before versions, whose root the build
    could write: it is not used, and the next build replaces it."""
    root = environments_root()
    link = root / key
    if not link.is_symlink():
        return None
    path = root / os.readlink(link)
    if path.parent != root or not path.name.startswith(VERSION) or not path.is_dir():
        return None
    try:
        manifest = json_loads(read_run_file(path / MANIFEST) or b"{}")
    except ValueError:
        return None
    return BuiltEnvironment(key, path, manifest) if manifest.get("ready") else None


def _lock(path: Path, operation: int) -> int | None:
    """An fd holding ``flock(operation)`` on the lock of the version folder ``path``, or None
    (``LOCK_NB`` refused, or the folder is gone). The lock file is named by the folder's inode,
    which a rename keeps, and lives outside every folder a sandbox sees, so task code cannot
    take it. Close the fd to release it."""
    locks = environments_root() / LOCKS
    locks.mkdir(exist_ok=True, mode=0o700)
    try:
        inode = os.stat(path, follow_symlinks=False).st_ino
    except FileNotFoundError:
        return None
    fd = os.open(locks / str(inode), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, operation)
        if os.stat(path, follow_symlinks=False).st_ino != inode:
            raise FileNotFoundError(path)
    except (BlockingIOError, FileNotFoundError):  # held, or swept while we waited
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def environment_use(
    swe_environment, *, actor=None
) -> Iterator[tuple[BuiltEnvironment | None, Any]]:
    """``environment_for``, with the version held for the block: a forced rebuild meanwhile
    points the key at a new version but leaves this one in place until the block ends."""
    for _attempt in range(3):
        built, failed = environment_for(swe_environment, actor=actor)
        if built is None:
            yield None, failed
            return
        fd = _lock(built.path, fcntl.LOCK_SH)
        if fd is None:  # swept between finding it and holding it: find the new one
            continue
        try:
            yield built, None
        finally:
            os.close(fd)
        return
    raise DomainError("The task's environment was replaced three times while a run started.")


# --- starting and running a build ----------------------------------------------------------


@transaction.atomic
def environment_build_start(*, swe_environment, actor, force: bool = False) -> EnvironmentBuild:
    """Queue a build of the task's environment (sent once the transaction commits).

    ``force`` rebuilds an environment that is already built; otherwise a running build of
    the same key is returned instead of starting another.
    """
    build = _build_row(swe_environment, actor, force=force)
    if force and not build.rebuild:
        EnvironmentBuild.objects.filter(pk=build.pk).update(rebuild=True)
    if build.status == EnvironmentBuild.Status.QUEUED and not build.started_at:
        job_send(build)
    return build


def _build_row(swe_environment, actor, *, force: bool) -> EnvironmentBuild:
    if swe_environment.repository is None:
        raise DomainError("The task has no repository, so it has no environment to build.")
    spec = spec_clean(swe_environment.environment_spec)
    key = environment_key(swe_environment)
    if not force:
        live = EnvironmentBuild.objects.filter(
            key=key, status__in=[EnvironmentBuild.Status.QUEUED, EnvironmentBuild.Status.RUNNING]
        ).first()
        if live:
            return live
    return EnvironmentBuild.objects.create(
        key=key,
        backend=settings.SANDBOX_BACKEND,
        spec=spec,
        repository=swe_environment.repository,
        commit=swe_environment.base_commit,
        task=swe_environment.task,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )


def environment_for(swe_environment, *, actor=None) -> tuple[BuiltEnvironment | None, Any]:
    """The task's built environment, building it here (in this worker) when there is none.

    Returns ``(environment, None)`` or ``(None, failed_build)``.
    """
    key = environment_key(swe_environment)
    ready = ready_environment(key)
    if ready is not None:
        return ready, None
    build = _build_row(swe_environment, actor, force=True)
    environment_build_execute(build_id=build.pk)
    build.refresh_from_db()
    ready = ready_environment(key)
    return (ready, None) if ready else (None, build)


def environment_build_execute(*, build_id: int) -> None:
    """Claim the build and run its steps; idempotent (a finished build is left alone, one
    whose worker died is taken over and built again from the start). Whatever stops it, the
    row ends failed with the reason and its folder is removed: never left running."""
    if not job_claim(EnvironmentBuild, build_id):
        return
    build = EnvironmentBuild.objects.select_related("repository").get(pk=build_id)
    if ready_environment(build.key) is not None and not build.rebuild:
        _log(build, "already built by another build; reused")
        job_finish(EnvironmentBuild, build_id, step="", duration_s=0.0)
        return
    started = time.monotonic()
    work = environments_root() / f".build-{build.key}-{uuid.uuid4().hex[:8]}"
    try:
        _sweep_partial_builds()
        if build.backend == "docker":
            _build_image(build, work)
        else:
            _build(build, work)
    except BuildStepFailed as failure:
        _discard(work)
        job_fail(EnvironmentBuild, build_id, str(failure))
        return
    except Exception as exc:  # noqa: BLE001 - a bug or a tree nothing expected: failed, said why
        logger.exception("environment build %s stopped", build_id)
        _discard(work)
        job_fail(
            EnvironmentBuild, build_id, f"The build stopped at step '{_step_of(build_id)}': {exc!r}"
        )
        return
    job_finish(EnvironmentBuild, build_id, step="", duration_s=round(time.monotonic() - started, 2))


class BuildStepFailed(Exception):
    def __init__(self, step: str, message: str, tail: str = ""):
        self.step, self.tail = step, tail
        text = f"Step '{step}' failed: {message}"
        super().__init__(text + (f"\n--- last lines of its log ---\n{tail}" if tail else ""))


def _log(build: EnvironmentBuild, line: str, *, step: str | None = None) -> None:
    if step is not None:  # a step starts: say when, so slow steps show in the log
        started = getattr(build, "_started", None) or time.monotonic()
        build._started = started
        line = f"[{time.monotonic() - started:6.1f} s] {line}"
    build.log = (build.log + line.rstrip("\n") + "\n")[-LOG_LIMIT:]
    fields = {"log": build.log}
    if step is not None:
        build.step = step
        fields["step"] = step
    job_heartbeat(EnvironmentBuild, build.pk, **fields)


def _step_of(build_id: int) -> str:
    return EnvironmentBuild.objects.filter(pk=build_id).values_list("step", flat=True).first()


def _discard(path: Path) -> bool:
    """Remove a folder a build's sandbox wrote (``remove_tree``: however deep, whatever its
    permissions); what cannot be removed is logged and left, never raised: a folder one build
    left must not stop the next."""
    try:
        remove_tree(path)
    except OSError as exc:
        logger.warning("environment folder %s left in place: %s", path, exc)
        return False
    return True


def _sweep_partial_builds() -> None:
    """Folders of builds whose worker died (older than a build may take) are removed."""
    cutoff = time.time() - settings.ENVIRONMENT_BUILD_WALL_S * 2
    root = environments_root()
    for path in root.glob(".build-*"):
        with contextlib.suppress(FileNotFoundError):
            if path.lstat().st_mtime < cutoff:
                _discard(path)
    for link in root.glob(".link-*"):  # made by a build that died before it renamed it
        if link.lstat().st_mtime < cutoff:
            link.unlink(missing_ok=True)


def _current_versions(root: Path) -> set[str]:
    return {os.readlink(p) for p in root.iterdir() if p.is_symlink()}


def _sweep_retired() -> None:
    """Version folders no key links to any more are removed, each once no run holds it
    (its lock taken exclusively, without waiting: a held one is left for a later sweep)."""
    root = environments_root()
    current = _current_versions(root)  # read once; checked again under each lock below
    for path in root.glob(f"{VERSION}*"):
        if path.is_symlink() or not path.is_dir() or path.name in current:
            continue
        fd = _lock(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if fd is None:
            continue
        try:
            if path.name not in _current_versions(root):  # not published while we locked it
                inode = os.stat(path, follow_symlinks=False).st_ino
                if _discard(path):
                    (root / LOCKS / str(inode)).unlink(missing_ok=True)
        finally:
            os.close(fd)


def _publish(work: Path, key: str) -> Path:
    """Put the finished ``work`` in place as ``key``'s environment and return its folder.

    Renamed to a version folder, then the link swapped in one rename, so a run sees the old
    version or the new one, never none or a half; the old one is swept once no run holds it.
    Held (shared) from before the rename until the link names it, so no sweep takes it for
    a retired version meanwhile."""
    root = environments_root()
    version = root / f"{VERSION}{key}-{uuid.uuid4().hex[:12]}"
    fd = _lock(work, fcntl.LOCK_SH)
    try:
        work.rename(version)
        target = root / key
        if target.is_dir() and not target.is_symlink():  # built before versions: retire it
            target.rename(root / f"{VERSION}{key}-unversioned-{uuid.uuid4().hex[:12]}")
        link = root / f".link-{uuid.uuid4().hex}"
        os.symlink(version.name, link)
        os.replace(link, target)
    finally:
        if fd is not None:
            os.close(fd)
    _sweep_retired()
    return version


def _build(build: EnvironmentBuild, work: Path) -> None:
    spec = build.spec
    _refuse_conda(build)
    work.mkdir(mode=0o755)
    manifest: dict[str, Any] = {"key": build.key, "spec": spec, "commit": build.commit}
    tracked = _step_repository(build, work)
    requirements = _step_requirements(build, work)
    interpreter = None
    if spec["language"] == "python":
        interpreter = _step_interpreter(build, spec)
        manifest["interpreter"] = interpreter.version
        if interpreter.mount:
            manifest["interpreter_mount"] = {
                "source": str(interpreter.mount.source),
                "target": interpreter.mount.target,
            }
    # Only the folders the steps fill are the sandbox's; /env itself stays read-only.
    writable = [work / "testbed"]
    mounts = []
    for name, wanted in (("venv", interpreter is not None), ("go", spec["language"] == "go")):
        if wanted:
            (work / name).mkdir(mode=0o755)
            writable.append(work / name)
            mounts.append(Mount(work / name, f"{ENV_ROOT}/{name}", writable=True))
    for folder in writable:
        _own(folder, for_sandbox=True)
    sandbox = get_sandbox()
    if interpreter and interpreter.mount:
        mounts.append(interpreter.mount)
    if interpreter:
        _run_step(
            build,
            sandbox,
            "venv",
            f"{interpreter.executable} -m venv {ENV_ROOT}/venv",
            work,
            mounts,
        )
        manifest["venv"] = True
    if requirements is not None:
        if requirements.lines:
            mounts.append(Mount(work / "requirements", f"{ENV_ROOT}/requirements"))
            command = f"python -m pip install -r {ENV_ROOT}/requirements/{REQUIREMENTS_FILE}"
            _run_step(build, sandbox, "requirements", command, work, mounts)
        manifest["requirements"] = requirements.manifest
    if spec["packages"]:
        requirements = " ".join(shlex.quote(p) for p in spec["packages"])
        _run_step(build, sandbox, "packages", f"python -m pip install {requirements}", work, mounts)
    for step in ("pre_install", "install"):
        for command in spec[step]:
            _run_step(build, sandbox, step, command, work, mounts)
    _log(build, "finish: listing the files the install generated", step="finish")
    manifest["generated"] = _generated_files(work / "testbed", tracked)
    manifest["ready"] = True
    for folder in writable:
        _own(folder, for_sandbox=False)
    _write_manifest(work, manifest)
    version = _publish(work, build.key)
    _log(build, f"ready: {version.name} ({len(manifest['generated'])} generated files)")


def _write_manifest(work: Path, manifest: dict[str, Any]) -> None:
    """``manifest.json``, created new (``O_EXCL``, ``O_NOFOLLOW``): no sandbox could write
    ``work``, and if one ever could, a link or file it left there is refused, not followed."""
    fd = os.open(
        work / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
    )
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(manifest, indent=1, sort_keys=True))


def _refuse_conda(build: EnvironmentBuild) -> None:
    if files := build.spec.get("conda_files"):
        _log(build, "conda: " + conda_unavailable(files), step="conda")
        raise BuildStepFailed("conda", conda_unavailable(files))


def _step_requirements(build: EnvironmentBuild, work: Path) -> Requirements | None:
    """The requirement files resolved from the mirror (never the network), written to
    ``work/requirements/`` for the install step; None when the specification names none."""
    files = build.spec.get("requirement_files") or []
    if not files:
        return None
    commit = build.spec.get("requirements_commit") or build.commit
    _log(build, f"requirements: {', '.join(files)} at {commit[:12]}", step="requirements")
    try:
        requirements = resolve_requirements(Path(build.repository.path), commit, files)
    except DomainError as exc:
        raise BuildStepFailed("requirements", str(exc)) from exc
    requirements.write_into(work / "requirements", REQUIREMENTS_FILE)
    _log(build, requirements.summary + "\n" + requirements.text)
    return requirements


def _build_image(build: EnvironmentBuild, work: Path) -> None:
    """The docker backend: a generated Dockerfile built by the engine (network open). The
    SDK is loaded here, when a build needs it (0.1 s of every process's start-up)."""
    import docker

    _refuse_conda(build)
    work.mkdir(mode=0o755)
    _step_repository(build, work)
    requirements = _step_requirements(build, work)
    has_requirements = bool(requirements and requirements.lines)
    text = dockerfile(build.spec, base_image=base_image(build.spec), requirements=has_requirements)
    (work / "Dockerfile").write_text(text)
    _log(build, "image: docker build\n" + text, step="image")
    tag = f"hilbench-env:{build.key}"
    try:
        client = docker.from_env(timeout=settings.ENVIRONMENT_BUILD_WALL_S)
        with job_heartbeat_while(EnvironmentBuild, build.pk):
            _image, lines = client.images.build(path=str(work), tag=tag, rm=True)
        _log(build, "".join(str(line.get("stream", "")) for line in lines)[-STEP_TAIL:])
    except docker.errors.BuildError as exc:  # a RUN step failed: its output, for the log
        tail = "".join(str(line.get("stream", "")) for line in exc.build_log)[-STEP_TAIL:]
        _log(build, tail)
        raise BuildStepFailed("image", str(exc), tail) from exc
    except docker.errors.DockerException as exc:
        raise BuildStepFailed("image", str(exc)) from exc
    # The image carries its installed tree (generated files included): nothing to overlay.
    manifest = {"key": build.key, "spec": build.spec, "image": tag, "generated": [], "ready": True}
    _write_manifest(work, manifest)
    _publish(work, build.key)


def _step_repository(build: EnvironmentBuild, work: Path) -> set[str]:
    _log(build, f"repository: {build.repository} at {build.commit[:12]}", step="repository")
    try:
        mirror = Path(build.repository.path)
        commit = resolve_commit(mirror, build.commit)
        testbed = checkout(mirror, commit, work / "testbed")
    except (DomainError, AttributeError) as exc:
        raise BuildStepFailed("repository", str(exc)) from exc
    tracked = {path for path, _kind in files_under(testbed, kinds=("file", "link"))}
    # The host's git on the checked-out tree (no task code has run yet): run_git's
    # environment (no system, global or inherited GIT_* configuration), hooks off.
    config = ["-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main"]
    identity = ["-c", "user.name=hilbench", "-c", "user.email=hilbench@localhost"]
    try:
        run_git(None, [*config, "init", "-q", str(testbed)], cwd=testbed)
        run_git(testbed, [*config, "add", "-A"], cwd=testbed, timeout=600)
        commit_args = [*config, *identity, "commit", "-q", "--no-verify", "-m", commit]
        run_git(testbed, commit_args, cwd=testbed, timeout=600)
    except DomainError as exc:
        raise BuildStepFailed("repository", str(exc)[-STEP_TAIL:]) from exc
    return tracked


def _step_interpreter(build: EnvironmentBuild, spec: dict[str, Any]):
    wanted = spec["python"] or "3"
    _log(build, f"interpreter: Python {wanted}", step="interpreter")
    try:
        interpreter = interpreters.resolve(wanted if wanted != "3" else "3.11")
    except DomainError as exc:
        raise BuildStepFailed("interpreter", str(exc)) from exc
    EnvironmentBuild.objects.filter(pk=build.pk).update(interpreter=interpreter.version)
    _log(build, f"interpreter: {interpreter.executable} ({interpreter.version})")
    return interpreter


def _build_env(spec: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith(PASS_THROUGH)}
    env.update(PATH=f"{ENV_ROOT}/venv/bin:/usr/local/bin:/usr/bin:/bin", PIP_NO_INPUT="1")
    if spec["language"] == "go":
        env.update(GOPATH=f"{ENV_ROOT}/go", GOMODCACHE=f"{ENV_ROOT}/go/pkg/mod")
        env.update(GOCACHE=f"{ENV_ROOT}/go/cache")
    return {**env, **spec.get("env", {})}


def _run_step(build, sandbox, step: str, command: str, work: Path, mounts) -> None:
    _log(build, f"{step}: $ {command}", step=step)
    limits = limits_from_settings(
        wall_s=settings.ENVIRONMENT_BUILD_WALL_S, output_bytes=STEP_TAIL * 4
    )
    try:
        with job_heartbeat_while(EnvironmentBuild, build.pk):
            result = sandbox.run(
                command=command,
                limits=limits,
                tree=work / "testbed",
                persist_tree=True,
                mounts=mounts,
                env=_build_env(build.spec),
                network=True,
            )
    except SandboxError as exc:
        raise BuildStepFailed(step, str(exc)) from exc
    _log(build, result.output[-STEP_TAIL:])
    if result.stopped:
        raise BuildStepFailed(step, f"stopped by the {result.stopped}", result.output[-STEP_TAIL:])
    if result.exit_code != 0:
        raise BuildStepFailed(
            step, f"`{command}` exited with {result.exit_code}", result.output[-STEP_TAIL:]
        )


def _generated_files(testbed: Path, tracked: set[str]) -> list[str]:
    generated = []
    for relative, _kind in files_under(testbed):  # plain files only, walked without recursing
        parts = relative.split("/")
        if parts[0] == ".git" or "__pycache__" in parts or relative.endswith(".pyc"):
            continue
        if relative not in tracked:
            generated.append(relative)
    return sorted(generated)


def _own(folder: Path, *, for_sandbox: bool) -> None:
    """While building, the folder belongs to the sandbox user (it writes there); once built,
    back to the worker's user, read-only to everyone else."""
    user = sandbox_user()
    if user is None:
        return
    uid, gid = user if for_sandbox else (os.geteuid(), os.getegid())
    # Links themselves, not what they name; without recursing (a run may nest folders
    # thousands deep). Folders the sandbox user reads once built: 0755.
    own_tree(folder, uid, gid, folder_mode=None if for_sandbox else 0o755)
