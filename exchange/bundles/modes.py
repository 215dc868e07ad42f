"""The three mode folders of a task authored in the app: each one a self-contained Harbor task.

A mode folder carries everything to build and run it — no external image, no bind mount
outside it, no call back to the app, no internet unless a lead allows it:

- ``environment/``: the agent's ``Dockerfile`` and ``docker-compose.yaml``; the commands the
  instruction names (``mcp.py``, ``setup_tools.py``); the sidecars, each a build context
  with its data (SQL: ``sql-tools`` with the database and descriptions, ``business-info``
  with the documentation; ``ask_human`` mode: ``ask-human`` with the registry and the
  embedded judge). SWE: the repository (``repository.fast-export``) and the build of the
  task's environment specification.
- ``solution/solve.sh`` and the ground truth (Harbor's oracle).
- ``tests/``: the verifier (a separate container, ``tests/Dockerfile``) and ``test.sh``,
  which writes ``/logs/verifier/reward.txt``; the agent's submission (SQL) or changes (SWE)
  reach it as artifacts declared in ``task.toml``.

Identical files (the database in every mode, the repository in environment and tests) are
stored once in the archive (hard links, ``tarstream``); the app's own files, which every task
carries the same (:func:`common_shas`), once in the bundle.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
from collections.abc import Mapping
from typing import Any

from hilbench_annotate.envspec import dockerfile_env, dockerfile_run, python_version
from hilbench_annotate.instructions import MODES

from . import layout, sidecars

SQL_SERVERS = {name: layout.sidecar_url(name) for name in ("sql-tools", "business-info")}
ASK_HUMAN_URL = layout.sidecar_url("ask-human")
SUBMISSION = layout.SUBMISSION
# What the release's agent images have besides Python: terminus-2 drives the agent through
# tmux and installs it at run time when it is missing, which fails with no network.
AGENT_PACKAGES = "curl tmux"
AGENT_PATCH = "/tmp/hilbench/agent.patch"  # noqa: S108 - a path inside the task's container
SWE_COLLECT = (
    "mkdir -p /tmp/hilbench && cd /app && git add -A && "
    f"git diff --cached --binary HEAD > {AGENT_PATCH}"
)


def sql_tools_for(mode: str) -> list[list]:
    """The commands the SQL instruction names, for ``setup_tools.py``."""
    sql, business = SQL_SERVERS["sql-tools"], SQL_SERVERS["business-info"]
    tools = [
        ["execute_sql", sql, "execute_sql", ["query"]],
        ["get_database_info", sql, "get_database_info", ["database_name"]],
        ["get_table_info", sql, "get_table_info", ["database_name", "table_name"]],
        ["get_column_info", sql, "get_column_info", ["database_name", "table_name", "column_name"]],
        ["get_business_info", business, "get_business_info", ["database_name", "search_string"]],
        ["submit_sql", sql, "submit_sql", ["query"]],
    ]
    if mode == "ask_human":
        tools.append(["ask_human", ASK_HUMAN_URL, "ask_human", ["question"]])
    return tools


@functools.cache
def sql_agent_files(mode: str) -> Mapping[str, bytes]:
    """``mcp.py`` and ``setup_tools.py`` of a SQL mode folder: the same in every task."""
    return sidecars.agent_tool_files(sql_tools_for(mode))


@functools.cache
def swe_agent_files() -> Mapping[str, bytes]:
    """``mcp.py`` and ``setup_tools.py`` of a SWE ``ask_human`` folder (its one command)."""
    return sidecars.agent_tool_files([["ask_human", ASK_HUMAN_URL, "ask_human", ["question"]]])


def _agent_tools_dockerfile() -> str:
    return (
        "COPY mcp.py /usr/local/bin/mcp\n"
        "COPY setup_tools.py /tmp/setup_tools.py\n"
        "RUN chmod +x /usr/local/bin/mcp && python3 /tmp/setup_tools.py && rm /tmp/setup_tools.py\n"
    )


def _compose(*, image: str, services: dict[str, str], shared_volume: bool) -> str:
    """The agent's service and the mode's sidecars, all built from this folder.

    Each sidecar joins main's network namespace and listens on its own port of 127.0.0.1
    (``layout.SIDECAR_PORTS``), since that is what Harbor makes of a task without internet
    (its egress proxy's namespace, no service names). So no ``expose`` (Docker refuses it on
    a service in another's namespace) and no ``depends_on`` from main (it would be a cycle);
    Harbor's ``up --wait`` waits for the sidecars' healthchecks, and the agent's ``mcp``
    client waits for a sidecar that is not listening yet."""
    volume = f"      - harbor-shared:{layout.SHARED_DIR}"
    lines = [
        "# The sidecars share main's network namespace: the agent reaches each one at",
        "# 127.0.0.1:<its port>, with or without internet (see the bundle's README).",
        "services:",
        "  main:",
        f"    image: {image}",
        "    build:",
        "      context: .",
        # Docker's init as PID 1 passes a stop's SIGTERM on (see trial_model.INIT): without
        # it every stop waits Docker's 10 s grace.
        "    init: true",
    ]
    if shared_volume:
        lines += ["    volumes:", volume]
    repository, tag = image.split(":")
    for name, context in services.items():
        health = f"http://127.0.0.1:{layout.SIDECAR_PORTS[name]}/health"
        lines += [
            f"  {name}:",
            f"    image: {repository}-{name}:{tag}",
            "    build:",
            f"      context: {context}",
            '    network_mode: "service:main"',
            "    init: true",
            "    healthcheck:",
            '      test: ["CMD", "python", "-c", "import urllib.request; '
            f"urllib.request.urlopen('{health}', timeout=2)\"]",
            "      interval: 2s",
            "      timeout: 5s",
            "      retries: 30",
        ]
        if shared_volume and name in ("sql-tools", "ask-human"):
            lines += ["    volumes:", volume]
    if shared_volume:
        lines += ["volumes:", "  harbor-shared:"]
    return "\n".join(lines) + "\n"


def _verifier_toml(*, collect: str | None, artifacts: list[tuple[str, str | None]]) -> str:
    text = '[verifier]\ntimeout_sec = 1800.0\nenvironment_mode = "separate"\n\n[verifier.env]\n'
    if collect:
        text += f"\n[[verifier.collect]]\ncommand = {json.dumps(collect)}\n"
    for source, service in artifacts:
        text += f"\n[[artifacts]]\nsource = {json.dumps(source)}\n"
        if service:
            text += f"service = {json.dumps(service)}\n"
    return text


def sql_mode_files(
    *, mode: str, folder: str, image: str, data: dict[str, bytes | Any], registry: bytes,
    gold_sql: str, golden_output: str, judge_settings: dict,
) -> dict[str, bytes | Any]:  # fmt: skip
    """A SQL mode folder. ``data``: relative name -> content of the database folder
    (``database.sqlite``, ``database_description/*.csv``, ``business_info.json``)."""
    files: dict[str, bytes | Any] = {}
    env = "environment"
    services = {"sql-tools": "./sidecars/sql-tools", "business-info": "./sidecars/business-info"}
    for name, content in sidecars.sql_tools_files().items():
        files[f"{env}/sidecars/sql-tools/{name}"] = content
    for name, content in sidecars.business_info_files().items():
        files[f"{env}/sidecars/business-info/{name}"] = content
    for name, content in data.items():
        target = "business-info" if name == "business_info.json" else "sql-tools"
        files[f"{env}/sidecars/{target}/data/{name}"] = content
    if mode == "ask_human":
        services["ask-human"] = "./sidecars/ask-human"
        for name, content in sidecars.ask_human_files(registry, judge_settings).items():
            files[f"{env}/sidecars/ask-human/{name}"] = content
    files.update({f"{env}/{n}": c for n, c in sql_agent_files(mode).items()})
    files[f"{env}/Dockerfile"] = (
        f"# Written by HiL-Bench Annotate for {folder} ({mode}): the agent's container.\n"
        f"FROM {sidecars.PYTHON_IMAGE}\n"
        + "RUN apt-get update && apt-get install -y --no-install-recommends "
        + f"sqlite3 {AGENT_PACKAGES} && rm -rf /var/lib/apt/lists/*\n"
        + _agent_tools_dockerfile()
        + f"RUN mkdir -p {layout.SHARED_DIR} /workspace && chmod 1777 {layout.SHARED_DIR}\n"
        + "WORKDIR /workspace\n"
    ).encode()
    files[f"{env}/docker-compose.yaml"] = _compose(
        image=image, services=services, shared_volume=True
    ).encode()
    files["solution/ground_truth.sql"] = gold_sql.encode()
    files["solution/solve.sh"] = (
        f"#!/usr/bin/env bash\nset -euo pipefail\ncp /solution/ground_truth.sql {SUBMISSION}\n"
    ).encode()
    files.update({f"tests/{n}": c for n, c in sidecars.sql_verifier_files().items()})
    if "database.sqlite" in data:  # absent, the oracle fails and only a draft can be exported
        files["tests/database.sqlite"] = data["database.sqlite"]
    files["tests/golden_output.csv"] = golden_output.encode()
    files["tests/Dockerfile"] = f"FROM {sidecars.PYTHON_IMAGE}\nCOPY . /tests/\n".encode()
    files["tests/test.sh"] = (
        "#!/usr/bin/env bash\n# The agent's submission arrives as an artifact of sql-tools,\n"
        "# which Harbor puts back at its source path in this container.\n"
        f"python3 /tests/grade.py {SUBMISSION} /tests/database.sqlite "
        "/tests/golden_output.csv /logs/verifier/reward.txt\n"
    ).encode()
    return files


def swe_environment_dockerfile(
    spec: dict[str, Any], *, copy_tools: bool, requirements: bool = False
) -> str:
    """The agent's (and the verifier's) image: the task's toolchain, the repository's own
    requirement files resolved (``requirements``: ``requirements.txt`` beside the
    Dockerfile), its packages, the repository at /app (one commit, as shipped), its install
    commands."""
    if spec.get("language") == "python":
        base = f"python:{python_version(spec)}-slim"
    else:
        base = {"go": "golang:1.22-bookworm", "javascript": "node:20-bookworm"}.get(
            spec.get("language"), "debian:12"
        )
    lines = [
        f"FROM {base}",
        "RUN apt-get update && apt-get install -y --no-install-recommends git python3 "
        f"{AGENT_PACKAGES} && rm -rf /var/lib/apt/lists/*",
    ]
    lines += [dockerfile_env(k, v) for k, v in sorted((spec.get("env") or {}).items())]
    lines += [
        "COPY repository.fast-export /tmp/repository.fast-export",
        "RUN git init -q --initial-branch=main /app && cd /app "
        "&& git -c core.logAllRefUpdates=false fast-import --quiet < /tmp/repository.fast-export "
        "&& git -c core.logAllRefUpdates=false read-tree -u --reset HEAD "
        "&& git gc -q --prune=now && rm /tmp/repository.fast-export",
        "WORKDIR /app",
    ]
    if requirements:
        lines.append("COPY requirements.txt /tmp/requirements.txt")
        lines.append("RUN python -m pip install --no-cache-dir -r /tmp/requirements.txt")
    if spec.get("packages"):
        lines.append(dockerfile_run("python -m pip install --no-cache-dir " + " ".join(
            shlex.quote(p) for p in spec["packages"])))  # fmt: skip
    # The author's commands, run as written; each one instruction, whatever it holds.
    lines += [
        dockerfile_run(command)
        for command in [*spec.get("pre_install", []), *spec.get("install", [])]
    ]
    if copy_tools:  # the ask_human command, and where the sidecar's metrics go
        lines.append(_agent_tools_dockerfile().rstrip())
        lines.append(f"RUN mkdir -p {layout.SHARED_DIR} && chmod 1777 {layout.SHARED_DIR}")
    return "\n".join(lines) + "\n"


def swe_mode_files(
    *, mode: str, folder: str, image: str, repository: Any, spec: dict[str, Any], registry: bytes,
    gold_patch: str, test_patch: str, tests: dict[str, Any], judge_settings: dict,
    requirements: str | None = None,
) -> dict[str, bytes | Any]:  # fmt: skip
    """A SWE mode folder. ``repository``: the fast-export stream (a path); ``tests``: the
    FAIL_TO_PASS / PASS_TO_PASS lists, test command and log parser; ``requirements``: the
    repository's requirement files resolved (``validators/requirements.py``), if any."""
    env = "environment"
    asks = mode == "ask_human"
    files: dict[str, bytes | Any] = {
        f"{env}/Dockerfile": (
            f"# Written by HiL-Bench Annotate for {folder} ({mode}): the agent's container.\n"
            + swe_environment_dockerfile(spec, copy_tools=asks, requirements=bool(requirements))
        ).encode(),
    }
    if requirements:
        files[f"{env}/requirements.txt"] = requirements.encode()
        files["tests/requirements.txt"] = requirements.encode()
    if repository is not None:
        files[f"{env}/repository.fast-export"] = repository
        files["tests/repository.fast-export"] = repository
    services = {}
    if asks:
        services["ask-human"] = "./sidecars/ask-human"
        for name, content in sidecars.ask_human_files(registry, judge_settings).items():
            files[f"{env}/sidecars/ask-human/{name}"] = content
        files.update({f"{env}/{n}": c for n, c in swe_agent_files().items()})
    files[f"{env}/docker-compose.yaml"] = _compose(
        image=image, services=services, shared_volume=asks
    ).encode()
    files["solution/ground_truth.patch"] = gold_patch.encode("utf-8", "surrogateescape")
    files["solution/solve.sh"] = (
        b'#!/usr/bin/env bash\nset -euo pipefail\ncd "${REPO:-/app}"\n'
        b"git apply --whitespace=nowarn /solution/ground_truth.patch\n"
    )
    files.update({f"tests/{n}": c for n, c in sidecars.swe_verifier_files().items()})
    files["tests/test.patch"] = test_patch.encode("utf-8", "surrogateescape")
    files["tests/tests.json"] = layout.dumps({**tests, "test_patch_file": "/tests/test.patch"})
    for name in ("run_script", "parser_script"):
        if spec.get(name):
            target = "run_script.sh" if name == "run_script" else "parser.py"
            files[f"tests/{target}"] = spec[name].encode()
    files["tests/Dockerfile"] = (
        swe_environment_dockerfile(spec, copy_tools=False, requirements=bool(requirements))
        + "COPY . /tests/\n"
        + (
            "RUN cp /tests/run_script.sh /tests/parser.py /root/\n"
            if spec.get("run_script")
            else ""
        )
    ).encode()
    files["tests/test.sh"] = (
        "#!/usr/bin/env bash\n# The agent's changes arrive as a patch (an artifact of main),\n"
        "# which Harbor puts back at its source path in this container.\n"
        f"python3 /tests/grade.py /tests/tests.json /logs/verifier/reward.txt {AGENT_PATCH}\n"
    ).encode()
    return files


def verifier_toml(domain: str, mode: str) -> str:
    """The ``[verifier]`` section and the artifacts: what the verifier grades, and in
    ask_human mode the ask-human sidecar's metrics (the harness's Ask-F1 reads them)."""
    metrics = [(layout.ASK_HUMAN_METRICS, "ask-human")] if mode == "ask_human" else []
    if domain == "sql":
        return _verifier_toml(collect=None, artifacts=[(SUBMISSION, "sql-tools"), *metrics])
    return _verifier_toml(collect=SWE_COLLECT, artifacts=[(AGENT_PATCH, None), *metrics])


@functools.cache
def common_shas() -> frozenset[str]:
    """The sha256 of the app's own files a task folder carries, the same in every task: the
    sidecars' and verifiers' code and images, the agent's commands. A bundle stores each once
    (``_shared/``), whichever tasks carry it."""
    contents = [
        *sidecars.sql_tools_files().values(),
        *sidecars.business_info_files().values(),
        *sidecars.ask_human_common().values(),
        *sidecars.sql_verifier_files().values(),
        *sidecars.swe_verifier_files().values(),
        *swe_agent_files().values(),
    ]
    for mode in MODES:
        contents += sql_agent_files(mode).values()
    return frozenset(hashlib.sha256(content).hexdigest() for content in contents if content)
