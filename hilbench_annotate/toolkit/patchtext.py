"""Setup patch text: parse it into file sections and check its paths are safe.

Pure text work, no git: :func:`parse_patch` and :func:`split_patch` read a patch the way
``git apply -p1`` does, and :func:`path_problems` says why a patch could touch something
outside the repository. :mod:`.patches` re-exports the public names.
"""

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import GITLINK_MODE, SYMLINK_MODE

DEV_NULL = "/dev/null"


class PatchRefused(DomainError):
    """A patch that is unsafe or does not apply.

    The message names the patch and the file and says what is wrong; when git refused the
    patch it includes git's own message (also kept in ``git_message``).
    """

    def __init__(
        self,
        message: str,
        *,
        label: str | None = None,
        path: str | None = None,
        problems: Sequence[str] = (),
        git_message: str = "",
    ):
        super().__init__(message)
        self.label = label
        self.path = path
        self.problems = list(problems)
        self.git_message = git_message


@dataclass(frozen=True)
class PatchFile:
    """What one file section of a patch does.

    Paths are repository-relative with the ``a/``/``b/`` prefix removed (as ``git apply -p1``
    reads them). ``new_mode`` comes from ``new file mode`` / ``new mode``; ``old_mode`` from
    ``deleted file mode`` / ``old mode`` or the mode on an ``index`` line.
    """

    old_path: str | None
    new_path: str | None
    is_new: bool = False
    is_deleted: bool = False
    is_rename: bool = False
    new_mode: str | None = None
    is_copy: bool = False
    old_mode: str | None = None
    is_binary: bool = False

    @property
    def path(self) -> str:
        """The section's key: the path after the patch, or the deleted path."""
        return self.new_path if self.new_path is not None else (self.old_path or "")


@dataclass
class _Section:
    """A file section: its text, where it sits in the patch, and every name it mentions."""

    file: PatchFile
    start: int  # first line (0-based) of the section in the patch
    end: int  # one past its last line
    text: str
    names: list[str] = field(default_factory=list)  # every path git might read, prefix removed
    raw_names: list[str] = field(default_factory=list)  # ---/+++ names before prefix removal


# --- parsing ---------------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, '"': 34, "\\": 92}
_EXTENDED_HEADERS = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename from ",
    "rename to ",
    "rename old ",
    "rename new ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)


