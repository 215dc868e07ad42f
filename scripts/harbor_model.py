"""What Harbor 0.25 would make of each mode folder, from Harbor's own code: the network its
containers get, and where its separate verifier finds the agent's work. Run with Harbor's
Python (``make harbor-check`` does, through harbor_check.py):

    .venv-harbor/bin/python scripts/harbor_model.py FOLDER...

**Network.** Harbor's task loader, the trial's network plan (``harbor.trial.network_policy``:
``allow_internet = false`` becomes the ``no-network`` policy), and the compose files its
``DockerEnvironment`` passes to ``docker compose`` (its build file, the task's file, its
overrides; with no internet, its egress-control sidecar and the override that moves every
service without networking of its own into that sidecar's namespace), merged by ``docker
compose config`` (no Docker engine needed). Harbor enables egress control only when a probe
container finds nftables fib support in the engine's kernel; with no engine the probe is
taken as passing (where it fails, Harbor refuses a no-network task outright). The same folder
is also checked under the public policy (a lead allowed the internet: same compose file).

In that model every address the agent calls (``environment/setup_tools.py`` and task.toml's
``mcp_servers``) must reach exactly one sidecar: on 127.0.0.1 a service in main's network
namespace listening on that port (its compose ``PORT``, else its Dockerfile's ``ENV PORT`` or
``EXPOSE``); by name, a service with a namespace of its own, and only under the public policy
(under no-network, traffic to another namespace goes through the egress proxy, which denies
it). Two servers of one namespace may not share a port, and a service in another's namespace
may not ``expose`` or publish ports (Docker refuses to create it).

**Verifier.** Harbor's ``ArtifactHandler`` puts each artifact of task.toml back in the
verifier's container at a path of its own choosing (the source path, for all but the agent's
``/logs/artifacts``, which holds whatever the agent left there); every path ``tests/test.sh``
names outside ``/tests`` and ``/logs/verifier`` must be where a declared artifact is put.

One line per folder and policy; exit status 1 when anything does not hold.
"""

import asyncio
import json
import logging
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.artifacts import is_convention_entry, with_convention_entry
from harbor.models.task.config import NetworkMode, NetworkPolicy
from harbor.models.task.task import Task
from harbor.models.trial.config import AgentConfig, EnvironmentConfig, VerifierConfig
from harbor.models.trial.paths import EnvironmentPaths, TrialPaths
from harbor.trial.artifact_handler import ArtifactHandler
from harbor.trial.network_policy import resolve_trial_network_plan

LOOPBACK = ("127.0.0.1", "localhost")


class _Engine(DockerEnvironment):
    """Harbor's Docker environment on a machine without an engine: the kernel probe (a
    container run) is taken as passing, as on a Linux engine with nftables fib support."""

    @classmethod
    def _egress_control_kernel_support(cls) -> bool:
        return True


async def merged_compose(task: Task, policy: NetworkPolicy, work: Path) -> dict:
    """``docker compose config`` of the files Harbor's ``start()`` would use."""
    env = _Engine(
        environment_dir=task.paths.environment_dir,
        environment_name=task.paths.task_dir.name,
        session_id=f"{task.paths.task_dir.name}__check",
        trial_paths=TrialPaths(work / "trial"),
        task_env_config=task.config.environment,
        network_policy=policy,
        logger=logging.getLogger("harbor-network"),
    )
    # The steps of DockerEnvironment.start() up to `docker compose build`.
    env._mounts_compose_path = env._write_mounts_compose_file()
    env._env_compose_path = env._write_env_compose_file()
    env._write_egress_control_services_compose_file()
    if env._enable_egress_control:  # the image name its build step would record
        env._env_vars.egress_control_sidecar_image_name = env._EGRESS_CONTROL_SIDECAR_DOCKER_NAME
    env._resources_compose_path = await env._write_resources_compose_file()
    out = work / "compose.json"
    result = await env._run_docker_compose_command(
        ["config", "--format", "json", "--output", str(out)], check=False
    )
    if result.return_code:
        raise SystemExit(f"docker compose config failed: {result.stdout}")
    return json.loads(out.read_text())


def _namespace(services: dict, name: str) -> str:
    """The service whose network namespace ``name`` runs in."""
    seen = set()
    while name not in seen:
        seen.add(name)
        mode = str(services[name].get("network_mode") or "")
        if not mode.startswith(("service:", "container:")):
            return name
        name = mode.split(":", 1)[1]
    raise SystemExit(f"network_mode cycle through {sorted(seen)}")


