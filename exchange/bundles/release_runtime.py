"""What the export adds to a task imported from the release, so that Harbor can run it.

The release publishes its task folders without a verifier (its ``.gitignore`` drops
``tests/``), with compose files that name sidecar images it builds elsewhere
(``hil-bench-harbor/<name>:latest``, ``pull_policy: never``), and with its SQL databases and
SWE images outside the repository (``shared/data_archive.json``, ``shared/image_archive.json``).
The export keeps every release file byte for byte (``release``) and adds these files, which
``provenance/generated.json`` lists (an import leaves them out of the release files):

- ``<mode>/tests/``: ``test.sh`` and its grader. The release's ``task.toml`` runs the verifier
  in the agent's container. SQL: the submitted query (``/harbor_shared/submitted_query.sql``)
  on ``/data/database.sqlite``, compared with ``golden_output.csv`` by the release's rules
  (``compare.py``); SWE: the test patch, the task's test command (the image's run script and
  parser), every FAIL_TO_PASS and PASS_TO_PASS test passing.
- ``shared/sidecars/<name>/``: a build context for each sidecar image the compose files name
  (the app's own servers, listening where the release's do), and ``shared/sidecars/build.sh``,
  which builds them under the release's names.
- ``shared/ask-human-data/judge.json``: the embedded judge's settings for the task; the
  ask-human sidecar reads it where the compose file mounts ``ask-human-data``.
- ``shared/FETCH.md``, when the data is not in the bundle: what to fetch and where it goes.
  A trial started without it stops with that sentence (the verifier, the sql-tools sidecar,
  and the project's Harbor environment before it starts anything).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from harbor_agents.trial_model import BUILT_BY
from hilbench_annotate.instructions import MODES
from hilbench_annotate.toolkit.jsontext import json_loads

from . import layout, sidecars
from .harness import ENVIRONMENT

GENERATED = "provenance/generated.json"
SIDECAR_DIR = "shared/sidecars"
FETCH = "shared/FETCH.md"
JUDGE = "shared/ask-human-data/judge.json"
# Paths only the app writes: an import never keeps a folder's file there (release.collect).
RESERVED = (f"{SIDECAR_DIR}/", FETCH, JUDGE)
RELEASE_PORT = 8000
SIDECAR_IMAGE = re.compile(r"^\s*image:\s*hil-bench-harbor/([a-z][a-z0-9-]*):latest\s*$", re.M)
TASK_IMAGE = re.compile(r"^\s*image:\s*(hilbench-swe:[\w.-]+)\s*$", re.M)
SERVERS = {"sql-tools": "sql_tools.py", "business-info": "business_info.py", "ask-human": None}
MISSING_DATA = (
    "this task's database is kept outside the release's folder: the task's shared/FETCH.md "
    "says what to fetch and where it goes (shared/data/database.sqlite)"
)


# The bundle's README.md says the command (``harness``); a task folder alone says it too.
RUN_NOTE = (
    "Then run it from the bundle's folder as its README.md says: "
    f"`PYTHONPATH=. harbor run -e {ENVIRONMENT} -p <this folder>/<mode> -a oracle`."
)


MODE_PARTS = ("task.toml", "instruction.md", "environment/", "solution/solve.sh")


def missing_parts(paths) -> list[str]:
    """What a release task folder lacks of what Harbor runs in each mode (some release
    folders ship without ``environment/`` or ``solve.sh``)."""
    paths = set(paths)
    missing = []
    for mode in MODES:
        for part in MODE_PARTS:
            wanted = f"{mode}/{part}"
            present = (
                any(p.startswith(wanted) for p in paths) if part.endswith("/") else wanted in paths
            )
            if not present:
                missing.append(wanted)
    return missing


def missing_sentence(missing: list[str]) -> str:
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    return (
        f"The release folder lacks {shown}: the bundle carries only what the folder has, and "
        "Harbor cannot run a mode without its environment and solution until they are supplied."
    )


def sidecar_names(files: Mapping[str, bytes]) -> list[str]:
    """The ``hil-bench-harbor`` images the task's compose files name, that the app can build."""
    names = set()
    for path, content in files.items():
        if path.endswith("environment/docker-compose.yaml"):
            names.update(SIDECAR_IMAGE.findall(content.decode("utf-8", "replace")))
    return sorted(n for n in names if n in SERVERS)


