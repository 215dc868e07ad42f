"""What a run writes over a task folder it exported, before Harbor reads it: the app's
decisions, not the folder's.

A task the app wrote carries the app's own ``task.toml`` and verifier already. A task kept
from the release carries the release's files byte for byte (export parity: ``release.py``),
and what the release decided is not what runs here — its ``task.toml`` says
``allow_internet = true`` and grades in the agent's own container, and an uploaded folder may
carry a ``tests/`` of its own that would score its own trials. For a run, each mode of such a
task gets:

- ``task.toml`` from the app's template (``layout.task_toml``): the run's network decision
  (a lead's, on the run's form), the release's limits and timeouts, the verifier in a
  container of its own, what it grades collected as artifacts, the ask-human sidecar's
  metrics collected from that sidecar; nothing of the folder's;
- ``tests/``: the verifier's image (the app's Python image, or the release's prebuilt one for
  SWE) and the verifier the app generates (``release_runtime``), which runs first and scores
  the trial; a folder's own ``tests/`` is moved to ``tests/uploaded/`` and run after it, as an
  unprivileged user unless a reviewer accepted it, and its reward is recorded beside
  (``uploaded`` in the trial's rewards). It scores instead only once accepted
  (``VerifierAcceptance`` of the uploaded files' fingerprint).

A folder whose own agent Dockerfile asks for what a run refuses (``dockerfile_problems``:
``ADD`` of a URL, ``ONBUILD``, the app's images, parser directives) is not run. The compose
model is not written here: the project's Harbor environment makes it from its own template
whatever the folder holds (``harbor_agents/trial_model.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from hilbench_annotate.instructions import MODES

from . import layout, modes, sidecars
from .release_runtime import data_note, task_image, verifier_files

UPLOADED = "tests/uploaded"
TIMEOUTS = {"sql": 300.0, "swe": 1800.0}
RELEASE_URLS = {name: f"http://{name}:8000/mcp" for name in ("sql-tools", "business-info")}
RELEASE_URLS["ask-human"] = "http://ask-human:8000/mcp"
UPLOADED_TIMEOUT_S = 1200

# The run's test.sh. The generated verifier runs first, as root, and its reward is written
# to reward.json at once: what Harbor reads should nothing after it finish. A folder's own
# verifier that no reviewer accepted then runs as an unprivileged user (65534), which can
# write only the reward.txt made for it: it can neither signal this script nor touch
# reward.json (the folder is root's, 0755). An accepted one runs as root, as the release's
# would. Rewards are numbers as JSON writes them, nothing else.
WRAPPER = r"""#!/usr/bin/env bash
# Written by HiL-Bench Annotate for this run (exchange/bundles/trial_files.py): the verifier
# the app generated scores the trial; the task folder's own tests/ (tests/uploaded/), if
# any, run after it and their reward is recorded beside it ("uploaded").
V=/logs/verifier
NUMBER='^-?(0|[1-9][0-9]{0,15})(\.[0-9]{1,17})?([eE][-+]?[0-9]{1,2})?$'
reward() {
  local value=""
  if [ -f "$V/reward.txt" ] && [ ! -L "$V/reward.txt" ]; then
    value=$(head -c 64 "$V/reward.txt" | tr -d ' \t\r\n')
  elif [ -f "$V/reward.json" ] && [ ! -L "$V/reward.json" ]; then
    value=$(head -c 4096 "$V/reward.json" | tr -d ' \t\r\n' \
      | sed -n 's/.*"reward":\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p')
  fi
  [[ $value =~ $NUMBER ]] && printf '%s' "$value"
}
write() {  # reward, then what to add after "generated"
  printf '{"reward": %s, "generated": %s%s}\n' "$1" "$generated" "$2" >"$V/reward.json.part"
  mv -f "$V/reward.json.part" "$V/reward.json"
}
bash /tests/generated.sh
generated=$(reward)
generated=${generated:-0}
rm -f "$V/reward.txt" "$V/reward.json"
write "__FALLBACK__" ""
extra=""
uploaded=""
if [ -f /tests/uploaded/test.sh ]; then
  if [ __ACCEPTED__ = 1 ]; then
    rm -f "$V/reward.json"
    (cd /tests/uploaded && timeout __TIMEOUT__ bash ./test.sh) >"$V/uploaded-verifier.log" 2>&1
    uploaded=$(reward)
  elif command -v setpriv >/dev/null; then
    chown 0:0 "$V" && chmod 0755 "$V"
    : >"$V/reward.txt" && chown 65534:65534 "$V/reward.txt"
    (cd /tests/uploaded && timeout __TIMEOUT__ setpriv --reuid=65534 --regid=65534 \
      --clear-groups --no-new-privs bash ./test.sh) >"$V/uploaded-verifier.log" 2>&1
    uploaded=$(reward)
  fi
  rm -f "$V/reward.txt"
  extra=', "uploaded_no_reward": 1'
  [ -n "$uploaded" ] && extra=", \"uploaded\": $uploaded"