def _port(service: dict) -> int | None:
    """The port the service's server listens on: its compose PORT, else its Dockerfile's
    ``ENV PORT``, else the port the Dockerfile exposes (the servers' default, 8000)."""
    environment = service.get("environment") or {}
    if environment.get("PORT"):
        return int(environment["PORT"])
    build = service.get("build") or {}
    dockerfile = Path(build.get("context", "/nonexistent")) / build.get("dockerfile", "Dockerfile")
    if not dockerfile.is_file():
        return None
    lines = dockerfile.read_text().splitlines()
    for prefix in ("ENV PORT=", "EXPOSE "):
        for line in lines:
            if line.startswith(prefix):
                return int(line.removeprefix(prefix).split()[0])
    return None


def _agent_urls(task: Task) -> set[str]:
    urls = {server.url for server in task.config.environment.mcp_servers if server.url}
    setup = task.paths.environment_dir / "setup_tools.py"
    if setup.is_file():
        line = next(x for x in setup.read_text().splitlines() if x.startswith("TOOLS = "))
        urls |= {url for _command, url, _tool, _keys in json.loads(line[len("TOOLS = ") :])}
    return urls


def problems(compose: dict, urls: set[str], policy: NetworkPolicy) -> list[str]:
    services = compose["services"]
    namespace = {name: _namespace(services, name) for name in services}
    ports = {name: _port(spec) for name, spec in services.items()}
    found = []
    for name, spec in services.items():
        if namespace[name] != name and (spec.get("expose") or spec.get("ports")):
            found.append(f"{name}: exposes ports in {namespace[name]}'s namespace")
        test = json.dumps((spec.get("healthcheck") or {}).get("test", ""))
        if ports[name] and test != '""' and str(ports[name]) not in test:
            found.append(f"{name}: its healthcheck does not call port {ports[name]}")
    by_namespace: dict[tuple[str, int], list[str]] = {}
    for name, port in ports.items():
        if port:
            by_namespace.setdefault((namespace[name], port), []).append(name)
    found += [
        f"{', '.join(names)} all listen on {port} in {owner}'s namespace"
        for (owner, port), names in by_namespace.items()
        if len(names) > 1
    ]
    main = namespace["main"]
    for url in sorted(urls):
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or 80
        if host in LOOPBACK:
            if not by_namespace.get((main, port)):
                found.append(f"{url}: nothing listens on {port} in main's namespace")
        elif host not in services or namespace[host] != host:
            found.append(f"{url}: {host} is not a service with a network name")
        elif policy.network_mode != NetworkMode.PUBLIC:
            found.append(f"{url}: {host} is another namespace, behind the egress proxy")
        elif ports[host] != port:
            found.append(f"{url}: {host} listens on {ports[host]}")
    return found


def verifier_problems(task: Task) -> list[str]:
    """Paths test.sh reads outside /tests and /logs/verifier that Harbor does not put there."""
    convention = str(EnvironmentPaths.for_os(task.config.environment.os).artifacts_dir)
    handler = ArtifactHandler(artifacts=task.config.artifacts, logger=logging.getLogger("h"))
    # The convention entry (the agent's own /logs/artifacts) holds whatever the agent put
    # there: a file the verifier needs must come from a declared artifact.
    declared = [
        artifact
        for artifact in with_convention_entry(task.config.artifacts, convention_source=convention)
        if not is_convention_entry(artifact, convention)
    ]
    placed = {
        handler._upload_target_source(
            artifact, source_convention=convention, target_convention=convention
        )
        for artifact in declared
    }
    script = task.paths.tests_dir / "test.sh"
    if not script.is_file():
        return []
    words = {w for line in script.read_text().splitlines() if not line.startswith("#")
             for w in line.split() if w.startswith("/")}  # fmt: skip
    own = ("/tests/", "/logs/verifier/", "/usr/", "/bin/")
    return [
        f"tests/test.sh reads {word}, where Harbor puts no artifact (it puts {sorted(placed)})"
        for word in sorted(words)
        if not word.startswith(own)
        and not any(word == p or word.startswith(p.rstrip("/") + "/") for p in placed)
    ]


def main() -> int:
    failed = False
    for folder in sys.argv[1:]:
        task = Task(Path(folder))
        plan = resolve_trial_network_plan(
            task.config,
            AgentConfig(),
            EnvironmentConfig(),
            VerifierConfig(),
            None,
            verifier_mode=task.config.verifier.environment_mode,
        )
        policies = [plan.agent_env_baseline]
        if plan.agent_env_baseline.network_mode != NetworkMode.PUBLIC:
            policies.append(NetworkPolicy(network_mode=NetworkMode.PUBLIC))
        urls = _agent_urls(task)
        verifier = verifier_problems(task)
        for policy in policies:
            with tempfile.TemporaryDirectory(prefix="harbor-network-") as work:
                compose = asyncio.run(merged_compose(task, policy, Path(work)))
            found = verifier + problems(compose, urls, policy)
            failed |= bool(found)
            verdict = "; ".join(found) or f"{len(urls)} address(es) reach their sidecars"
            print(f"{folder} [{policy.network_mode.value}]: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
