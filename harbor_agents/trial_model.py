"""The compose model of a trial: written by the project from its own template, never read from
the task folder (standard library only: Harbor's process imports it, and so do the tests).

A task folder is task code. Whatever its ``environment/docker-compose.yaml`` says — a bind
mount of ``/``, ``privileged``, ``cap_add``, devices, another network mode, the Docker socket,
a build on the host network, a variable of Harbor's environment — none of it runs: the
project's Harbor environment (``environments.OfflineDocker``) hands Docker Compose the model
this module writes instead. The task folder only chooses among what the template knows:

- which of the release's sidecars run (``sql-tools``, ``business-info``, ``ask-human``): a task
  the app wrote carries each one's build context in ``environment/sidecars/<name>/``; a task
  kept from the release names them by its domain and mode, and the export put their build
  contexts in ``shared/sidecars/<name>/`` (``exchange/bundles/release_runtime.py``);
- the task's own data folders, bound read-only: ``shared/data`` at ``/data`` and
  ``shared/ask-human-data`` at ``/ask-human-data`` (release layout), after checking that each
  is a real folder of the task holding no link.

Every service gets ``no-new-privileges`` and a process cap; the sidecars a memory cap. The
agent's container has **no network** (``network_mode: none``) unless the app's run allowed
the internet (``internet=True``); the sidecars join its network namespace, so they are
reachable on loopback and nothing else is: a sidecar of the release layout listens on its
own loopback address (``127.0.0.2``…), which the agent's ``/etc/hosts`` gives the release's
service name (``http://sql-tools:8000/mcp`` resolves as the release's tools expect).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

MODES = ("baseline", "ask_human", "full_info")
SIDECARS = ("sql-tools", "business-info", "ask-human")
# Where a release-layout sidecar listens inside the agent's network namespace (all of them
# on the release's port 8000, each on an address of its own).
RELEASE_HOSTS = {"sql-tools": "127.0.0.2", "business-info": "127.0.0.3", "ask-human": "127.0.0.4"}
RELEASE_PORT = 8000
DATA_FOLDERS = (("/data", "shared/data"), ("/ask-human-data", "shared/ask-human-data"))
SHARED_VOLUME = "harbor-shared"
ASK_LOG_VOLUME = "ask-human-log"
SHARED_DIR = "/harbor_shared"
SIDECAR_MEMORY = "1g"
PIDS_LIMIT = 4096
SIDECAR_PIDS_LIMIT = 256
HARDENING = {"security_opt": ["no-new-privileges:true"]}
# PID 1 of every container is Docker's init (tini), which passes a stop's SIGTERM on. A
# container's own PID 1 (Harbor's `sh -c "sleep infinity"`, a sidecar's python) ignores it,
# so each stop waited Docker's whole 10 s grace before SIGKILL: three waits a trial (the
# agent's container, then its sidecars, then the verifier's), 30 s of its 55-70 s.
INIT = {"init": True}
HEALTH = (
    "import os, socket; socket.create_connection("
    "(os.environ.get('HOST', '127.0.0.1'), int(os.environ.get('PORT', '8000'))), 2).close()"
)
# Every image the app builds carries this label: an image under one of the app's tags without
# it is not the app's and is never built over (``environments.own_images`` moves the build to
# a tag of the app's own; ``shared/sidecars/build.sh`` leaves the release's images alone).
BUILT_BY = ("hilbench.built-by", "hilbench-annotate")
# A task kept from the release whose ask_human the lead gave to the release's LLM judge: the
# export's ``judge.json`` says so and the bundle carries no sidecar of the app's for it.
RELEASE_LLM = "release_llm"
SWE_IMAGE = re.compile(r"^\s*FROM\s+(hilbench-swe:[\w.-]+)\s*$", re.M | re.I)


class TrialModelError(RuntimeError):
    """The task folder cannot be run as the template allows; the message says why."""


@dataclass
class Facts:
    """What the template takes from a task folder, each within a closed vocabulary."""

    environment_dir: Path
    layout: str  # "app" (written by the app), "release" (kept from the release), "plain"
    domain: str = ""
    mode: str = ""
    sidecars: dict[str, Path] = field(default_factory=dict)  # name -> build context
    data: dict[str, Path] = field(default_factory=dict)  # container path -> task folder


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _real_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _inside(path: Path, root: Path) -> Path:
    """``path`` with no link on its way from ``root`` and nothing but regular files and
    folders below it; TrialModelError otherwise."""
    resolved = Path(os.path.realpath(path))
    if not resolved.is_relative_to(Path(os.path.realpath(root))):
        raise TrialModelError(f"{path} leaves the task folder {root}")
    relative = path.relative_to(root)
    step = Path(root)
    for part in relative.parts:
        step = step / part
        if stat.S_ISLNK(os.lstat(step).st_mode):
            raise TrialModelError(f"{step} is a link; a task folder's data holds none")
    if not _real_dir(path):
        raise TrialModelError(f"{path} is not a folder")
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise TrialModelError(
                    f"{os.path.join(folder, name)} is not a regular file or folder"
                )
    return resolved


def _domain(task: Path, mode_folder: Path) -> str:
    try:
        config = tomllib.loads((mode_folder / "task.toml").read_text(encoding="utf-8"))
        kind = str((config.get("metadata") or {}).get("task_type") or "")
    except (OSError, ValueError):
        kind = ""
    if kind in ("sql", "swe"):
        return kind
    prefix = task.name.split("_", 1)[0]
    return prefix if prefix in ("sql", "swe") else ""


def facts(environment_dir: Path) -> Facts:
    """The template's facts of the environment folder Harbor starts (``<mode>/environment``
    of a task, or a separate verifier's ``<mode>/tests``)."""
    environment_dir = Path(environment_dir)
    mode_folder = environment_dir.parent
    task = mode_folder.parent
    mode = mode_folder.name if mode_folder.name in MODES else ""
    if environment_dir.name != "environment" or not mode:
        # A separate verifier's container: no sidecar; a release task's data read-only
        # (the generated verifier runs the submitted query on /data/database.sqlite).
        data = {}
        release = mode and not os.path.lexists(mode_folder / "environment" / "sidecars")
        if release and os.path.lexists(task / "shared" / "data"):
            data["/data"] = _inside(task / "shared" / "data", task)
        return Facts(environment_dir, "plain", mode=mode, data=data)
    own = environment_dir / "sidecars"
    if _real_dir(own):
        sidecars = {
            name: _inside(own / name, task)
            for name in SIDECARS
            if _real_file(own / name / "Dockerfile")
        }
        return Facts(environment_dir, "app", mode=mode, sidecars=sidecars)
    domain = _domain(task, mode_folder)
    names = (["sql-tools", "business-info"] if domain == "sql" else []) + (
        ["ask-human"] if mode == "ask_human" else []
    )
    sidecars = {}
    for name in names:
        context = task / "shared" / "sidecars" / name
        if name == "ask-human" and not _real_file(context / "Dockerfile") and _release_llm(task):
            raise TrialModelError(
                f"{task.name}'s ask_human is judged by the release's LLM judge "
                "(shared/ask-human-data/judge.json): the release's own sidecar "
                "(hil-bench-harbor/ask-human:latest) calls a model over a network, which a "
                "trial here does not have; run this mode with Harbor's own docker environment "
                "and the variables judge.json names"
            )
        if not _real_file(context / "Dockerfile"):
            raise TrialModelError(
                f"{task.name}/shared/sidecars/{name} is missing: the {name} sidecar is built "
                "from the context the app's export adds (export the task again)"
            )
        sidecars[name] = _inside(context, task)
    data = {}
    for target, relative in DATA_FOLDERS:
        if os.path.lexists(task / relative):  # a link or a file there is refused by name
            data[target] = _inside(task / relative, task)
    return Facts(environment_dir, "release", domain, mode, sidecars, data)