fi
write __SCORE__ "$extra"
"""


def uploaded_tests(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The folder's own verifier files (``<mode>/tests/…``) among a task's release files."""
    return {
        path: content
        for path, content in files.items()
        if path.partition("/")[0] in MODES and path.split("/")[1:2] == ["tests"]
    }


def tests_fingerprint(tests: Mapping[str, bytes]) -> str:
    """What an acceptance names: every uploaded verifier file, path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(tests):
        digest.update(path.encode() + b"\0" + hashlib.sha256(tests[path]).digest())
    return digest.hexdigest()


def wrapper(*, accepted: bool) -> bytes:
    score = '"${uploaded:-0}"' if accepted else '"$generated"'
    text = (
        WRAPPER.replace("__SCORE__", score)
        .replace("__FALLBACK__", "0" if accepted else "$generated")
        .replace("__ACCEPTED__", "1" if accepted else "0")
        .replace("__TIMEOUT__", str(UPLOADED_TIMEOUT_S))
    )
    return text.encode()


def _verifier_section(domain: str, mode: str) -> str:
    """The verifier in a container of its own (``environment_mode = "separate"``), built
    from the app's ``tests/Dockerfile``: neither the agent's processes nor the folder's
    agent image (its ``ENV``, ``ENTRYPOINT``, ``PATH``) are there when it scores. What it
    grades reaches it as artifacts: the submitted query (SQL), the agent's changes as a
    patch (SWE); in ask_human mode, the ask-human sidecar's metrics."""
    text = (
        f"[verifier]\ntimeout_sec = {TIMEOUTS[domain]}\n"
        'environment_mode = "separate"\n\n[verifier.env]\n'
    )
    if domain == "swe":
        text += f"\n[[verifier.collect]]\ncommand = {json.dumps(modes.SWE_COLLECT)}\n"
        text += f'\n[[artifacts]]\nsource = "{modes.AGENT_PATCH}"\n'
    else:
        text += f'\n[[artifacts]]\nsource = "{layout.SUBMISSION}"\n'
    if mode == "ask_human":
        text += f'\n[[artifacts]]\nsource = "{layout.ASK_HUMAN_METRICS}"\nservice = "ask-human"\n'
    return text


def _verifier_image(domain: str, files: Mapping[str, bytes]) -> bytes:
    """The verifier's image: the app's Python image (SQL; the task's database is bound
    read-only at /data), or the release's prebuilt image of the task (SWE: its repository at
    /app, its run script and parser), with the verifier's files at /tests."""
    base = sidecars.PYTHON_IMAGE if domain == "sql" else task_image(files)
    if not base:
        base = sidecars.PYTHON_IMAGE  # no prebuilt image named: the trial stops, saying so
    return (
        f"# Written by HiL-Bench Annotate for a run: the verifier's own container.\n"
        f"FROM {base}\nCOPY . /tests/\n"
    ).encode()


SWE_GRADE = (
    "#!/usr/bin/env bash\n"
    "# Written by HiL-Bench Annotate for a run: the agent's changes (a patch collected from its\n"
    "# container), then the test patch and the task's test command, in the release's image.\n"
    "PYTHON=$(command -v python3 || command -v python)\n"
    f'"$PYTHON" /tests/grade.py /tests/tests.json /logs/verifier/reward.txt {modes.AGENT_PATCH}\n'
).encode()


def trial_files(
    snapshot: dict[str, Any],
    files: Mapping[str, bytes],
    *,
    folder: str,
    allow_internet: bool,
    accepted: bool,
) -> dict[str, bytes]:
    """Path (relative to the task folder) -> bytes of every file a run writes over a release
    task's exported folder; the caller empties each mode's ``tests/`` first. ``files``: the
    task's release files as exported."""
    domain = snapshot.get("domain") or "sql"
    env = snapshot.get("environment") or {}
    resource = env.get("db_id") if domain == "sql" else env.get("repo_name")
    generated = verifier_files(snapshot, data_note(files, domain))
    if domain == "swe":
        generated["test.sh"] = SWE_GRADE
    generated["Dockerfile"] = _verifier_image(domain, files)
    own = uploaded_tests(files)
    out: dict[str, bytes] = {}
    for mode in MODES:
        if f"{mode}/task.toml" not in files:
            continue  # a mode the folder lacks is not run (missing_parts says so at import)
        out[f"{mode}/task.toml"] = layout.task_toml(
            domain=domain,
            folder=folder,
            mode=mode,
            resource=str(resource or ""),
            task_attempt_id=str(snapshot.get("source_id") or folder),
            verifier=_verifier_section(domain, mode),
            allow_internet=allow_internet,
            sidecar_urls=RELEASE_URLS,
        ).encode()
        for name, content in generated.items():
            target = "generated.sh" if name == "test.sh" else name
            out[f"{mode}/tests/{target}"] = content
        out[f"{mode}/tests/test.sh"] = wrapper(accepted=accepted)
        prefix = f"{mode}/tests/"
        for path, content in own.items():
            if path.startswith(prefix):
                out[f"{mode}/{UPLOADED}/{path[len(prefix) :]}"] = content
    return out


