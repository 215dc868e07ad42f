"""The project's Harbor environment: Docker, on machines that reach no image registry, run as
the app decides — never as the task folder says.

``OfflineDocker`` is Harbor's Docker environment with four changes:

- **The compose model is the project's** (``trial_model``): the task's own
  ``environment/docker-compose.yaml`` is never handed to Docker Compose. The model written from
  the project's template (the sidecars the task's layout names, the task's own data folders
  read-only, nothing else) is, beside Harbor's own files, in the trial's folder
  (``hilbench-compose.json``), so what ran is on record.
- **The network is the app's decision**, not ``task.toml``'s: the agent's container has no
  network at all (``network_mode: none``) unless the process that started Harbor set
  ``HILBENCH_TRIAL_INTERNET=1`` (a lead's choice on the run's form). The sidecars join its
  network namespace and are reached on loopback. No route off the machine, none to the host.
- **The task's settings are bounded**: no prebuilt image of its choosing (the agent's image is
  built from ``environment/``), no environment variables resolved from Harbor's, no GPU, Linux
  only, CPUs and memory at most ``HILBENCH_TRIAL_MAX_CPUS`` / ``HILBENCH_TRIAL_MAX_MEMORY_MB``;
  builds use Docker's classic builder, which knows no ``RUN --network`` or ``--security``.
- **What a trial leaves is neutralised before Harbor reads it**: once the agent (or the
  verifier) is done, every link, pipe, socket or device it left in the trial's log folders is
  replaced by a regular file saying what it was (and listed in ``hilbench-neutralised.json``),
  so neither Harbor nor the app follows one onto this machine's files.

A task imported from the HiL-Bench release keeps its database or image outside the bundle:
a trial whose data is not there stops with the bundle's own sentence saying what to fetch and
where it goes (``shared/FETCH.md``).

    harbor run -e harbor_agents.environments:OfflineDocker -p <mode folder> -a oracle

A bundle carries this file (and the two it imports) as ``hilbench_harbor/``, so that Harbor
runs it with nothing of the app; from the bundle's folder::

    PYTHONPATH=. harbor run -e hilbench_harbor.environments:OfflineDocker -p <mode folder> -a oracle
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.config import NetworkMode, TaskOS

from .fetch import task_fetch_sentence
from .trial_model import BUILT_BY, TrialModelError, swe_release_image, write_compose_model

COMPOSE_RECORD = "hilbench-compose.json"
NEUTRALISED = "hilbench-neutralised.json"


def _setting(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def internet_allowed() -> bool:
    """The app's decision for this Harbor process (never the task's ``task.toml``)."""
    return os.environ.get("HILBENCH_TRIAL_INTERNET") == "1"


def _bounded(config):
    """The task's environment settings within what the project allows."""
    if config.os != TaskOS.LINUX:
        raise TrialModelError(f"a trial runs Linux containers only, not {config.os.value}")
    cpus = _setting("HILBENCH_TRIAL_MAX_CPUS", 4)
    memory = int(_setting("HILBENCH_TRIAL_MAX_MEMORY_MB", 8192))
    return config.model_copy(
        update={
            "docker_image": None,
            "env": {},
            "gpus": 0,
            "gpu_types": None,
            "skills_dir": None,
            "cpus": min(config.cpus or cpus, cpus),
            "memory_mb": min(config.memory_mb or memory, memory),
        }
    )


class _BuildLocks(dict):
    """Harbor's image-build locks, one per task folder (and kind of container) instead of one
    per mode. Harbor serialises the builds of one ``environment_name`` (the mode folder's
    name); a task's three modes start together and each built its image at once, so none
    reused the others' layers: a SWE-bench task on a machine with no cache built the same
    dependencies three times over (120-140 s each, on two cores). One after another, the
    second and third modes' builds find every layer they share with the first."""

    _shared: dict[str, asyncio.Lock] = {}

    def __init__(self, key: str):
        super().__init__()
        self._key = key

    def setdefault(self, _name, default=None):
        return self._shared.setdefault(self._key, default)