def _split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept; unlike ``str.splitlines`` only ``\\n`` ends a line."""
    lines = text.split("\n")
    result = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        result.append(lines[-1])
    return result


def _unquote(text: str) -> tuple[str, str]:
    """A C-quoted name at the start of ``text`` (as git writes unusual paths) and the rest."""
    assert text.startswith('"')
    out = bytearray()
    i = 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return out.decode("utf-8", "surrogateescape"), text[i + 1 :]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _C_ESCAPES:
                out.append(_C_ESCAPES[nxt])
                i += 2
                continue
            if re.match(r"[0-7]{3}", text[i + 1 : i + 4]):
                out.append(int(text[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
        out.extend(char.encode("utf-8", "surrogateescape"))
        i += 1
    raise PatchRefused(f"Unterminated quoted file name in patch: {text.strip()!r}.")


def _quote(name: str) -> str:
    """``name`` quoted the way git quotes paths in diff headers (core.quotePath=true)."""
    raw = name.encode("utf-8", "surrogateescape")
    if not any(byte < 0x20 or byte >= 0x7F or byte in (0x22, 0x5C) for byte in raw):
        return name
    reverse = {value: key for key, value in _C_ESCAPES.items()}
    out = []
    for byte in raw:
        if byte in reverse:
            out.append("\\" + reverse[byte])
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(chr(byte))
    return '"' + "".join(out) + '"'


def _header_name(value: str) -> str:
    """The file name on a ``---``/``+++``/``rename from`` line (quotes, timestamps removed)."""
    value = value.rstrip("\n")
    if value.startswith('"'):
        return _unquote(value)[0]
    return value.split("\t", 1)[0]


def _strip_prefix(name: str) -> str | None:
    """``name`` as ``git apply -p1`` reads it: None for /dev/null, else minus one component."""
    if name == DEV_NULL:
        return None
    head, slash, rest = name.partition("/")
    return rest if slash else name


def _git_header_names(rest: str) -> tuple[str | None, str | None]:
    """Both names of a ``diff --git`` line (prefix removed), or Nones when ambiguous.

    Unquoted names containing spaces are ambiguous; like git, accept the split where both
    halves name the same file, and otherwise rely on the other header lines.
    """
    rest = rest.rstrip("\n")
    if rest.startswith('"'):
        first, remainder = _unquote(rest)
        remainder = remainder.lstrip(" ")
        second = _unquote(remainder)[0] if remainder.startswith('"') else remainder
        return _strip_prefix(first), _strip_prefix(second)
    if ' "' in rest:
        first, _, quoted = rest.partition(' "')
        return _strip_prefix(first), _strip_prefix(_unquote('"' + quoted)[0])
    for index, char in enumerate(rest):
        if char == " ":
            first, second = _strip_prefix(rest[:index]), _strip_prefix(rest[index + 1 :])
            if first == second:
                return first, second
    return None, None


def _skip_hunks(lines: list[str], i: int) -> int:
    """The index after the hunks starting at ``lines[i]``, counting lines as ``@@`` says.

    Counting matters: a removed line ``-- x`` reads ``--- x`` and must not start a new file.
    """
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if not match:
            break
        old = int(match.group(2)) if match.group(2) is not None else 1
        new = int(match.group(4)) if match.group(4) is not None else 1
        i += 1
        while i < len(lines) and (old > 0 or new > 0):
            line = lines[i]
            if line.startswith(" ") or line in ("\n", "\r\n"):
                old, new = old - 1, new - 1
            elif line.startswith("-"):
                old -= 1
            elif line.startswith("+"):
                new -= 1
            elif not line.startswith("\\"):
                break
            i += 1
        while i < len(lines) and lines[i].startswith("\\"):
            i += 1
    return i


# Lines before a hunk that describe the file, not its content.
_FILE_HEADERS = (
    "diff --git ",
    "index ",
    "--- ",
    "+++ ",
    "new file mode",
    "deleted file mode",
    "old mode",
    "new mode",
    "similarity index",
    "dissimilarity index",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "Binary files",
)


def diff_lines(text: str) -> list[tuple[str, str]]:
    """Each line of a patch with the CSS class that colours it.

    ``diff-file`` (headers), ``diff-hunk`` (``@@``), ``diff-add``, ``diff-del``, or ``""``
    (context and anything else). Hunk bodies are counted as ``@@`` says, as
    :func:`_skip_hunks` does: a removed line ``-- x`` reads ``--- x`` and is a removal, not
    a file header.
    """
    out: list[tuple[str, str]] = []
    old = new = 0
    for line in text.splitlines():
        if old > 0 or new > 0:
            if line.startswith("+"):
                new -= 1
                out.append(("diff-add", line))
            elif line.startswith("-"):
                old -= 1
                out.append(("diff-del", line))
            else:
                if not line.startswith("\\"):  # "\ No newline at end of file" counts nothing
                    old, new = old - 1, new - 1
                out.append(("", line))
            continue
        match = _HUNK.match(line)
        if match:
            old = int(match.group(2)) if match.group(2) is not None else 1
            new = int(match.group(4)) if match.group(4) is not None else 1
            out.append(("diff-hunk", line))
        elif line.startswith(_FILE_HEADERS):
            out.append(("diff-file", line))
        elif line.startswith(("+", "-")):  # a fragment without its @@ line
            out.append(("diff-add" if line[0] == "+" else "diff-del", line))
        else:
            out.append(("", line))
    return out


def _parse_git_section(lines: list[str], start: int) -> tuple[dict, int]:
    info: dict = {"names": [], "raw": []}
    header_old, header_new = _git_header_names(lines[start][len("diff --git ") :])
    info["names"] += [name for name in (header_old, header_new) if name is not None]
    info["old"], info["new"] = header_old, header_new
    i = start + 1
    while i < len(lines):
        line = lines[i].rstrip("\n")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            minus, plus = _header_name(line[4:]), _header_name(lines[i + 1][4:])
            info["raw"] += [minus, plus]
            for key, name in (("old", minus), ("new", plus)):
                stripped = _strip_prefix(name)
                if stripped is None:
                    info["new_file" if key == "old" else "deleted"] = True
                else:
                    info["names"].append(stripped)
                    info.setdefault("header_" + key, stripped)
            return info, _skip_hunks(lines, i + 2)
        if line.startswith(("Binary files ", "GIT binary patch")):
            info["binary"] = True
            return info, i + 1
        prefix = next((p for p in _EXTENDED_HEADERS if line.startswith(p)), None)
        if prefix is None:
            break
        value = line[len(prefix) :]
        if prefix in ("new file mode ", "new mode "):
            info["new_mode"] = value.strip()
            info["new_file"] = info.get("new_file") or prefix == "new file mode "
        elif prefix in ("deleted file mode ", "old mode "):
            info["old_mode"] = value.strip()
            info["deleted"] = info.get("deleted") or prefix == "deleted file mode "
        elif prefix == "index ":
            parts = value.split()
            if len(parts) > 1:
                info.setdefault("old_mode", parts[1])
        elif prefix in ("rename from ", "rename old ", "copy from "):
            info["source"] = _header_name(value)
            info["names"].append(info["source"])
            info["rename" if prefix.startswith("rename") else "copy"] = True
        elif prefix in ("rename to ", "rename new ", "copy to "):
            info["target"] = _header_name(value)
            info["names"].append(info["target"])
        i += 1
    return info, i


def _section_file(info: dict) -> PatchFile:
    is_new, is_deleted = bool(info.get("new_file")), bool(info.get("deleted"))
    old = info.get("source") or info.get("header_old") or info.get("old")
    new = info.get("target") or info.get("header_new") or info.get("new")
    return PatchFile(
        old_path=None if is_new else old,
        new_path=None if is_deleted else new,
        is_new=is_new,
        is_deleted=is_deleted,
        is_rename=bool(info.get("rename")),
        new_mode=info.get("new_mode"),
        is_copy=bool(info.get("copy")),
        old_mode=info.get("old_mode"),
        is_binary=bool(info.get("binary")),
    )


def _parse(text: str) -> tuple[str, list[_Section]]:
    """The text before the first file section, and the file sections in patch order.

    A section runs from its header to the next section's header, so text git ignores
    between sections (a format-patch signature, say) stays with the section before it.
    """
    lines = _split_lines(text)
    starts: list[tuple[int, dict]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            info, after = _parse_git_section(lines, i)
            starts.append((i, info))
            i = max(after, i + 1)
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            minus, plus = _header_name(line[4:]), _header_name(lines[i + 1][4:])
            old, new = _strip_prefix(minus), _strip_prefix(plus)
            info = {
                "raw": [minus, plus],
                "names": [name for name in (old, new) if name is not None],
                "new_file": old is None,
                "deleted": new is None,
                "header_old": old,
                "header_new": new,
            }
            # A "diff -u old new" command line right before belongs to this section.
            begin = i
            if i > 0 and lines[i - 1].startswith("diff ") and (not starts or starts[-1][0] < i - 1):
                begin = i - 1
            starts.append((begin, info))
            i = _skip_hunks(lines, i + 2)
        else:
            i += 1
    sections = []
    for index, (begin, info) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        sections.append(
            _Section(
                file=_section_file(info),
                start=begin,
                end=end,
                text="".join(lines[begin:end]),
                names=list(dict.fromkeys(info["names"])),
                raw_names=info["raw"],
            )
        )
    preamble = "".join(lines[: starts[0][0]]) if starts else text
    return preamble, sections


def parse_patch(text: str) -> list[PatchFile]:
    """The files a patch touches, in order: git diffs (with renames, copies, modes) or plain
    unified diffs, quoted names included."""
    return [section.file for section in _parse(text)[1]]


def split_patch(patch: str) -> dict[str, str]:
    """Path -> that file's section text (sections for the same path are concatenated)."""
    result: dict[str, str] = {}
    for section in _parse(patch)[1]:
        result[section.file.path] = result.get(section.file.path, "") + _ended(section.text)
    return result


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


