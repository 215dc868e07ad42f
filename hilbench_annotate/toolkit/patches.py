"""Setup patches: check they apply with git, and build them file by file.

Parsing and the unsafe-path checks live in :mod:`.patchtext`; their public names are
re-exported here, so callers import everything patch-related from this module.

A blocked task's *setup patch* is applied on the task's base commit before the agent starts,
then the upstream test and gold patches are applied on top. The app must therefore know,
before an author saves, that the chain applies cleanly (no fuzz, no whitespace errors) and that
no patch can write outside the repository when the harness applies it.

Nothing here writes into the bare mirror (a later "history leakage" check inspects it).
Patches are applied with ``git apply --cached`` to a temporary index built by ``git read-tree``;
the blobs ``git apply`` stores for staged content go to a throwaway object directory
(``GIT_OBJECT_DIRECTORY``) while the mirror's objects are only read, as an alternate.
"""

import re
import tempfile
from collections.abc import Collection, Sequence
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import (
    GITLINK_MODE,
    SYMLINK_MODE,
    clean_path,
    decode_text,
    file_exists,
    git_dir,
    read_file,
    resolve_commit,
    run_git,
    stderr_text,
    symlink_paths,
)

# Parsing and path checks live in patchtext; re-exported here so callers import one module.
# _apply_chain looks _section_problems up in this module, so tests can replace it here.
from hilbench_annotate.toolkit.patchtext import (
    DEV_NULL,
    PatchFile,
    PatchRefused,
    _ended,
    _parse,
    _quote,
    _Section,
    _section_problems,
    _split_lines,
    diff_lines,
    parse_patch,
    path_problems,
    split_patch,
)

__all__ = [
    "DEV_NULL",
    "PatchFile",
    "PatchRefused",
    "check_applies",
    "diff_lines",
    "file_after",
    "file_diff",
    "parse_patch",
    "path_problems",
    "replace_file_diff",
    "split_patch",
]


# --- applying --------------------------------------------------------------------------------


def _labelled(patches: Sequence[tuple[str, str] | str]) -> list[tuple[str, str]]:
    labelled = []
    for index, item in enumerate(patches):
        if isinstance(item, str):
            labelled.append((f"patch {index + 1}", item))
        else:
            label, text = item
            labelled.append((str(label), text))
    return labelled


def _alternate(path: Path) -> str:
    """``path`` as an entry of GIT_ALTERNATE_OBJECT_DIRECTORIES (quoted when it needs to be)."""
    text = str(path)
    if ":" not in text and not text.startswith('"'):
        return text
    quoted = _quote(text)
    return quoted if quoted.startswith('"') else f'"{text}"'


class _Scratch:
    """A temporary index holding the commit's tree, with a throwaway object directory.

    git reads objects from the mirror (as an alternate) and writes any new ones into the
    scratch directory, so the mirror is never written.
    """

    def __init__(self, repo_path: Path, sha: str, directory: Path):
        self.repo_path = repo_path
        self.home = directory / "home"
        self.home.mkdir()
        objects = directory / "objects"
        (objects / "info").mkdir(parents=True)
        (objects / "pack").mkdir()
        self.env = {
            "GIT_INDEX_FILE": str(directory / "index"),
            "GIT_OBJECT_DIRECTORY": str(objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": _alternate(git_dir(repo_path) / "objects"),
        }
        self.git(["read-tree", sha])

    def git(self, args: list[str], **kwargs):
        return run_git(self.repo_path, args, home=self.home, env=self.env, **kwargs)

    def entries(self) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) of the scratch index."""
        output = self.git(["ls-files", "--stage", "-z"]).stdout
        entries = {}
        for record in output.split(b"\x00"):
            if record:
                meta, _, name = record.partition(b"\t")
                mode, oid, _stage = meta.decode().split()
                entries[name.decode("utf-8", "surrogateescape")] = (mode, oid)
        return entries

    def apply(self, text: str, *, whitespace: str):
        """``git apply --cached`` into the scratch index (all or nothing, never fuzzy)."""
        return self.git(
            [
                "-c",
                "core.whitespace=blank-at-eol,space-before-tab,blank-at-eof",
                "-c",
                "apply.ignoreWhitespace=no",
                "apply",
                "--cached",
                f"--whitespace={whitespace}",
            ],
            input=text.encode("utf-8", "surrogateescape"),
            check=False,
        )


def _blamed_path(message: str, sections: list[_Section]) -> str | None:
    """The file git's message is about: named by git, or found from a ``<stdin>:N`` line."""
    known = {name for section in sections for name in section.names}
    pattern = r"error: (?:patch failed: )?(.+?)(?::\d+)?(?:: [^\n]*)?$"
    for named in re.finditer(pattern, message, re.M):
        if named.group(1) in known:
            return named.group(1)
    for match in re.finditer(r"<stdin>:(\d+):", message):
        line = int(match.group(1)) - 1
        for section in sections:
            if section.start <= line < section.end:
                return section.file.path
    for section in sections:
        if section.file.path and section.file.path in message:
            return section.file.path
    return None


