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

    harbor run -e harbor_agents.environments:OfflineDocker -p <mode folder> -a oracle
"""

from __future__ import annotations

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