# --- safety ----------------------------------------------------------------------------------


def _name_problems(name: str) -> list[str]:
    if name.startswith("/"):
        return [f"{name}: absolute path; a patch may only touch files inside the repository"]
    parts = name.split("/")
    problems = []
    if ".." in parts:
        problems.append(f"{name}: path has a '..' component and could leave the repository")
    if any(part.lower() == ".git" for part in parts):
        problems.append(f"{name}: path is inside a .git directory")
    if "\x00" in name:
        problems.append(f"{name!r}: path contains a NUL byte")
    return problems


def _section_problems(section: _Section, symlinks: Collection[str]) -> list[str]:
    problems: list[str] = []
    for raw in section.raw_names:
        if raw.startswith("/") and raw != DEV_NULL:
            problems.append(
                f"{raw}: absolute path; a patch may only touch files inside the repository"
            )
    for name in section.names:
        problems += _name_problems(name)
    patch_file = section.file
    where = patch_file.path
    if patch_file.new_mode == SYMLINK_MODE:
        problems.append(f"{where}: patch creates a symbolic link (mode 120000)")
    if patch_file.new_mode == GITLINK_MODE:
        problems.append(f"{where}: patch creates or changes a submodule (mode 160000)")
    if patch_file.old_mode == SYMLINK_MODE and not patch_file.is_deleted:
        problems.append(f"{where}: patch changes a symbolic link")
    for name in section.names:
        if name in symlinks and not (patch_file.is_deleted and name == patch_file.old_path):
            problems.append(f"{name}: is a symbolic link in the repository; it may not be patched")
        parts = name.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in symlinks:
                problems.append(f"{name}: goes through the symbolic link {parent!r}")
                break
    return problems


def path_problems(text: str, *, symlinks: Collection[str]) -> list[str]:
    """Why ``text`` could touch something outside the repository ([] when it cannot).

    Refused: absolute paths, ``..`` components, paths in ``.git``, creating symbolic links or
    submodules, and patching a symbolic link of the tree or any path through one (``symlinks``
    are the tree's symbolic links, see :func:`.gitrepo.symlink_paths`). Deleting a
    symbolic link is allowed.
    """
    problems: list[str] = []
    for section in _parse(text)[1]:
        problems += _section_problems(section, symlinks)
    return list(dict.fromkeys(problems))