def _new_link_problems(
    before: dict[str, tuple[str, str]], after: dict[str, tuple[str, str]], symlinks: set[str]
) -> list[str]:
    """Symbolic links, submodules or paths through symbolic links that the patch staged.

    A second line of defence behind :func:`path_problems`, looking at what git actually did
    rather than at our reading of the patch text.
    """
    problems = []
    for path, (mode, oid) in after.items():
        if before.get(path) == (mode, oid):
            continue
        if mode == SYMLINK_MODE:
            problems.append(f"{path}: patch creates or changes a symbolic link")
        elif mode == GITLINK_MODE:
            problems.append(f"{path}: patch creates or changes a submodule")
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in symlinks:
                problems.append(
                    f"{path}: goes through the symbolic link {'/'.join(parts[:depth])!r}"
                )
                break
    return problems


def _apply_chain(
    repo_path: Path,
    commit: str,
    patches: Sequence[tuple[str, str] | str],
    directory: Path,
    *,
    whitespace_exempt: Collection[str] = (),
    strict: bool = True,
) -> _Scratch:
    labelled = _labelled(patches)
    sha = resolve_commit(repo_path, commit)
    symlinks = symlink_paths(repo_path, sha)
    parsed = {}
    for label, text in labelled:
        parsed[label] = _parse(text)[1]
        problems = []
        for section in parsed[label]:
            problems += _section_problems(section, symlinks)
        problems = list(dict.fromkeys(problems))
        if problems:
            first = problems[0].split(": ", 1)[0]
            raise PatchRefused(
                f"The {label} is refused: " + "; ".join(problems) + ".",
                label=label,
                path=first,
                problems=problems,
            )
    scratch = _Scratch(repo_path, sha, directory)
    entries = scratch.entries()
    applied: list[str] = []
    for label, text in labelled:
        if not text.strip():
            continue
        lenient = not strict or label in whitespace_exempt
        result = scratch.apply(text, whitespace="nowarn" if lenient else "error-all")
        if result.returncode != 0:
            message = stderr_text(result)
            path = _blamed_path(message, parsed[label])
            where = f" ({path})" if path else ""
            after = f"on top of the {' and '.join(applied)}" if applied else "on the base commit"
            raise PatchRefused(
                f"The {label} does not apply{where} {after}. git apply says:\n{message}",
                label=label,
                path=path,
                git_message=message,
            )
        now = scratch.entries()
        problems = _new_link_problems(entries, now, symlinks)
        if problems:
            raise PatchRefused(
                f"The {label} is refused: " + "; ".join(problems) + ".",
                label=label,
                path=problems[0].split(": ", 1)[0],
                problems=problems,
            )
        entries = now
        applied.append(label)
    return scratch


def check_applies(
    repo_path: Path,
    commit: str,
    patches: Sequence[tuple[str, str] | str],
    *,
    whitespace_exempt: Collection[str] = (),
) -> None:
    """Refuse (PatchRefused) unless ``patches`` apply cleanly, in order, on ``commit``.

    ``patches`` are ``(label, text)`` pairs, e.g. ``[("setup patch", s), ("test patch", t),
    ("gold patch", g)]`` (a bare string is labelled "patch N"); each applies on top of the ones
    before it, as the harness will apply them. Every patch is first checked by
    :func:`path_problems`. Then git applies it to a scratch index: no fuzz, and added lines
    with whitespace errors are refused, except in patches whose label is in
    ``whitespace_exempt`` (upstream patches an author cannot change). Empty patches are
    skipped. The error names the patch, the file and includes git's message.
    """
    with tempfile.TemporaryDirectory(prefix="hilbench-apply-") as directory:
        _apply_chain(
            repo_path, commit, patches, Path(directory), whitespace_exempt=whitespace_exempt
        )


def _touched(patch: str) -> set[str]:
    return {
        name
        for section in _parse(patch)[1]
        for name in (section.file.old_path, section.file.new_path, *section.names)
        if name
    }


