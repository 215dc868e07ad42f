"""Harbor's Docker environment where no image registry is reachable.

A task that asks for no internet (``allow_internet = false``) is run by Harbor's Docker
environment through an egress-control sidecar whose images Harbor names by digest
(``alpine@sha256:…`` for a kernel probe, ``gogost/gost@sha256:…``): on a machine that reaches
no registry they cannot exist, and Harbor refuses the task. ``OfflineDocker`` keeps the
promise another way, and a stricter one: the agent's container gets **no network at all** —
``network_mode: none`` (Harbor's own ``docker-compose-no-network.yaml``) — while the task's
sidecars, which join main's network namespace (``network_mode: service:main``), stay reachable
on ``127.0.0.1``. No route off the machine, none to the host either; the trials of the test
suite probe it from inside the agent's container. Tasks that allow internet run as in
Harbor's Docker environment.

A task imported from the HiL-Bench release names sidecar images the release builds elsewhere
(``hil-bench-harbor/<name>:latest``) and keeps its database or image outside the bundle:
before anything starts, the images missing here (or built from other sources: each carries
the digest of its context as a label) are built from the build contexts the export added
(``shared/sidecars/``), and a trial whose data is not there stops with the bundle's
own sentence saying what to fetch and where it goes (``shared/FETCH.md``).

    harbor run -e harbor_agents.environments:OfflineDocker -p <mode folder> -a oracle
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH
from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.config import NetworkMode


class OfflineDocker(DockerEnvironment):
    @classmethod
    def _egress_control_kernel_support(cls) -> bool:
        return False  # its probe image is pinned by digest: never pulled here

    @property
    def capabilities(self):
        return super().capabilities.model_copy(update={"disable_internet": True})

    def _offline(self) -> bool:
        return self.network_policy.network_mode == NetworkMode.NO_NETWORK

    @property
    def _docker_compose_paths(self):
        paths = super()._docker_compose_paths
        return [*paths, COMPOSE_NO_NETWORK_PATH] if self._offline() else paths

    async def start(self, force_build: bool):
        await prepare_release_task(self.environment_dir)
        await super().start(force_build)


class MissingData(RuntimeError):
    """The task's data is kept outside the bundle and is not where the bundle says."""


async def _docker(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "docker", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    return process.returncode, out.decode(errors="replace")


LABEL = "org.hilbench.context"


def _context_digest(context: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(path.relative_to(context).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


async def _image_label(image: str) -> str:
    code, out = await _docker(
        "image", "inspect", "-f", f'{{{{index .Config.Labels "{LABEL}"}}}}', image
    )
    return out.strip() if code == 0 else ""


async def _image_present(image: str) -> bool:
    code, _ = await _docker("image", "inspect", image)
    return code == 0


def _fetch_sentence(task: Path) -> str:
    text = (task / "shared" / "FETCH.md").read_text()
    return " ".join(text.split("\n\n", 2)[1].split()).replace("`", "")


async def prepare_release_task(environment_dir: Path) -> None:
    """For a release task's mode folder: build the sidecar images it names from the bundle's
    contexts when missing; stop, saying what to fetch, when its data is not there."""
    compose = Path(environment_dir) / "docker-compose.yaml"
    task = Path(environment_dir).resolve().parent.parent
    if not compose.is_file():
        return
    text = compose.read_text()
    for name in re.findall(r"image:\s*hil-bench-harbor/([a-z][a-z0-9-]*):latest", text):
        image, context = f"hil-bench-harbor/{name}:latest", task / "shared" / "sidecars" / name
        if not context.is_dir():
            continue
        digest = _context_digest(context)
        if await _image_label(image) != digest:  # missing, or built from other sources
            code, out = await _docker(
                "build", "-q", "--label", f"{LABEL}={digest}", "-t", image, str(context)
            )
            if code:
                raise RuntimeError(f"building {image} from {context} failed: {out[-2000:]}")
    if not (task / "shared" / "FETCH.md").is_file():
        return
    if "../../shared/data" in text and not (task / "shared/data/database.sqlite").is_file():
        raise MissingData(f"no shared/data/database.sqlite in {task.name}: {_fetch_sentence(task)}")
    for image in re.findall(r"image:\s*(hilbench-swe:[\w.-]+)", text):
        if not await _image_present(image):
            raise MissingData(f"no image {image} on this machine: {_fetch_sentence(task)}")
