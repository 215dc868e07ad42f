"""The docker backend's environment image: the steps of a local build as image layers
(``validators/environments.py`` builds it)."""

from __future__ import annotations

import shlex
from typing import Any

from hilbench_annotate.envspec import dockerfile_env, dockerfile_run, python_version

from .sandbox import TESTBED
from .sandbox.docker import IMAGE_TREE

REQUIREMENTS_FILE = "requirements.txt"  # the resolved requirement lines, under requirements/
TESTBED_IN_IMAGE = IMAGE_TREE


def dockerfile(spec: dict[str, Any], *, base_image: str, requirements: bool = False) -> str:
    """The docker backend's environment: the same steps as a local build, as image layers;
    the tests then run in it as user 1000 with no network (``sandbox/docker.py``).
    ``requirements``: the build folder holds the resolved ``requirements.txt``."""
    env = "".join(dockerfile_env(k, v) + "\n" for k, v in spec.get("env", {}).items())
    steps = []
    if requirements:
        steps.append(f"python -m pip install -r /tmp/{REQUIREMENTS_FILE}")
    if spec["packages"]:
        steps.append("python -m pip install " + " ".join(shlex.quote(p) for p in spec["packages"]))
    steps += [*spec["pre_install"], *spec["install"]]
    runs = "".join(dockerfile_run(command) + "\n" for command in steps)
    # Installed at /testbed (editable installs point there); kept whole at /testbed-image,
    # which each run copies into its /testbed tmpfs before the task's tree.
    return (
        f"FROM {base_image}\n"
        "RUN useradd --uid 1000 --create-home sandbox || true\n"
        + (f"COPY requirements/{REQUIREMENTS_FILE} /tmp/\n" if requirements else "")
        + f"COPY testbed {TESTBED}\n"
        f"WORKDIR {TESTBED}\n"
        f"{env}{runs}"
        f"RUN cp -a {TESTBED} {TESTBED_IN_IMAGE} && chown -R 1000:1000 {TESTBED_IN_IMAGE}\n"
        "USER 1000\n"
    )


def base_image(spec: dict[str, Any]) -> str:
    if spec["language"] == "python":
        return f"python:{python_version(spec)}-slim"
    return {"go": "golang:1.22", "javascript": "node:20"}.get(spec["language"], "debian:12")