def task_image(files: Mapping[str, bytes]) -> str | None:
    """The prebuilt image a release SWE task's compose files run (``hilbench-swe:<id>``)."""
    for path, content in sorted(files.items()):
        if path.endswith("environment/docker-compose.yaml"):
            found = TASK_IMAGE.search(content.decode("utf-8", "replace"))
            if found:
                return found.group(1)
    return None


@functools.cache
def _sidecar_context(name: str) -> Mapping[str, bytes]:
    """A sidecar's build context for the release's compose file: the app's server, on the
    release's port, reading the paths the release's compose file mounts."""
    if name == "ask-human":
        common = dict(sidecars.ask_human_common())
        install = (
            f"COPY requirements.txt {sidecars.SERVER_DIR}/requirements.txt\n"
            f"RUN pip install --no-cache-dir -r {sidecars.SERVER_DIR}/requirements.txt\n"
        )
        env = {"JUDGE_CONFIG": f"/ask-human-data/{JUDGE.rsplit('/', 1)[1]}"}
        common["Dockerfile"] = sidecars.server_dockerfile(
            "ask_human.py", name=name, env=env, extra=install, port=RELEASE_PORT
        ).encode()
        return common
    script = SERVERS[name]
    env = {"MISSING_DATA_NOTE": MISSING_DATA} if name == "sql-tools" else {}
    dockerfile = sidecars.server_dockerfile(script, name=name, env=env, port=RELEASE_PORT)
    return {
        "Dockerfile": dockerfile.encode(),
        script: sidecars.runtime_file(script),
        "mcp_server.py": sidecars.runtime_file("mcp_server.py"),
    }


def build_script(names: list[str]) -> bytes:
    """``shared/sidecars/build.sh``: each sidecar built from the app's code under a tag of the
    app's own, with the app's label, then given the release's name — unless an image the app
    did not build (the release's own) holds that name: it is left alone, and it is what the
    release's compose file runs."""
    label = "=".join(BUILT_BY)
    lines = [
        "#!/bin/sh",
        "# Written by HiL-Bench Annotate: builds the sidecar images this task's compose files",
        "# name from the app's code (the release builds its own elsewhere), for a stock Harbor;",
        "# the project's Harbor environment builds them itself. Each is built as",
        "# hilbench-sidecar/<name>:release, labelled " + label + ", and tagged",
        "# hil-bench-harbor/<name>:latest only where that name is free or already the app's: an",
        "# image of the release's own there is never built over (for ask-human: the release's",
        "# sidecar, which calls an LLM judge, ASK_HUMAN_MODEL, then scores ask_human).",
        "set -e",
        'cd "$(dirname "$0")"',
        "ours() {",
        f'  [ "$(docker image inspect --format \'{{{{ index .Config.Labels "{BUILT_BY[0]}" }}}}\' '
        f'"$1" 2>/dev/null)" = {BUILT_BY[1]} ]',
        "}",
    ]
    for name in names:
        own, release = f"hilbench-sidecar/{name}:release", f"hil-bench-harbor/{name}:latest"
        lines += [
            f"docker build -q --label {label} -t {own} {shlex.quote(name)}",
            f"if ! docker image inspect {release} >/dev/null 2>&1 || ours {release}; then",
            f"  docker tag {own} {release}",
            "else",
            f"  echo \"{release} is not the app's: left alone (the release's sidecar runs)\" >&2",
            "fi",
        ]
    return ("\n".join(lines) + "\n").encode()