def _release_llm(task: Path) -> bool:
    """Whether the export gave the task's ask_human to the release's LLM judge."""
    path = task / "shared" / "ask-human-data" / "judge.json"
    if not _real_file(path) or os.lstat(path).st_size > 1 << 20:
        return False
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(settings, dict) and settings.get("judge") == RELEASE_LLM


def _context_digest(context: Path) -> str:
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            digest.update(path.relative_to(context).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _sidecar(name: str, context: Path, facts: Facts) -> dict:
    release = facts.layout == "release"
    environment = {"HOST": RELEASE_HOSTS[name] if release else "127.0.0.1"}
    volumes = []
    if release:
        environment["PORT"] = str(RELEASE_PORT)
        if name in ("sql-tools", "business-info") and "/data" in facts.data:
            environment["DATA_DIR"] = "/data"
            volumes.append(f"{facts.data['/data']}:/data:ro")
        if name == "sql-tools":
            environment["SUBMISSION_FILE"] = f"{SHARED_DIR}/submitted_query.sql"
        if name == "ask-human" and "/ask-human-data" in facts.data:
            environment["BLOCKER_REGISTRY_PATH"] = "/ask-human-data/blocker_registry.json"
            environment["OUTPUT_DIR"] = SHARED_DIR
            volumes.append(f"{facts.data['/ask-human-data']}:/ask-human-data:ro")
    if name == "sql-tools":
        volumes.append(f"{SHARED_VOLUME}:{SHARED_DIR}")
    if name == "ask-human":  # its log in a volume of its own: the agent cannot write it
        volumes.append(f"{ASK_LOG_VOLUME}:{SHARED_DIR}")
    service = {
        "image": f"hilbench-sidecar/{name}:{_context_digest(context)}",
        "build": {"context": str(context), "labels": dict([BUILT_BY])},
        "network_mode": "service:main",
        "environment": environment,
        "mem_limit": SIDECAR_MEMORY,
        "pids_limit": SIDECAR_PIDS_LIMIT,
        "healthcheck": {
            "test": ["CMD", "python", "-c", HEALTH],
            "interval": "2s",
            "timeout": "5s",
            "retries": 30,
        },
        **HARDENING,
        **INIT,
    }
    if volumes:
        service["volumes"] = volumes
    return service


def compose_model(facts: Facts, *, internet: bool) -> dict:
    """The Docker Compose model of the trial: the agent's service ``main`` (Harbor's own
    compose files give its build and command) and the task's sidecars."""
    main: dict = {"pids_limit": PIDS_LIMIT, **HARDENING, **INIT}
    if not internet or facts.layout == "plain":
        main["network_mode"] = "none"
    model: dict = {"services": {"main": main}}
    if facts.layout == "plain":
        if "/data" in facts.data:
            main["volumes"] = [f"{facts.data['/data']}:/data:ro"]
        return model
    main["volumes"] = [f"{SHARED_VOLUME}:{SHARED_DIR}"]
    if facts.layout == "release":
        if "/data" in facts.data:
            main["volumes"].append(f"{facts.data['/data']}:/data:ro")
        if facts.sidecars:
            main["extra_hosts"] = [f"{name}:{RELEASE_HOSTS[name]}" for name in facts.sidecars]
    for name, context in facts.sidecars.items():
        model["services"][name] = _sidecar(name, context, facts)
    model["volumes"] = {SHARED_VOLUME: {}}
    if "ask-human" in facts.sidecars:
        model["volumes"][ASK_LOG_VOLUME] = {}
    return model


def write_compose_model(environment_dir: Path, target: Path, *, internet: bool) -> Facts:
    """Write the trial's compose model (JSON, which Compose reads as YAML) to ``target``."""
    found = facts(environment_dir)
    if (Path(environment_dir) / ".env").exists():
        raise TrialModelError(
            f"{environment_dir}/.env would set Docker Compose's variables; a task folder "
            "decides none of them"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(compose_model(found, internet=internet), indent=2) + "\n")
    return found


def swe_release_image(environment_dir: Path) -> str | None:
    """The prebuilt image a release SWE task's agent Dockerfile starts from, if any."""
    dockerfile = Path(environment_dir) / "Dockerfile"
    if not _real_file(dockerfile):
        return None
    found = SWE_IMAGE.search(dockerfile.read_text(encoding="utf-8", errors="replace"))
    return found.group(1) if found else None