# What a compose file may ask for that the app's template never gives (a note at import).
_OVERREACH = re.compile(
    r"^\s*(privileged|cap_add|devices|pid|ipc|network_mode|userns_mode|security_opt|"
    r"cgroup_parent|sysctls|env_file|volumes_from|ports|secrets|configs|extends|include|"
    r"runtime|network|ssh|additional_contexts)\s*:",
    re.M,
)
_HOST_PATH = re.compile(r"^\s*-\s*['\"]?(/|~|\.\./)[^\s:'\"]*\s*:", re.M)


def folder_overreach(files: Mapping[str, bytes]) -> list[str]:
    """What the folder's compose files and verifier ask for that no trial is given: a note
    for the import report (the files are kept for export parity; none of it runs)."""
    notes = []
    for path, content in sorted(files.items()):
        if not path.endswith("environment/docker-compose.yaml"):
            continue
        text = content.decode("utf-8", "replace")
        asked = sorted(set(_OVERREACH.findall(text)))
        asked += [f"the host path {p}" for p in sorted(set(_HOST_PATH.findall(text)))]
        if "docker.sock" in text:
            asked.append("the Docker socket")
        if asked:
            notes.append(
                f"{path} asks for {', '.join(asked)}: kept for export parity, never run "
                "(a trial's compose model is the app's own)"
            )
    refused = dockerfile_problems(files)
    if refused:
        notes.append(refused)
    modes = sorted({p.split("/", 1)[0] for p in uploaded_tests(files)})
    if modes:
        notes.append(
            f"its own tests/ ({', '.join(modes)}) scores nothing until an auditor or a lead "
            "accepts it on the task page; until then Harbor runs score it with the generated "
            "verifier and record its reward beside"
        )
    return notes


# A Dockerfile of a folder's own is built by Docker's classic builder: these would have the
# daemon fetch a URL from this machine's network (ADD), run a parent's hidden steps (ONBUILD),
# or read another task's images (the app's sidecars and trial images, by name).
_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$", re.S)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^git@")
_DIRECTIVE = re.compile(r"^\s*#\s*(escape|syntax|check)\s*=", re.M | re.I)
_APP_IMAGES = ("hilbench-sidecar/", "hil-bench-harbor/", "hb__", "hilbench-annotate/")


def _instructions(text: str):
    logical = ""
    for line in text.splitlines():
        if not logical and line.lstrip().startswith("#"):
            continue
        logical += line
        if logical.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        found = _INSTRUCTION.match(logical)
        logical = ""
        if found:
            yield found.group(1).upper(), found.group(2).split()


def dockerfile_problem(text: str) -> str | None:
    """What in an uploaded Dockerfile a run refuses, in words; None when nothing."""
    if _DIRECTIVE.search(text):
        return "a parser directive (escape=, syntax=: how the rest of it would be read)"
    stages: set[str] = set()
    count = 0
    for keyword, words in _instructions(text):
        plain = [w for w in words if not w.startswith("--")]
        flags = [w for w in words if w.startswith("--from=")]
        if keyword == "ONBUILD":
            return "ONBUILD (steps a later build would run unseen)"
        if keyword == "ADD" and any(_URL.match(w) for w in plain[:-1]):
            return "ADD of a URL (the Docker daemon would fetch it from this machine's network)"
        if keyword == "FROM" and plain:
            if plain[0].lower().startswith(_APP_IMAGES):
                return f"FROM {plain[0]} (an image of the app's, not the task's)"
            if len(plain) >= 3 and plain[1].lower() == "as":
                stages.add(plain[2].lower())
            stages.add(str(count))
            count += 1
        for flag in flags:
            source = flag.split("=", 1)[1].lower()
            if source not in stages:
                return f"{keyword} {flag} (only an earlier stage of the same Dockerfile)"
    return None


def dockerfile_problems(files: Mapping[str, bytes]) -> str | None:
    """The first refused instruction among the task's agent Dockerfiles, naming the file."""
    for path, content in sorted(files.items()):
        if path.endswith("environment/Dockerfile") or path.endswith("environment/dockerfile"):
            problem = dockerfile_problem(content.decode("utf-8", "replace"))
            if problem:
                return f"{path} asks for {problem}: a run builds no such Dockerfile"
    return None
