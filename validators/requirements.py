"""A SWE task's requirement files, resolved from its repository as SWE-bench's harness does.

Where SWE-bench's specification says ``packages: requirements.txt``, its harness does not run
``pip install -r requirements.txt`` in the checkout: it reads the repository's own requirement
file at the instance's ``environment_setup_commit``, from per-repository candidate paths
(``MAP_REPO_TO_REQS_PATHS``; the first that exists wins), pulls in the files its ``-r`` lines
name (one level, beside it; a missing one is skipped), drops ``-e .``, ``.[test…`` and comment
lines, replaces packages yanked from PyPI (``REPLACE_REQ_PACKAGES``), and installs the result
(``swebench/harness/test_spec/python.py``, ``get_requirements_by_commit``, swebench 4.1.0).

Here the files come from the task's mirror (``toolkit/gitrepo.read_file``: plumbing, no
checkout), never from the network. The build installs the text this returns; the Environment
tab shows the same lines, so an author sees exactly what will be installed.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import file_exists, read_file

# swebench 4.1.0, harness/test_spec/python.py: lines dropped, and packages replaced.
EXCLUDED_PREFIXES = ("-e .", "#", ".[test")
REPLACED_PACKAGES = (("types-pkg_resources", "types-setuptools"),)
MAX_BYTES = 200_000


@dataclass(frozen=True)
class Requirements:
    """What a build installs: the file found, the files its ``-r`` lines pulled in, and the
    requirement lines in the order pip reads them."""

    commit: str
    path: str
    lines: list[str]
    included: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # ``-r`` files not in the repository

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    @property
    def summary(self) -> str:
        """One line for a build's log: the file, what ``-r`` pulled in or skipped."""
        pulled = f" (with {', '.join(self.included)})" if self.included else ""
        skipped = f"; -r files not in the repository: {', '.join(self.missing)}"
        return f"requirements: {self.path}{pulled}{skipped if self.missing else ''}"

    @property
    def manifest(self) -> dict:
        """What a built environment records of its requirement files."""
        return {
            "commit": self.commit,
            "path": self.path,
            "included": self.included,
            "lines": len(self.lines),
        }

    def write_into(self, folder: Path, name: str) -> None:
        """The lines as ``folder/name``, readable by the sandbox user (pip reads it there)."""
        folder.mkdir(mode=0o755)
        (folder / name).write_text(self.text)
        (folder / name).chmod(0o644)


def _excluded(line: str) -> bool:
    return line.strip().startswith(EXCLUDED_PREFIXES)


def _replaced(text: str) -> str:
    for package, replacement in REPLACED_PACKAGES:
        text = re.sub(rf"^{re.escape(package)}([<>=!~]=?.*|$)", replacement, text, flags=re.M)
    return text


def resolve_requirements(repo_path: Path, commit: str, candidates: list[str]) -> Requirements:
    """The requirement lines of the first of ``candidates`` present at ``commit``; a
    DomainError naming the paths tried and the commit when none is."""
    found = next((p for p in candidates if file_exists(repo_path, commit, p)), None)
    if found is None:
        raise DomainError(
            f"No requirement file at commit {commit[:12]}: tried {', '.join(candidates)} "
            "(the specification's requirement_files)."
        )
    folder = posixpath.dirname(found)
    original: list[str] = []
    additional: list[str] = []
    included: list[str] = []
    missing: list[str] = []
    for line in read_file(repo_path, commit, found, max_bytes=MAX_BYTES).split("\n"):
        if line.strip().startswith("-r"):
            name = posixpath.normpath(posixpath.join(folder, line.strip()[2:].strip()))
            outside = name.startswith(("/", "../")) or name == ".."
            if outside or not file_exists(repo_path, commit, name):
                missing.append(name)
                continue
            included.append(name)
            text = read_file(repo_path, commit, name, max_bytes=MAX_BYTES)
            additional += [extra for extra in text.split("\n") if not _excluded(extra)]
        elif not _excluded(line):
            original.append(line)
    lines = _replaced("\n".join([*additional, *original])).split("\n")
    return Requirements(
        commit=commit,
        path=found,
        lines=[line.rstrip() for line in lines if line.strip()],
        included=included,
        missing=missing,
    )


@functools.lru_cache(maxsize=256)
def requirements_at(
    mirror: str, commit: str, candidates: tuple[str, ...]
) -> tuple[Requirements | None, str]:
    """``resolve_requirements`` for pages and imports, remembered (a commit's files never
    change): ``(requirements, "")`` or ``(None, why not)``."""
    try:
        return resolve_requirements(Path(mirror), commit, list(candidates)), ""
    except DomainError as exc:
        return None, str(exc)


def conda_unavailable(files: list[str]) -> str:
    """Why an ``environment.yml`` specification cannot build here, in one sentence."""
    return (
        f"SWE-bench builds this environment with conda from the repository's "
        f"{' or '.join(files)}, and conda environments cannot build on this machine: no conda "
        "channel (conda-forge, defaults) is reachable from it — only PyPI, Debian and npm are — "
        "so no conda solver has packages to install; build it where a conda channel is "
        "reachable, or replace conda_files with pip packages in the Environment tab."
    )