def data_note(files: Mapping[str, bytes], domain: str) -> str | None:
    """What the release keeps outside the folder for this task, or None."""
    if domain == "sql":
        if layout.SQL_DATABASE in files:
            return None
        archive = _json(files.get("shared/data_archive.json"))
        where = archive.get("db_artifact_path") or "?"
        bucket = archive.get("hf_bucket") or "?"
        descriptions = [str(p) for p in archive.get("desc_artifact_paths") or []]
        lines = [
            "# Data this task needs that the bundle does not carry",
            "",
            f"The release keeps this task's database outside its repository: `{where}` in the "
            f"Hugging Face bucket `{bucket}`. Fetch it to `shared/data/database.sqlite` of "
            "this task folder (every mode mounts `shared/data` at `/data`).",
        ]
        if descriptions:
            lines += [
                "",
                "Its column descriptions go to `shared/data/database_description/`:",
                "",
                *(f"- `{p}` → `shared/data/database_description/{p.rsplit('/', 1)[-1]}`"
                  for p in descriptions),
            ]  # fmt: skip
        lines += [
            "",
            "Without it the trial stops: the sql-tools sidecar and the verifier say so.",
            "",
            RUN_NOTE,
        ]
        return "\n".join(lines) + "\n"
    image = task_image(files)
    if image is None:
        return None
    archive = _json(files.get("shared/image_archive.json"))
    source = archive.get("hf_url") or archive.get("artifact_path") or "?"
    return (
        "# Data this task needs that the bundle does not carry\n\n"
        f"The release runs this task in a prebuilt image, `{image}`, kept outside its "
        f"repository: `{source}` ({archive.get('artifact_bytes', '?')} bytes, sha256 "
        f"`{archive.get('artifact_sha256', '?')}`). Load it on the machine that runs the "
        f"trials (`zstd -dc <file> | docker load`) so that `docker image inspect {image}` "
        "finds it. Without it the trial cannot start its container.\n\n" + RUN_NOTE + "\n"
    )


def _json(content: bytes | None) -> dict:
    if not content:
        return {}
    try:
        value = json_loads(content)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _sql_tests(snapshot: dict, note: str | None) -> dict[str, bytes]:
    env = snapshot.get("environment") or {}
    check = ""
    if note is not None:
        sentence = note.split("\n\n", 2)[1].replace("`", "")
        check = (
            'if [ ! -f "$DATABASE" ]; then\n'
            f"  echo {_after_database(sentence)} >&2\n"
            "  exit 1\n"
            "fi\n"
        )  # fmt: skip
    test = (
        "#!/usr/bin/env bash\n"
        "# Written by HiL-Bench Annotate (the release publishes no verifier). It runs in the\n"
        "# agent's container, as the release's task.toml says: the submitted query on the\n"
        "# task's database, compared with golden_output.csv by the release's rules.\n"
        "DATABASE=${HILBENCH_DATABASE:-/data/database.sqlite}\n"
        + check
        + f'python3 /tests/grade.py {layout.SUBMISSION} "$DATABASE" /tests/golden_output.csv '
        "/logs/verifier/reward.txt\n"
    )
    return {
        "tests/test.sh": test.encode(),
        **{f"tests/{n}": c for n, c in sidecars.sql_verifier_files().items()},
        "tests/golden_output.csv": str(env.get("golden_output") or "").encode(),
    }


def _after_database(sentence: str) -> str:
    """The verifier's words for a missing database, as bash words: ``${DATABASE}`` expanded,
    ``sentence`` (from the release's ``data_archive.json``) literal. A sentence of printable
    ASCII but ``"$`\\!`` (nothing bash reads in double quotes) stays in the one double-quoted
    string the export has always written; any other is ``shlex.quote``d after it."""
    if sentence.isascii() and sentence.isprintable() and not set('"$`\\!') & set(sentence):
        return f'"verifier: no ${{DATABASE}}: {sentence}"'
    return '"verifier: no ${DATABASE}: "' + shlex.quote(sentence)