def file_after(
    repo_path: Path, commit: str, patch: str, path: str, *, max_bytes: int = 1_000_000
) -> str:
    """The text of ``path`` once ``patch`` is applied on ``commit``.

    The base content when the patch does not touch the file (the patch is then not applied,
    so an author can still open other files of a patch that needs fixing); "" when the file
    does not exist afterwards (a file about to be created, or one the patch deletes).
    Whitespace errors are tolerated here so that the author can open the file to fix them;
    :func:`check_applies` is the gate.
    """
    path = clean_path(path)
    if path not in _touched(patch):
        if file_exists(repo_path, commit, path):
            return read_file(repo_path, commit, path, max_bytes=max_bytes)
        return ""
    with tempfile.TemporaryDirectory(prefix="hilbench-apply-") as directory:
        scratch = _apply_chain(repo_path, commit, [("patch", patch)], Path(directory), strict=False)
        entry = scratch.entries().get(path)
        if entry is None:
            return ""
        mode, oid = entry
        if mode == SYMLINK_MODE:
            raise DomainError(f"{path} is a symbolic link, not a file.")
        if mode == GITLINK_MODE:
            raise DomainError(f"{path} is a submodule, not a file.")
        size = int(scratch.git(["cat-file", "-s", oid]).stdout)
        if size > max_bytes:
            raise DomainError(f"{path} is too big to edit here ({size} bytes, limit {max_bytes}).")
        return decode_text(path, scratch.git(["cat-file", "blob", oid]).stdout, max_bytes)


# --- building patches file by file -----------------------------------------------------------


def file_diff(
    path: str, old_text: str | None, new_text: str | None, *, mode: str = "100644"
) -> str:
    """A git-style diff of one file, from ``old_text`` to ``new_text`` ("" when identical).

    ``old_text`` None makes a new file, ``new_text`` None a deletion; ``mode`` is the mode
    written on those ``new file mode``/``deleted file mode`` lines. The hunks come from
    ``git diff --no-index`` on temporary files; the headers are written here with ``a/path``
    and ``b/path`` quoted as git quotes them. No mode is put on the ``index`` line, so
    applying the diff keeps an executable file executable.
    """
    path = clean_path(path)
    if not path:
        raise DomainError("A file diff needs a file path.")
    if old_text == new_text:
        return ""
    for text in (old_text, new_text):
        if text is not None and "\x00" in text:
            raise DomainError(f"{path}: binary content cannot be edited here.")
    with tempfile.TemporaryDirectory(prefix="hilbench-diff-") as scratch:
        directory = Path(scratch)
        home = directory / "home"
        home.mkdir()
        names = []
        for name, text in (("old", old_text), ("new", new_text)):
            if text is None:
                names.append(DEV_NULL)
            else:
                (directory / name).write_bytes(text.encode("utf-8", "surrogateescape"))
                names.append(name)
        result = run_git(
            None,
            [
                "diff",
                "--no-index",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--full-index",
                "--diff-algorithm=myers",
                "-U3",
                "--",
                *names,
            ],
            home=home,
            cwd=directory,
            check=False,
        )
    if result.returncode not in (0, 1):
        raise DomainError(f"git diff failed for {path}: {stderr_text(result)}")
    output = result.stdout.decode("utf-8", "surrogateescape")
    if not output:
        return ""
    lines = _split_lines(output)
    index_line = next((line for line in lines if line.startswith("index ")), None)
    first_hunk = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    a_name, b_name = _quote("a/" + path), _quote("b/" + path)
    tab = "\t" if " " in path else ""
    header = [f"diff --git {a_name} {b_name}\n"]
    if old_text is None:
        header.append(f"new file mode {mode}\n")
    elif new_text is None:
        header.append(f"deleted file mode {mode}\n")
    if index_line:
        header.append(index_line.split()[0] + " " + index_line.split()[1] + "\n")
    if first_hunk < len(lines):
        header.append(f"--- {DEV_NULL if old_text is None else a_name + tab}\n")
        header.append(f"+++ {DEV_NULL if new_text is None else b_name + tab}\n")
    return "".join(header + lines[first_hunk:])


def replace_file_diff(patch: str, path: str, new_file_diff: str) -> str:
    """``patch`` with the section for ``path`` replaced by ``new_file_diff``.

    ``new_file_diff`` "" removes the section; a path without a section is added. Other
    sections (and any text before the first one) are kept byte for byte. A replaced section
    keeps its place; a new one goes before the first section whose path sorts after it, so
    a patch built file by file is in path order whatever order the files were edited in.
    A section's path is the path after the patch (the old path for a deletion).
    """
    path = clean_path(path)
    preamble, sections = _parse(patch)
    replacement = ""
    if new_file_diff.strip():
        new_sections = _parse(new_file_diff)[1]
        if len(new_sections) != 1 or new_sections[0].file.path != path:
            found = [section.file.path for section in new_sections]
            raise DomainError(f"Expected a diff of {path} only, got sections for {found}.")
        replacement = _ended(new_file_diff)
    keys = [section.file.path for section in sections]
    texts = [_ended(section.text) for section in sections]
    if path in keys:
        position = keys.index(path)
        kept = [(k, t) for k, t in zip(keys, texts, strict=True) if k != path]
        keys, texts = [k for k, _ in kept], [t for _, t in kept]
    else:
        position = next((i for i, key in enumerate(keys) if key > path), len(keys))
    if replacement:
        keys.insert(position, path)
        texts.insert(position, replacement)
    if not texts and not preamble.strip():
        return ""
    return _ended(preamble) + "".join(texts) if preamble else "".join(texts)
