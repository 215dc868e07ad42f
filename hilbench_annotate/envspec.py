"""What a SWE task's tests need to run: its environment specification, as data.

A specification names the toolchain (a Python version, or the machine's Go / Node), the
packages to install (pinned), the repository's own requirement files (SWE-bench's
``packages: requirements.txt``: candidate paths, the first found at ``requirements_commit``
wins — ``validators/requirements.py`` resolves them from the mirror), a conda environment
file (SWE-bench's ``environment.yml``; no conda channel is reachable here, so such a
specification says it cannot build), the commands run in the repository before and for
installing it, commands run before every test run (SWE-bench's ``eval_commands``),
environment variables, and the log parser that reads the test output. It is part of the
task (``SweEnvironment.
environment_spec``; every change is a revision); importers fill it (SWE-bench's own
per-repository, per-version specifications; a release task's ``metadata.json``).

Tasks whose specifications build the same environment share one build: ``build_key`` hashes
exactly what the build depends on (not the test command, nor the parser). No Django here.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.wording import plain_list

# Bump when what a build contains changes shape: every environment is then built again.
BUILD_FORMAT = 1
LANGUAGES = ("python", "go", "javascript", "other")
# The parsers the app has (validators/logparsers.py). A specification may name another
# (SWE-bench has a few of its own); its check then says the parser is not supported.
LOG_PARSERS = {
    "pytest": "pytest -rA (SWE-bench's convention for test ids)",
    "pytest_options": "pytest -rA, absolute-path parameters cut to their last part "
    "(SWE-bench's parse_log_pytest_options)",
    "go_test": "go test -v or -json",
    "jest": "Jest (--verbose or --json)",
    "mocha": "Mocha (spec or json reporter)",
    "sweap_json": "the task's own parser.py (SWE-Bench Pro / HiL-Bench release)",
    "django": "Django's tests/runtests.py --verbosity 2 (SWE-bench's parse_log_django)",
}
# Our parser names that the release's harness (hil, custom_eval.py) spells differently.
HARNESS_PARSER_NAMES = {"go_test": "gotest"}


def harness_parser(name: str) -> str:
    """The release harness's name for our log parser ``name``."""
    return HARNESS_PARSER_NAMES.get(name, name)


def parser_from_harness(name: str) -> str:
    """Our log parser for the release harness's ``name``."""
    return {v: k for k, v in HARNESS_PARSER_NAMES.items()}.get(name, name)


