"""What a bundle carries at its top so that a plain Harbor runs its tasks offline.

Harbor 0.25 turns a task's ``allow_internet = false`` into its ``no-network`` policy, which its
own Docker environment keeps with an egress-control sidecar pinned by digest: on a machine that
reaches no image registry that image cannot exist, and ``harbor run`` refuses every task
(``network_mode='no-network' is not supported``). The project's Harbor environment
(``harbor_agents.environments:OfflineDocker``) keeps the promise without it — the agent's
container gets no network at all — and runs a task as the app runs it (the app's compose
model, never the folder's own). So the bundle carries it: the package ``hilbench_harbor/``
holds the app's ``harbor_agents`` modules the environment needs, byte for byte (they import
only the standard library, Harbor and each other: never the app), and ``README.md`` says the
one command. With a registry, Harbor's own Docker environment runs the same folders with its
own egress control (``harbor run -p <task>/<mode> -a oracle``), as before.
"""

from __future__ import annotations

import functools
from pathlib import Path

import harbor_agents

PACKAGE = "hilbench_harbor"
# The app's modules the environment imports (environments -> fetch, trial_model), copied.
MODULES = ("environments.py", "fetch.py", "trial_model.py")
ENVIRONMENT = f"{PACKAGE}.environments:OfflineDocker"
README = "README.md"
SOURCE = Path(harbor_agents.__file__).parent


def offline_command(mode_folder: str) -> str:
    """The one line that runs a mode folder of the bundle offline, from the bundle's folder."""
    return f"PYTHONPATH=. harbor run -e {ENVIRONMENT} -p {mode_folder} -a oracle"


@functools.cache
def _module(name: str) -> bytes:
    return (SOURCE / name).read_bytes()


def _package_init() -> bytes:
    return (
        b'"""The Harbor environment of HiL-Bench Annotate, as its bundles carry it: '
        b"``OfflineDocker``\n(``environments.py``), copied byte for byte from the app's "
        b'``harbor_agents/``. See ../README.md."""\n'
    )


def readme(first_folder: str) -> bytes:
    """The bundle's ``README.md``: what runs it, with the one command on its first task."""
    example = f"{first_folder}/baseline"
    return f"""# A HiL-Bench Annotate bundle

Each `sql_<n>/` and `swe_<n>/` folder is one task; each of its modes (`baseline/`,
`ask_human/`, `full_info/`) is a Harbor task folder. `manifest.json` names each content once,
by its sha256, with every path that carries it, and per task what its oracle and no-op scored
and which judge scores `ask_human`.

What every task carries the same (the sidecars' and verifiers' code, a database) is stored
once, in `_shared/`, and each task folder's copies are hard links to it: `tar -xzf` of the
whole bundle gives every folder all its files. To extract one task alone, name `_shared`
too — `tar -xzf bundle.tar.gz _shared {first_folder}` — after which `_shared/` may be deleted.

## Run a task with Harbor, offline

From this folder (the one holding `manifest.json`), with Harbor 0.25 (`pip install
harbor==0.25.0`), Docker and Docker Compose v2:

```
{offline_command(example)}
```

`-a nop` instead of `-a oracle` runs the no-op agent (reward 0); `-p {first_folder}` runs the
task's three modes. The environment (`{ENVIRONMENT}`, the package
`{PACKAGE}/` beside this file) gives the agent's container no network at all and runs the
sidecars the mode names in its network namespace; it needs no image registry, only the base
images the Dockerfiles name (`python:3.11-slim` …) on the machine. Results are under `jobs/`;
each trial's `verifier/reward.txt` is its score.

## With an image registry

Harbor's own Docker environment runs the same folders with its own egress control:
`harbor run -p {example} -a oracle`.

A task kept from the HiL-Bench release whose data the bundle does not carry has a
`shared/FETCH.md` saying what to fetch and where it goes; a trial without it stops saying so.
""".encode()


def harness_files(folders: list[str]) -> dict[str, bytes]:
    """The files at the bundle's top besides ``manifest.json``; ``folders``: the task folders
    in bundle order (the README's example runs the first)."""
    files = {f"{PACKAGE}/{name}": _module(name) for name in MODULES}
    files[f"{PACKAGE}/__init__.py"] = _package_init()
    files[README] = readme(folders[0] if folders else "sql_0")
    return dict(sorted(files.items()))