def _swe_tests(snapshot: dict) -> dict[str, bytes]:
    env = snapshot.get("environment") or {}
    spec = env.get("environment_spec") or {}
    tests = {
        "fail_to_pass": list(env.get("fail_to_pass") or []),
        "pass_to_pass": list(env.get("pass_to_pass") or []),
        "test_command": env.get("test_command") or "",
        "log_parser": spec.get("log_parser") or "pytest",
        "test_patch_file": "/tests/test.patch",
    }
    test = (
        "#!/usr/bin/env bash\n"
        "# Written by HiL-Bench Annotate (the release publishes no verifier). It runs in the\n"
        "# agent's container, as the release's task.toml says: the test patch, the task's test\n"
        "# command (the image's run script and parser), FAIL_TO_PASS and PASS_TO_PASS.\n"
        "PYTHON=$(command -v python3 || command -v python)\n"
        '"$PYTHON" /tests/grade.py /tests/tests.json /logs/verifier/reward.txt\n'
    )
    return {
        "tests/test.sh": test.encode(),
        **{f"tests/{n}": c for n, c in sidecars.swe_verifier_files().items()},
        "tests/tests.json": layout.dumps(tests),
        "tests/test.patch": str(env.get("test_patch") or "").encode("utf-8", "surrogateescape"),
    }


def generated_files(
    snapshot: dict, files: Mapping[str, bytes], *, judge_settings: dict, llm_judge=None
) -> dict[str, bytes]:
    """The files the export adds to a release task (paths relative to the task folder);
    ``files``: the task's release files as they are written. ``llm_judge``
    (``judge_choice.LlmJudge``): the lead gave ask_human to the release's LLM judge, so the
    release's own ask-human sidecar runs and the app adds none (``judge_choice``)."""
    domain = snapshot.get("domain")
    added: dict[str, bytes] = {}
    note = data_note(files, domain)
    tests = _sql_tests(snapshot, note) if domain == "sql" else _swe_tests(snapshot)
    for mode in MODES:
        if f"{mode}/task.toml" in files and not any(p.startswith(f"{mode}/tests/") for p in files):
            added.update({f"{mode}/{name}": content for name, content in tests.items()})
    names = sidecar_names(files)
    built = [n for n in names if not (llm_judge is not None and n == "ask-human")]
    for name in built:
        for relative, content in _sidecar_context(name).items():
            added[f"{SIDECAR_DIR}/{name}/{relative}"] = content
    if built:
        added[f"{SIDECAR_DIR}/build.sh"] = build_script(built)
    if "ask-human" in names and layout.REGISTRY in files:
        context = llm_judge.settings() if llm_judge is not None else {**judge_settings}
        added[JUDGE] = json.dumps(context, indent=2, sort_keys=True).encode() + b"\n"
    if note is not None:
        added[FETCH] = note.encode()
    # A folder's own tests/ is kept (a reviewer may accept it); the app's sidecar contexts,
    # judge settings and FETCH.md are the app's whatever a folder carries under their names.
    return {
        path: content
        for path, content in added.items()
        if path not in files or path.startswith(RESERVED)
    }


def generated_document(
    paths: list[str], note: str | None, missing: list[str] = ()
) -> dict[str, Any]:
    """``provenance/generated.json``: which files of the folder the app wrote, and why; and
    what the release folder lacked (``incomplete``), which the app did not make up."""
    return {
        "generated": sorted(paths),
        "incomplete": list(missing),
        "why": "The release publishes no verifier and builds its sidecar images elsewhere: "
        "the app added these files so that Harbor runs the task. Every other file is the "
        "release's, byte for byte unless the task was edited.",
        "data_outside_bundle": note is not None,
    }


def generated_paths(document: bytes | None) -> set[str]:
    """The paths a ``provenance/generated.json`` lists (an import leaves them out)."""
    value = _json(document)
    paths = value.get("generated")
    return {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set()


def verifier_files(snapshot: dict, note: str | None) -> dict[str, bytes]:
    """The verifier the app generates for a release task (names inside ``tests/``), as the
    export adds it to a mode without one and as a run scores every mode (``trial_files``)."""
    sql = snapshot.get("domain") == "sql"
    tests = _sql_tests(snapshot, note) if sql else _swe_tests(snapshot)
    return {path.removeprefix("tests/"): content for path, content in tests.items()}
