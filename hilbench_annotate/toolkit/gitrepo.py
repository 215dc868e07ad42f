"""Read a task repository at its base commit straight from git objects (no checkout).

The authoring workspace shows authors the repository at the base commit and lets them edit
files. Everything here reads the bare mirror through ``git`` plumbing and never writes to it:
a later "history leakage" check inspects the mirror, so not even a loose object may appear.

Every git call goes through :func:`run_git`, which

* names the repository with ``--git-dir`` (no upward discovery into some other repository),
* ignores the user's and the system's git configuration, attributes and ignore files
  (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null`` and ``HOME`` pointing at an empty
  temporary directory), so results do not depend on who runs the server,
* drops inherited ``GIT_*`` variables (a ``GIT_DIR`` or ``GIT_INDEX_FILE`` left in the
  environment by a hook would silently redirect reads and writes),
* ignores replace refs, treats pathspecs literally, and always has a timeout.
"""

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hilbench_annotate.errors import DomainError

GIT_TIMEOUT = 60  # seconds for any single git command

SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"

_COMMITISH = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._/\-]{0,199}$")


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a directory listing at a commit.

    ``kind`` is ``"blob"`` (regular file), ``"tree"`` (directory), ``"link"`` (symbolic link,
    ``size`` is the length of its target) or ``"submodule"`` (gitlink, ``size`` is None).
    """

    name: str
    path: str
    kind: str
    size: int | None
    mode: str


def git_dir(repo_path: Path) -> Path:
    """The git directory of ``repo_path`` (a bare mirror, or a work tree with ``.git``).

    Refusing anything else matters: ``git -C`` on a missing mirror would walk up and find the
    application's own repository.
    """
    path = Path(repo_path)
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path.resolve()
    if (path / ".git" / "HEAD").is_file():
        return (path / ".git").resolve()
    raise DomainError(f"{path} is not a git repository.")


def git_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment where only the repository's own configuration can influence git."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
            "LANGUAGE": "",
        }
    )
    if extra:
        env.update(extra)
    return env


def run_git(
    repo_path: Path | None,
    args: Sequence[str],
    *,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    cwd: Path | None = None,
    check: bool = True,
    timeout: float = GIT_TIMEOUT,
) -> subprocess.CompletedProcess:
    """Run ``git args`` on ``repo_path`` (None: no repository) and return the completed process.

    ``home`` is an empty directory used as ``HOME``; one is made (and removed) when not given.
    With ``check`` a non-zero exit raises DomainError carrying git's message.
    """
    if home is None:
        with tempfile.TemporaryDirectory(prefix="hilbench-git-home-") as scratch:
            return run_git(
                repo_path,
                args,
                home=Path(scratch),
                env=env,
                input=input,
                cwd=cwd,
                check=check,
                timeout=timeout,
            )
    command = ["git"]
    if repo_path is not None:
        command.append(f"--git-dir={git_dir(repo_path)}")
    command.extend(args)
    try:
        result = subprocess.run(
            command,
            input=input if input is not None else b"",
            capture_output=True,
            env=git_env(home, env),
            cwd=cwd or home,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise DomainError(f"git {args[0]} took longer than {timeout} seconds.") from exc
    if check and result.returncode != 0:
        raise DomainError(f"git {args[0]} failed: {stderr_text(result)}")
    return result


def stderr_text(result: subprocess.CompletedProcess) -> str:
    return result.stderr.decode("utf-8", errors="replace").strip()


def clean_path(path: str) -> str:
    """``path`` as a normalised repository-relative path ("" for the root).

    Absolute paths, ``.``/``..`` components, empty components and NUL bytes are refused, so a
    request can never name something outside the repository's tree.
    """
    if not isinstance(path, str):
        raise DomainError("A path must be a string.")
    if path in ("", ".", "/"):
        return ""
    if "\x00" in path:
        raise DomainError(f"Path {path!r} contains a NUL byte.")
    if path.startswith("/"):
        raise DomainError(f"Path {path!r} is absolute; paths are relative to the repository.")
    trimmed = path[:-1] if path.endswith("/") else path
    for part in trimmed.split("/"):
        if part in ("", ".", ".."):
            raise DomainError(
                f"Path {path!r} is not a plain repository path (empty, '.' or '..' component)."
            )
    return trimmed


def resolve_commit(repo_path: Path, commit: str) -> str:
    """The full hash of ``commit``; refuses anything that could be read as a git option."""
    if not isinstance(commit, str) or not _COMMITISH.match(commit) or ".." in commit:
        raise DomainError(f"{commit!r} is not a commit name.")
    result = run_git(
        repo_path, ["rev-parse", "--verify", "-q", f"{commit}^{{commit}}"], check=False
    )
    if result.returncode != 0:
        raise DomainError(f"Commit {commit} is not in the repository.")
    return result.stdout.decode().strip()


def _entry_kind(mode: str, object_type: str) -> str:
    if mode == SYMLINK_MODE:
        return "link"
    if mode == GITLINK_MODE or object_type == "commit":
        return "submodule"
    return "tree" if object_type == "tree" else "blob"


def _parse_ls_tree(output: bytes) -> list[tuple]:
    """``(mode, type, oid, size, name)`` rows of ``git ls-tree -l -z`` output."""
    rows = []
    for record in output.split(b"\x00"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, object_type, oid, size = meta.decode().split(maxsplit=3)
        size_value = None if size.strip() == "-" else int(size)
        rows.append((mode, object_type, oid, size_value, name.decode("utf-8", "surrogateescape")))
    return rows


def _ls_tree(repo_path: Path, treeish: str, *, recursive: bool = False) -> list[tuple]:
    args = ["ls-tree", "-z", "-l"] + (["-r"] if recursive else []) + [treeish]
    return _parse_ls_tree(run_git(repo_path, args).stdout)


def _tree_entry(repo_path: Path, sha: str, path: str) -> tuple | None:
    """The ls-tree row for ``path`` at ``sha`` (None when absent), found in its parent tree.

    ``sha:parent`` only walks trees, so a path through a symbolic link or a file is absent
    rather than followed.
    """
    parent, _, name = path.rpartition("/")
    treeish = f"{sha}:{parent}" if parent else f"{sha}^{{tree}}"
    result = run_git(repo_path, ["ls-tree", "-z", "-l", treeish], check=False)
    if result.returncode != 0:
        return None
    for row in _parse_ls_tree(result.stdout):
        if row[4] == name:
            return row
    return None


def list_tree(repo_path: Path, commit: str, path: str = "") -> list[TreeEntry]:
    """The directory ``path`` at ``commit``: directories first, then everything else, by name."""
    path = clean_path(path)
    sha = resolve_commit(repo_path, commit)
    if path:
        row = _tree_entry(repo_path, sha, path)
        if row is None:
            raise DomainError(f"There is no {path!r} at commit {sha[:12]}.")
        if row[1] != "tree":
            raise DomainError(f"{path!r} is not a directory at commit {sha[:12]}.")
        treeish = row[2]
    else:
        treeish = f"{sha}^{{tree}}"
    entries = [
        TreeEntry(
            name=name,
            path=f"{path}/{name}" if path else name,
            kind=_entry_kind(mode, object_type),
            size=size,
            mode=mode,
        )
        for mode, object_type, _oid, size, name in _ls_tree(repo_path, treeish)
    ]
    entries.sort(key=lambda entry: (entry.kind != "tree", entry.name))
    return entries


def decode_text(path: str, data: bytes, max_bytes: int) -> str:
    """``data`` as text, refusing what the in-browser editor cannot show faithfully."""
    if len(data) > max_bytes:
        raise DomainError(f"{path} is too big to edit here ({len(data)} bytes, limit {max_bytes}).")
    if b"\x00" in data:
        raise DomainError(f"{path} is a binary file.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DomainError(f"{path} is a binary file (not UTF-8 text).") from exc


def read_file(repo_path: Path, commit: str, path: str, *, max_bytes: int = 1_000_000) -> str:
    """The text of the regular file ``path`` at ``commit``.

    The size is checked from the tree before the content is read, so a huge blob is never
    loaded. Symbolic links, directories and submodules are refused.
    """
    path = clean_path(path)
    if not path:
        raise DomainError("The repository root is a directory, not a file.")
    sha = resolve_commit(repo_path, commit)
    row = _tree_entry(repo_path, sha, path)
    if row is None:
        raise DomainError(f"There is no file {path!r} at commit {sha[:12]}.")
    mode, object_type, oid, size, _name = row
    kind = _entry_kind(mode, object_type)
    if kind == "link":
        raise DomainError(f"{path} is a symbolic link, not a file.")
    if kind != "blob":
        raise DomainError(f"{path} is a {'directory' if kind == 'tree' else kind}, not a file.")
    if size is not None and size > max_bytes:
        raise DomainError(f"{path} is too big to edit here ({size} bytes, limit {max_bytes}).")
    return decode_text(path, run_git(repo_path, ["cat-file", "blob", oid]).stdout, max_bytes)


def symlink_paths(repo_path: Path, commit: str) -> set[str]:
    """Paths of every symbolic link in the tree at ``commit`` (submodules are not entered)."""
    sha = resolve_commit(repo_path, commit)
    rows = _ls_tree(repo_path, f"{sha}^{{tree}}", recursive=True)
    return {name for mode, _type, _oid, _size, name in rows if mode == SYMLINK_MODE}


def file_exists(repo_path: Path, commit: str, path: str) -> bool:
    """Whether ``path`` names a file (regular or symbolic link) at ``commit``."""
    path = clean_path(path)
    if not path:
        return False
    sha = resolve_commit(repo_path, commit)
    row = _tree_entry(repo_path, sha, path)
    return row is not None and _entry_kind(row[0], row[1]) in ("blob", "link")


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAMES_TIMEOUT = 60  # seconds for one search of the tree


def names_present(repo_path: Path, commit: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` (identifier-shaped ones) the tree at ``commit`` holds: as a whole
    word of a text file (``git grep``, no textconv), or as a file or directory name without
    its extension (``urls`` of ``urls.py``)."""
    wanted = sorted({name for name in names if _NAME.fullmatch(name)})
    if not wanted:
        return set()
    sha = resolve_commit(repo_path, commit)
    args = ["grep", "-I", "-F", "-w", "-o", "-h", "--no-color", "--no-textconv"]
    for name in wanted:
        args += ["-e", name]
    found = run_git(repo_path, [*args, sha, "--"], check=False, timeout=NAMES_TIMEOUT)
    if found.returncode not in (0, 1):  # 1: none of them
        raise DomainError(f"git grep failed: {stderr_text(found)}")
    present = set(found.stdout.decode("utf-8", "replace").split()) & set(wanted)
    listing = run_git(repo_path, ["ls-tree", "-r", "-z", "--name-only", sha], timeout=NAMES_TIMEOUT)
    parts = {
        part.split(".")[0]
        for path in listing.stdout.decode("utf-8", "replace").split("\x00")
        for part in path.split("/")
    }
    return present | (parts & set(wanted))
