"""The bundle's layout: file names, and the texts of the files that are not data.

A task folder follows the HiL-Bench release (Harbor layout)::

    <domain>_<n>/
      baseline/  ask_human/  full_info/     instruction.md  task.toml  environment/  solution/
      shared/    metadata.json  ask-human-data/blocker_registry.json
                 SQL: data/database.sqlite  data/database_description/*.csv
                      data/business_info.json  ground_truth.sql  golden_output.csv
                 SWE: problem_statement.txt  repository.fast-export
      annotate/  task.json         (our authoring state: what the release's files do not hold)
      provenance/ validation.json  review.json

Everything here is deterministic: JSON with sorted keys and a fixed indent, TOML written
from a fixed template, no timestamps (those live only in the top-level ``manifest.json``).
"""

import hashlib
import json
from typing import Any

import orjson

from hilbench_annotate.instructions import MODES

FORMAT = "hilbench-annotate-bundle"
# annotate/task.json's format version.
FORMAT_VERSION = 1
# The bundle's (manifest.json's ``format_version``): 2 names each content once (``contents``,
# ``_shared/``); 1 listed every file's sha256 (``files``), which the importer still reads.
BUNDLE_VERSION = 2
BUNDLE_VERSIONS = (1, 2)
MANIFEST = "manifest.json"
# The contents every task that carries them carries the same, each once (``tarstream``).
SHARED_CONTENTS = "_shared"
# A file system allows a file so many names (ext4: 65,000): a copy in ``_shared`` serves the
# task folders of one domain numbered in one range of LINK_GROUP (``shared_copy``). A folder
# names a shared content at most 7 times (the database: shared/, each mode's sql-tools
# sidecar and verifier), so a copy has at most 14,336 names.
LINK_GROUP = 2048


def shared_copy(folder: str, sha: str) -> str:
    """The copy a task folder's names of a shared content link to:
    ``_shared/<the first folder of its group>/<sha256>`` (``sql_0``, ``sql_2048`` …)."""
    domain, _, number = folder.rpartition("_")
    group = f"{domain}_{int(number) // LINK_GROUP * LINK_GROUP}" if number.isdigit() else "other"
    return f"{SHARED_CONTENTS}/{group}/{sha}"


REGISTRY = "shared/ask-human-data/blocker_registry.json"
METADATA = "shared/metadata.json"
ANNOTATE = "annotate/task.json"
VALIDATION = "provenance/validation.json"
REVIEW = "provenance/review.json"
SQL_DATABASE = "shared/data/database.sqlite"
SQL_DESCRIPTIONS = "shared/data/database_description"
SQL_BUSINESS_INFO = "shared/data/business_info.json"
SQL_GROUND_TRUTH = "shared/ground_truth.sql"
SQL_GOLDEN_OUTPUT = "shared/golden_output.csv"
SWE_STATEMENT = "shared/problem_statement.txt"
SWE_REPOSITORY = "shared/repository.fast-export"
# Files that describe this copy of the task's history, not the task: re-made on every export.
PROVENANCE = (VALIDATION, REVIEW)

# Fixed tar member attributes, so the same files always give the same bytes.
TAR_MTIME = 1_700_000_000  # 2023-11-14; any fixed value would do
FILE_MODE = 0o644


_JSON = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
# orjson's result keeps the buffer it wrote into: 4 KiB for any text up to that, 8 KiB for
# 3 KiB. An export chunk holds its tasks' files until it writes them (some ten JSON files a
# task), so a text below this size is copied into bytes of its own size.
_COPIED_BELOW = 64 << 10