RESERVED_ENV = {"PATH", "HOME", "PWD", "LD_PRELOAD", "LD_LIBRARY_PATH"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_PYTHON = re.compile(r"^3\.\d{1,2}(\.\d{1,3})?$")
_PARSER = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
_REPO_PATH = re.compile(r"^[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*$")
MAX_COMMANDS = 30
MAX_TEXT = 200_000
_LINE_BREAK = re.compile("[\n\r]")
_UNWRITABLE = re.compile("[\n\r\x00]")  # in no Dockerfile line
ONE_LINE = "holds a line break: a Dockerfile's ENV cannot carry one; write it on one line"

EMPTY: dict[str, Any] = {
    "language": "python",
    "python": "",
    "packages": [],
    "requirement_files": [],
    "requirements_commit": "",
    "conda_files": [],
    "pre_install": [],
    "install": [],
    "env": {},
    "eval_commands": [],
    "log_parser": "pytest",
    "run_script": "",
    "parser_script": "",
}


# Fields added after bundles were first written: written only when used, so a bundle of a task
# that does not use them is the same as before (an earlier export re-exports byte for byte).
LATER_FIELDS = ("requirement_files", "requirements_commit", "conda_files", "eval_commands")


def spec_as_written(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` as a bundle writes it: the later fields left out where empty."""
    return {k: v for k, v in spec.items() if k not in LATER_FIELDS or v}


def _lines(value: Any, name: str, problems: list[str]) -> list[str]:
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{name} must be a list of lines")
        return []
    lines = [v.strip() for v in value if v.strip()]
    if len(lines) > MAX_COMMANDS * 10:
        problems.append(f"{name} has {len(lines)} lines; at most {MAX_COMMANDS * 10}")
    return lines


def _paths(value: Any, name: str, problems: list[str]) -> list[str]:
    """Paths inside the repository (relative, no ``..``), one per line."""
    paths = _lines(value, name, problems)
    for path in paths:
        if not _REPO_PATH.match(path) or ".." in path.split("/") or len(path) > 300:
            problems.append(f"{name}: {path!r} is not a path inside the repository")
    return paths


def _env(value: Any, problems: list[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        problems.append("env must map variable names to values")
        return {}
    clean = {}
    for name, text in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            problems.append(f"env: {name!r} is not a variable name")
        elif name in RESERVED_ENV:
            problems.append(f"env: {name} is set by the sandbox and cannot be overridden")
        elif not isinstance(text, str) or "\x00" in text:
            problems.append(f"env: the value of {name} must be text")
        elif _LINE_BREAK.search(text):
            problems.append(f"env: the value of {name} {ONE_LINE}")
        else:
            clean[name] = text
    return dict(sorted(clean.items()))


def spec_clean(raw: Any) -> dict[str, Any]:
    """The specification as stored, or DomainError naming every problem."""
    if raw in (None, "", {}):
        return dict(EMPTY)
    if not isinstance(raw, dict):
        raise DomainError("The environment specification must be an object.")
    unknown = sorted(set(raw) - set(EMPTY))
    problems = (
        [f"unknown fields {plain_list(unknown)}; known: {plain_list(sorted(EMPTY))}"]
        if unknown
        else []
    )
    spec = dict(EMPTY)
    language = raw.get("language") or "python"
    if language not in LANGUAGES:
        problems.append(f"language must be one of {', '.join(LANGUAGES)}")
    spec["language"] = language
    python = str(raw.get("python") or "").strip()
    if python and not _PYTHON.match(python):
        problems.append(f"python must be a version like 3.9 or 3.11.7, not {python!r}")
    spec["python"] = python
    for name in ("packages", "pre_install", "install", "eval_commands"):
        spec[name] = _lines(raw.get(name, []), name, problems)
    for name in ("requirement_files", "conda_files"):
        spec[name] = _paths(raw.get(name, []), name, problems)
    commit = str(raw.get("requirements_commit") or "").strip().lower()
    if commit and not _COMMIT.match(commit):
        problems.append(f"requirements_commit must be a commit id, not {commit!r}")
    spec["requirements_commit"] = commit
    spec["env"] = _env(raw.get("env") or {}, problems)
    parser = str(raw.get("log_parser") or "pytest").strip()
    if not _PARSER.match(parser):
        problems.append(f"log_parser {parser!r} is not a parser name")
    spec["log_parser"] = parser
    for name in ("run_script", "parser_script"):
        text = raw.get(name) or ""
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            problems.append(f"{name} must be text of at most {MAX_TEXT} characters")
            text = ""
        spec[name] = text.replace("\r\n", "\n")
    if problems:
        raise DomainError("Environment specification: " + "; ".join(problems) + ".")
    return spec


def build_key(spec: dict[str, Any], *, base_commit: str) -> str:
    """The hash naming the environment this specification builds.

    The repository matters only when the build runs commands in it (``pre_install``,
    ``install``): then the repository at the task's base commit is installed, as SWE-bench's
    instance images are, and the commit id names that tree whatever mirror holds it. Without
    such commands every task with the same toolchain and packages shares one build.
    """
    installs = bool(spec.get("pre_install") or spec.get("install"))
    material = {
        "format": BUILD_FORMAT,
        "commit": base_commit if installs else "",
        **{k: spec.get(k) for k in ("language", "python", "packages", "pre_install", "install")},
        "env": spec.get("env") or {},
    }
    # Added after the first environments were built: only when used, so their keys stand.
    if spec.get("requirement_files"):
        material["requirements"] = {
            "files": spec["requirement_files"],
            "commit": spec.get("requirements_commit") or base_commit,
        }
    if spec.get("conda_files"):
        material["conda_files"] = spec["conda_files"]
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def eval_script(spec: dict[str, Any], test_command: str) -> str:
    """The shell text of a test run: the specification's ``eval_commands`` first (SWE-bench's
    eval script runs them before the tests and goes on when one fails — ``locale-gen`` without
    root, say), then the test command, whose exit code is the run's."""
    return "\n".join([*(spec.get("eval_commands") or []), test_command])


# --- a specification in a Dockerfile ---------------------------------------------------------
# Docker reads a Dockerfile line by line (a line ending in a backslash goes on with the
# next), quotes and substitutes "$VAR" in an ENV value itself, and reads flags (--mount,
# --network) and heredocs (<<EOF) before a RUN's command. So a value is written so that Docker
# reads it back as it is, and a command so that it is one instruction that runs as written:
# neither can end its line, begin another instruction or add a flag.

_ENV_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "$": "\\$"})
_BARE_ENV = re.compile(r"[A-Za-z0-9_./:@+,-]+")
SHELL = ("/bin/sh", "-c")  # what Docker runs a RUN's shell form with


def dockerfile_env(name: str, value: Any, *, bare: bool = False) -> str:
    """``ENV name="value"``, read by Docker as exactly ``value``: in double quotes, where only
    ``\\``, ``"`` and ``$`` are special, each escaped (``bare``: a value of plain characters
    only goes without quotes). A name that is not a variable name, or a value with a line
    break (no Dockerfile line can hold one; ``spec_clean`` refuses it), is a DomainError."""
    text = str(value)
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        raise DomainError(f"Environment specification: env: {name!r} is not a variable name.")
    if _UNWRITABLE.search(text):
        raise DomainError(f"Environment specification: env: the value of {name} {ONE_LINE}.")
    if bare and _BARE_ENV.fullmatch(text):
        return f"ENV {name}={text}"
    return f'ENV {name}="{text.translate(_ENV_ESCAPES)}"'


def dockerfile_run(command: str) -> str:
    """``RUN`` of one shell command, run as ``/bin/sh -c`` runs it. A command on one line that
    starts with no flag or ``[``, ends with no ``\\`` and holds no ``<<`` is written as it is
    (Docker's shell form); any other in the exec form of the same shell,
    ``RUN ["/bin/sh", "-c", "…"]``: its line breaks JSON escapes, its ``<`` ``\\u003c``, so
    Docker reads one instruction whatever the command holds."""
    plain = (
        command.strip()
        and not _UNWRITABLE.search(command)
        and not command.lstrip().startswith(("-", "["))
        and not command.rstrip().endswith("\\")
        and "<<" not in command
    )
    if plain:
        return f"RUN {command}"
    return "RUN " + json.dumps([*SHELL, command]).replace("<", "\\u003c")


def python_version(spec: dict[str, Any]) -> str:
    """The Python version of an image's tag (``python:<version>-slim``): the specification's,
    as ``spec_clean`` checked it, else 3.11."""
    version = spec.get("python") or "3.11"
    if not isinstance(version, str) or not _PYTHON.fullmatch(version):
        raise DomainError(
            f"Environment specification: python must be a version like 3.9 or 3.11.7, "
            f"not {version!r}."
        )
    return version