class OfflineDocker(DockerEnvironment):
    def __init__(self, environment_dir: Path, *args, **kwargs):
        trial_paths = kwargs.get("trial_paths")
        folder = Path(trial_paths.trial_dir) if trial_paths is not None else None
        if "task_env_config" in kwargs:
            kwargs["task_env_config"] = _bounded(kwargs["task_env_config"])
        name = COMPOSE_RECORD
        if Path(environment_dir).name != "environment":  # a separate verifier's container
            name = f"hilbench-compose-{Path(environment_dir).name}.json"
        self._model_path = (folder or Path(environment_dir)) / name
        # Internet only when the app allowed it and the task asked for it: the narrower wins.
        policy = kwargs.get("network_policy")
        asked = policy is None or policy.network_mode == NetworkMode.PUBLIC
        self._facts = write_compose_model(
            Path(environment_dir), self._model_path, internet=internet_allowed() and asked
        )
        super().__init__(environment_dir, *args, **kwargs)
        task = Path(environment_dir).resolve().parent.parent
        self._image_build_locks = _BuildLocks(f"{task}:{Path(environment_dir).name}")

    @classmethod
    def _egress_control_kernel_support(cls) -> bool:
        return False  # its probe image is pinned by digest: never pulled here

    @property
    def capabilities(self):
        return super().capabilities.model_copy(update={"disable_internet": True})

    @property
    def _environment_docker_compose_path(self) -> Path:
        return self._model_path

    def _compose_env_vars(self, include_os_env: bool = True) -> dict[str, str]:
        env = super()._compose_env_vars(include_os_env=include_os_env)
        env["DOCKER_BUILDKIT"] = "0"  # the classic builder: no RUN --network / --security
        return env

    def validate_network_policy_support(self, network_policy=None) -> None:
        policy = network_policy or self.network_policy
        if policy.network_mode not in (NetworkMode.PUBLIC, NetworkMode.NO_NETWORK):
            return  # an allowlist is narrower than the internet: the trial gets no network
        super().validate_network_policy_support(network_policy)

    async def start(self, force_build: bool):
        await prepare_release_task(self.environment_dir, self._facts)
        for image in await own_images(self._model_path):
            self.logger.warning(f"{image} is not the app's (no {BUILT_BY[0]} label): left alone")
        await super().start(force_build)

    async def prepare_logs_for_host(self) -> None:
        await super().prepare_logs_for_host()
        self._neutralise([m["source"] for m in self._host_mounts if not m.get("read_only")])

    # What a trial's containers hold reaches this machine through these (``docker cp`` keeps
    # a link a link): each target is made safe before anything reads it.
    # (In ``finally``: a copy that failed part way may have left links already.)
    async def download_file(self, source_path, target_path):
        try:
            await super().download_file(source_path, target_path)
        finally:
            self._neutralise([str(target_path)])

    async def download_dir(self, source_dir, target_dir):
        try:
            await super().download_dir(source_dir, target_dir)
        finally:
            self._neutralise([str(target_dir)])

    async def service_download_file(self, source_path, target_path, *, service=None):
        try:
            await super().service_download_file(source_path, target_path, service=service)
        finally:
            self._neutralise([str(target_path)])

    async def service_download_dir(self, source_dir, target_dir, *, service=None):
        try:
            await super().service_download_dir(source_dir, target_dir, service=service)
        finally:
            self._neutralise([str(target_dir)])

    def _neutralise(self, roots: list[str]) -> None:
        replaced = neutralise(roots, self._model_path.parent / NEUTRALISED)
        if replaced:
            self.logger.warning(
                f"{len(replaced)} link(s), pipe(s) or device(s) a trial left were replaced "
                f"unread: {NEUTRALISED}"
            )


def neutralise(roots: list[str], record: Path) -> list[dict]:
    """Replace every entry under ``roots`` (files or folders a trial's containers wrote) that
    is not a regular file or a folder — a link, a pipe, a socket, a device — by a regular file
    saying what it was; the entries replaced, also appended to ``record``. Walked without
    following links."""
    replaced = []
    stack = []
    for root in roots:
        try:
            mode = os.lstat(root).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            stack.append(root)
        elif not stat.S_ISREG(mode):
            replaced.append(_replace(root, mode))
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                mode = os.lstat(entry.path).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                stack.append(entry.path)
            elif not stat.S_ISREG(mode):
                replaced.append(_replace(entry.path, mode))
    if replaced:
        previous = []
        if record.is_file() and not record.is_symlink():
            previous = json.loads(record.read_text() or "[]")
        record.write_text(json.dumps(previous + replaced, indent=1) + "\n")
    return replaced


def _replace(path: str, mode: int) -> dict:
    kind = "a link" if stat.S_ISLNK(mode) else "a pipe, socket or device"
    target = ""
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
    note = f"hilbench: {os.path.basename(path)} was {kind}" + (f" to {target}" if target else "")
    try:
        os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as out:
            out.write(note + "; removed before anything read it\n")
    except OSError:
        pass
    return {"path": path, "was": kind, "target": target[:500]}


class MissingData(RuntimeError):
    """The task's data is kept outside the bundle and is not where the bundle says."""


async def _docker(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "docker", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    return process.returncode, out.decode(errors="replace")


async def _image_present(image: str) -> bool:
    code, _ = await _docker("image", "inspect", image)
    return code == 0


async def _built_by(image: str) -> str | None:
    """The app's label of a local image ("" when it has none), or None when there is none."""
    code, out = await _docker("image", "inspect", "--format", "{{ json .Config.Labels }}", image)
    if code != 0:
        return None
    try:
        labels = json.loads(out.strip() or "null") or {}
    except ValueError:
        return ""
    return str(labels.get(BUILT_BY[0], "")) if isinstance(labels, dict) else ""


async def own_images(model_path: Path) -> list[str]:
    """Each image the compose model builds whose tag an image the app did not build holds
    (one without the app's label) is built under a tag of the app's own instead (``-1``,
    ``-2``… after it), so nothing is built over; the model is rewritten. Returns the images
    left alone."""
    model = json.loads(model_path.read_text())
    left: list[str] = []
    for service in model["services"].values():
        if "build" not in service or "image" not in service:
            continue
        image = candidate = service["image"]
        for number in range(1, 100):
            label = await _built_by(candidate)
            if label is None or label == BUILT_BY[1]:
                break
            left.append(candidate)
            candidate = f"{image}-{number}"
        service["image"] = candidate
    if left:
        model_path.write_text(json.dumps(model, indent=2) + "\n")
    return left


async def prepare_release_task(environment_dir: Path, facts=None) -> None:
    """For a release task's mode folder: stop, saying what to fetch, when its data is not
    there (its database, or the prebuilt image its agent's Dockerfile starts from)."""
    environment_dir = Path(environment_dir)
    task = environment_dir.resolve().parent.parent
    sentence = task_fetch_sentence(task)
    if sentence is None:
        return
    if facts is not None and facts.layout != "release":
        return
    sql = facts.domain == "sql" if facts is not None else (task / "shared" / "data").is_dir()
    if sql and not (task / "shared/data/database.sqlite").is_file():
        raise MissingData(f"no shared/data/database.sqlite in {task.name}: {sentence}")
    image = swe_release_image(environment_dir)
    if image and not await _image_present(image):
        raise MissingData(f"no image {image} on this machine: {sentence}")