def dumps(value: Any) -> bytes:
    """JSON as every file of the bundle writes it: sorted keys, indent 2, UTF-8, final newline.

    orjson writes what ``json.dumps(sort_keys=True, indent=2, ensure_ascii=False)`` writes
    (but for very small or large floats: ``0.00001`` where json writes ``1e-05``), some ten
    times faster: Python's own encoder is pure Python once it indents, and an export writes
    six such files a task. An integer past 64 bits is left to json."""
    try:
        text = orjson.dumps(value, option=_JSON)
    except TypeError:
        return (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    return bytes(memoryview(text)) if len(text) < _COPIED_BELOW else text


def stable_id(*parts: str) -> str:
    """A 24-hex id (the release's ids are 24-hex) derived only from ``parts``."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def _toml_string(value: str) -> str:
    # JSON's escapes are all valid in a TOML basic string.
    return json.dumps(value, ensure_ascii=False)


# The volume the agent's container and the sidecars share (``harbor-shared`` in the mode's
# compose file): sql-tools writes the submission there and ask-human its metrics, and the
# ``[[artifacts]]`` of task.toml collect them from it.
SHARED_DIR = "/harbor_shared"
SUBMISSION = f"{SHARED_DIR}/submitted_query.sql"
ASK_HUMAN_METRICS = f"{SHARED_DIR}/ask_human_metrics.json"

# Each sidecar's port. The sidecars share the agent's network namespace (``network_mode:
# service:main`` in the mode's compose file): Harbor runs a task with allow_internet = false
# by putting every service without networking of its own into one namespace behind its
# egress proxy, where service names do not resolve, only loopback is reachable, and two
# servers cannot both listen on 8000. Joining main's namespace gives the same picture when
# the internet is allowed too, so the addresses below hold either way.
SIDECAR_PORTS = {"sql-tools": 8001, "business-info": 8002, "ask-human": 8003}


def sidecar_url(name: str) -> str:
    """The address the agent's container reaches sidecar ``name`` at."""
    return f"http://127.0.0.1:{SIDECAR_PORTS[name]}/mcp"


def _mcp(name: str, urls: dict[str, str] | None = None) -> str:
    return (
        "[[environment.mcp_servers]]\n"
        f'name = "{name}"\n'
        'transport = "streamable-http"\n'
        f'url = "{(urls or {}).get(name) or sidecar_url(name)}"\n'
        "args = []\n\n"
    )


def task_toml(
    *,
    domain: str,
    folder: str,
    mode: str,
    resource: str,
    task_attempt_id: str,
    image: str = "",
    verifier: str = "",
    allow_internet: bool = False,
    sidecar_urls: dict[str, str] | None = None,
) -> str:
    """``<mode>/task.toml`` with the release's fields and values; the name is ours.

    SWE: the release points ``environment.docker_image`` at a prebuilt image; our bundle
    builds its environment from ``environment/`` instead, so that key is absent and
    ``metadata.image_name`` names the image that build makes. ``verifier``: the
    ``[verifier]`` section and its artifacts (``modes.verifier_toml``): a separate container
    grades what the agent left. No internet unless a lead allows it. ``sidecar_urls``: where
    the sidecars listen when not at the app's ports (a release task in a run: the release's).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    head = (
        'schema_version = "1.1"\n'
        + ("" if "[[artifacts]]" in verifier else "artifacts = []\n")
        + "[task]\n"
        + f"name = {_toml_string(f'hilbench-annotate/{folder}-{mode}')}\n"
        'description = ""\n'
        "authors = []\n"
        "keywords = []\n"
        "[metadata]\n"
        f'task_id = "{mode}"\n'
        f'task_type = "{domain}"\n'
        f'mode = "{mode}"\n'
    )
    if domain == "sql":
        head += f"database_name = {_toml_string(resource)}\n"
        head += f"task_attempt_id = {_toml_string(task_attempt_id)}\n"
        head += f'tags = [ "sql", "{mode}", "hil-bench",]\n'
        body = (
            verifier
            + "[agent]\ntimeout_sec = 1800.0\n"
            + "[environment]\nbuild_timeout_sec = 600.0\n"
            + 'os = "linux"\ncpus = 2\nmemory_mb = 4096\nstorage_mb = 12288\ngpus = 0\n'
            + f"allow_internet = {str(allow_internet).lower()}\n"
        )
        servers = ["sql-tools", "business-info"] + (["ask-human"] if mode == "ask_human" else [])
        body += "".join(_mcp(s, sidecar_urls) for s in servers)
    else:
        head += f"repo_name = {_toml_string(resource)}\n"
        head += f"task_attempt_id = {_toml_string(task_attempt_id)}\n"
        head += f"image_name = {_toml_string(image)}\n"
        head += f'tags = [ "swe", "{mode}", "hil-bench",]\n'
        body = (
            verifier
            + "[agent]\ntimeout_sec = 7200.0\n"
            + "[environment]\nbuild_timeout_sec = 1200.0\n"
            + 'os = "linux"\ncpus = 4\nmemory_mb = 8192\nstorage_mb = 16384\ngpus = 0\n'
            + f"allow_internet = {str(allow_internet).lower()}\n"
        )
        body += _mcp("ask-human", sidecar_urls) if mode == "ask_human" else "mcp_servers = []\n\n"
    return head + body + "[environment.env]\n[solution.env]\n"


# The key under which a task's source metadata keeps an edit script already applied to the
# shipped database (kept for the record, never run again).
APPLIED_EDIT_SCRIPT = "bundle_applied_edit_script"
