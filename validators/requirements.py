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

The whole expansion is bounded (``Bounds``: lines, bytes, ``-r`` lines; the settings'
``REQUIREMENTS_MAX_*``), counting an ``-r`` file each time it is named: past a bound the
resolution stops with a DomainError saying so, before anything past it is read. The page, the
build and the SWE-bench import all go through here, so all three refuse alike — a build never
installs part of a list.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

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


@dataclass(frozen=True)
class Bounds:
    """How much one resolution may read, across every file: lines, bytes and ``-r`` lines.
    An ``-r`` file counts each time it is named — the fan-out is the attack (one 200 kB file
    named 18,000 times from a 198 kB top file is 3.6 GB of lines)."""

    lines: int
    bytes: int
    includes: int

    @classmethod
    def configured(cls) -> Bounds:
        return cls(
            lines=settings.REQUIREMENTS_MAX_LINES,
            bytes=settings.REQUIREMENTS_MAX_BYTES,
            includes=settings.REQUIREMENTS_MAX_INCLUDES,
        )


class _Expansion:
    """What one resolution has read so far, checked against its bounds as each file is
    counted and before its lines are kept: past a bound it stops with a DomainError, so no
    more than the bounds (plus one file) is ever held."""

    def __init__(self, path: str, bounds: Bounds):
        self.path, self.bounds = path, bounds
        self.lines = self.bytes = self.includes = 0

    def include(self) -> None:
        """One more ``-r`` line (found or not: each one costs a look into the repository)."""
        self.includes += 1
        if self.includes > self.bounds.includes:
            self._passed(f"{self.bounds.includes:,} -r lines", "MAX_INCLUDES")

    def read(self, lines: int, size: int) -> None:
        self.lines += lines
        self.bytes += size
        if self.lines > self.bounds.lines:
            self._passed(f"{self.bounds.lines:,} lines", "MAX_LINES")
        if self.bytes > self.bounds.bytes:
            self._passed(f"{self.bounds.bytes:,} bytes", "MAX_BYTES")

    def _passed(self, bound: str, setting: str):
        raise DomainError(
            f"the expansion of {self.path} passes {bound} (an -r file counts each time it "
            f"is named; HILBENCH_REQUIREMENTS_{setting}); nothing was resolved past that, "
            "and nothing is installed from it."
        )


@dataclass
class _File:
    """One file of the expansion, read once however often it is named."""

    kept: list[str]  # its lines less the excluded ones
    lines: int
    size: int

    @classmethod
    def of(cls, text: str) -> _File:
        kept = [line for line in text.split("\n") if not _excluded(line)]
        return cls(kept, _line_count(text), _size(text))


def _line_count(text: str) -> int:
    return text.count("\n") + bool(text and not text.endswith("\n"))


def _size(text: str) -> int:
    return len(text.encode("utf-8", "replace"))


def resolve_requirements(
    repo_path: Path, commit: str, candidates: list[str], bounds: Bounds | None = None
) -> Requirements:
    """The requirement lines of the first of ``candidates`` present at ``commit``; a
    DomainError naming the paths tried and the commit when none is, or naming the bound
    when the expansion passes ``bounds`` (the settings' by default)."""
    found = next((p for p in candidates if file_exists(repo_path, commit, p)), None)
    if found is None:
        raise DomainError(
            f"No requirement file at commit {commit[:12]}: tried {', '.join(candidates)} "
            "(the specification's requirement_files)."
        )
    expansion = _Expansion(found, bounds or Bounds.configured())
    text = read_file(repo_path, commit, found, max_bytes=MAX_BYTES)
    expansion.read(_line_count(text), _size(text))
    folder = posixpath.dirname(found)
    files: dict[str, _File | None] = {}  # by name, None when not in the repository
    original: list[str] = []
    additional: list[str] = []
    included: list[str] = []
    missing: list[str] = []
    for line in text.split("\n"):
        if not line.strip().startswith("-r"):
            if not _excluded(line):
                original.append(line)
            continue
        expansion.include()
        name = posixpath.normpath(posixpath.join(folder, line.strip()[2:].strip()))
        if name not in files:
            files[name] = _read_included(repo_path, commit, name)
        if (file := files[name]) is None:
            missing.append(name)
            continue
        expansion.read(file.lines, file.size)
        included.append(name)
        additional += file.kept
    lines = _replaced("\n".join([*additional, *original])).split("\n")
    return Requirements(
        commit=commit,
        path=found,
        lines=[line.rstrip() for line in lines if line.strip()],
        included=included,
        missing=missing,
    )


def _read_included(repo_path: Path, commit: str, name: str) -> _File | None:
    """The file an ``-r`` line names, or None when it is outside the repository or not in it
    (skipped, as SWE-bench skips it)."""
    outside = name.startswith(("/", "../")) or name == ".."
    if outside or not file_exists(repo_path, commit, name):
        return None
    return _File.of(read_file(repo_path, commit, name, max_bytes=MAX_BYTES))


class _Remembered:
    """Recent resolutions, least recently used first out, within a budget of (roughly)
    bytes: the web process keeps thousands of real ones (about 1 kB each) and never more
    than a couple of the largest the bounds allow."""

    ENTRY = 1024  # the key, the tuple and the Requirements around the lines
    LINE = 64  # a str object's own overhead, beside its characters

    def __init__(self, budget: int):
        self.budget, self.size = budget, 0
        self._items: OrderedDict[tuple, tuple[tuple, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> tuple | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: tuple, value: tuple[Requirements | None, str]) -> None:
        found, problem = value
        strings = [*found.lines, *found.included, *found.missing] if found else []
        size = self.ENTRY + len(problem) + sum(len(text) + self.LINE for text in strings)
        with self._lock:
            if key in self._items or size > self.budget:
                return
            self._items[key] = (value, size)
            self.size += size
            while self.size > self.budget:
                _key, (_value, dropped) = self._items.popitem(last=False)
                self.size -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.size = 0


REMEMBERED = _Remembered(budget=8_000_000)


def requirements_at(
    mirror: str, commit: str, candidates: tuple[str, ...]
) -> tuple[Requirements | None, str]:
    """``resolve_requirements`` for pages and imports, remembered (a commit's files never
    change; the bounds are part of the key): ``(requirements, "")`` or ``(None, why not)``."""
    bounds = Bounds.configured()
    key = (mirror, commit, candidates, bounds)
    if (remembered := REMEMBERED.get(key)) is not None:
        return remembered
    try:
        value = resolve_requirements(Path(mirror), commit, list(candidates), bounds), ""
    except DomainError as exc:
        value = None, str(exc)
    REMEMBERED.put(key, value)
    return value


def conda_unavailable(files: list[str]) -> str:
    """Why an ``environment.yml`` specification cannot build here, in one sentence."""
    return (
        f"SWE-bench builds this environment with conda from the repository's "
        f"{' or '.join(files)}, and conda environments cannot build on this machine: no conda "
        "channel (conda-forge, defaults) is reachable from it — only PyPI, Debian and npm are — "
        "so no conda solver has packages to install; build it where a conda channel is "
        "reachable, or replace conda_files with pip packages in the Environment tab."
    )
