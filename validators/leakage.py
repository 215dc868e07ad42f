"""Commit-history leakage: build the repository an agent receives, and prove it leaks nothing.

SWE-bench agents were caught mining ``git log --all`` for the upstream fix; PRODUCT.md
("Structural invariants") therefore requires that the environment's repository holds no
remote, no ref but HEAD's branch, no reflog, no stash, notes or replace refs, no unreachable
objects and no commit newer than the base commit, and that neither the gold patch's added
lines, nor any resolution, nor text the setup patch removed can be recovered from any object.

:func:`sanitize` (in :mod:`validators.sanitize`, re-exported here with its constants)
produces that repository: the base commit's tree with the setup patch applied, as a single
orphan commit.

:func:`check_leakage` inspects a repository as shipped and returns one
:class:`~validators.results.CheckResult` per rule. It reads every object of the store once,
for all texts at a time (:mod:`validators.objectscan`: ``git cat-file`` streams, Hyperscan
searches), so it stays fast on repositories with tens of thousands of commits.

:func:`forbidden_texts` lists the texts that must not be recoverable.

Every git call follows :mod:`toolkit.gitrepo`'s conventions (explicit ``--git-dir``, no user
or system configuration, no replace objects, timeouts). Nothing here writes to the mirror.
"""

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.toolkit.gitrepo import git_dir, run_git
from validators.forbidden import (
    MIN_TEXT_LENGTH,
    Needle,
    by_anchor,
    forbidden_texts,
    needles_for,
    normalise,
    search_needles,
)
from validators.objectscan import scan_objects
from validators.results import FAILED, PASSED, SKIPPED, CheckResult
from validators.sanitize import BRANCH, COMMIT_MESSAGE, IDENTITY_EMAIL, IDENTITY_NAME, sanitize

__all__ = [
    "BRANCH",
    "COMMIT_MESSAGE",
    "IDENTITY_EMAIL",
    "IDENTITY_NAME",
    "MIN_TEXT_LENGTH",
    "RULES",
    "check_leakage",
    "forbidden_texts",
    "normalise",
    "sanitize",
]

SAMPLE = 5  # how many offending items a message names
MAX_DETAILS = 100  # how many offending items details list (counts are always complete)

RULES = (
    "no_remote",
    "only_head_refs",
    "no_reflog",
    "no_unreachable_objects",
    "no_newer_commits",
    "clean_work_tree",
    "no_forbidden_text",
)
MAX_FILE_BYTES = 64 * 1024 * 1024  # a file outside the object store larger than this is not read

_SPECIAL_HEAD = re.compile(r"^[A-Z_]*HEAD$")
_COMMITTER = re.compile(rb"^committer .*> (-?\d+) [+-]\d{4}$", re.M)
_TAGGER = re.compile(rb"^tagger .*> (-?\d+) [+-]\d{4}$", re.M)


# --- check -----------------------------------------------------------------------------------


@dataclass
class _Hit:
    label: str
    text: str
    oid: str  # the object, or "" for a file outside the object store
    object_type: str  # "blob", "commit"…, or "file"
    place: str = ""  # for a file: where it is (".git/COMMIT_EDITMSG", "work tree: x.py")


@dataclass
class _Scan:
    """What one pass over every object of the store found."""

    types: dict[str, str]  # oid -> type
    dates: dict[str, int]  # commit/tag oid -> committer/tagger timestamp
    hits: list[_Hit]
    seconds: float
    in_head: dict[str, str] = field(default_factory=dict)  # text -> a HEAD path holding it


def _head_tree(repo: Path, home: Path) -> dict[str, tuple[str, str]]:
    """path -> (type, oid) of every entry of HEAD's tree: what the agent is given to read."""
    result = run_git(repo, ["ls-tree", "-r", "-z", "HEAD"], home=home, check=False, timeout=600)
    if result.returncode != 0:
        return {}
    entries: dict[str, tuple[str, str]] = {}
    for record in result.stdout.split(b"\x00"):
        meta, _, path = record.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3:
            entries[path.decode("utf-8", "surrogateescape")] = (
                parts[1].decode(),
                parts[2].decode(),
            )
    return entries


def _blob_id(data: bytes, length: int) -> str:
    """The object id git gives ``data`` as a blob (SHA-1, or SHA-256 for 64-digit ids),
    computed here: ``git hash-object`` would run the repository's clean filters."""
    algorithm = hashlib.sha256 if length == 64 else hashlib.sha1
    return algorithm(b"blob %d\x00" % len(data) + data).hexdigest()


def _work_tree_extras(repo: Path, head: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """``(path, "untracked" | "modified")`` for every file of the work tree that is not HEAD's
    tree as committed (ignored files included), read without git (no hook, filter or
    fsmonitor of the repository runs). A bare repository has none."""
    length = len(next(iter(head.values()))[1]) if head else 40
    submodules = [path for path, (kind, _oid) in head.items() if kind == "commit"]
    extras = []
    for folder, dirs, files in os.walk(repo):
        relative_folder = Path(folder).relative_to(repo).as_posix()
        if relative_folder == ".":
            dirs[:] = [d for d in dirs if d != ".git"]
        dirs[:] = [
            d for d in dirs
            if (Path(relative_folder) / d).as_posix().removeprefix("./") not in submodules
            and not (Path(folder) / d).is_symlink()
        ]  # fmt: skip
        symlinked_dirs = [d for d in os.listdir(folder) if (Path(folder) / d).is_symlink()]
        for name in sorted({*files, *symlinked_dirs}):
            path = Path(folder) / name
            relative = path.relative_to(repo).as_posix()
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            entry = head.get(relative)
            if entry is None:
                extras.append((relative, "untracked"))
            elif entry[0] != "blob" or entry[1] not in {
                _blob_id(data, length),
                _blob_id(data.replace(b"\r\n", b"\n"), length),  # checked out with eol=crlf
            }:
                extras.append((relative, "modified"))
    return extras


def _file_hits(needles: list[Needle], places: list[tuple[str, Path]]) -> list[_Hit]:
    """Hits in files outside the object store: ``(place, path)`` pairs."""
    anchors = by_anchor(needles)
    hits = []
    for place, path in places:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            continue
        for needle in search_needles(anchors, path.read_bytes()):
            hits.append(_Hit(needle.label, needle.text, "", "file", place))
    return hits


# What ``git cat-file --batch-all-objects`` reads: loose objects and packs with their indexes.
_OBJECT_FILE = re.compile(
    r"^objects/(?:[0-9a-f]{2}/(?:[0-9a-f]{38}|[0-9a-f]{62})"
    r"|pack/pack-(?:[0-9a-f]{40}|[0-9a-f]{64})\.(?:pack|idx|rev|bitmap|mtimes))$"
)


def _git_files(gdir: Path) -> list[tuple[str, Path]]:
    """Every file of the git directory that is data the agent could read: not the objects
    and packs (scanned object by object) and not the index (HEAD's tree). Anything else
    under ``objects/`` — ``info/alternates``, a stray ``info/notes.txt``, a ``.keep`` — is
    read as a file like the rest."""
    places = []
    for path in sorted(gdir.rglob("*")):
        relative = path.relative_to(gdir).as_posix()
        if relative == "index" or _OBJECT_FILE.match(relative) or not path.is_file():
            continue
        places.append((f".git/{relative}", path))
    return places


def _check_work_tree(extras: list[tuple[str, str]], bare: bool) -> CheckResult:
    name = "clean_work_tree"
    if bare:
        return CheckResult(name, SKIPPED, "A bare repository has no work tree.")
    if extras:
        leaks = [f"{path} ({status})" for path, status in extras]
        message = "The work tree holds files that are not HEAD's tree: " + _listing(leaks) + "."
        return CheckResult(name, FAILED, message, {"files": [p for p, _ in extras][:MAX_DETAILS]})
    return CheckResult(name, PASSED, "The work tree is exactly HEAD's tree.")


def _scan(repo: Path, home: Path, needles: list[Needle], head: dict[str, str]) -> _Scan:
    """One pass over every object of the store (``validators.objectscan``: git streams it
    into ``grep -F`` for the needles' anchors; only the objects holding one, and the commits
    and tags, reach Python), then each needle's exact pattern on those. A blob of HEAD's tree
    (``head``) is what the agent is given: a patch line found there is not distinctive and
    is not reported anywhere; a resolution found there is (the answer is in plain sight).
    """
    started = time.monotonic()
    anchors = by_anchor(needles)
    store = scan_objects(repo, home, anchors)
    scan = _Scan(types=store.types, dates={}, hits=[], seconds=0.0)
    for oid, data in store.content.items():
        object_type = store.types.get(oid, "blob")
        if object_type in ("commit", "tag"):
            found = (_COMMITTER if object_type == "commit" else _TAGGER).search(
                data.split(b"\n\n", 1)[0]
            )
            if found:
                scan.dates[oid] = int(found.group(1))
    for oid in sorted(store.candidates):
        object_type = store.types.get(oid, "blob")
        for needle in search_needles(anchors, store.content[oid]):
            if oid in head and not needle.sentence:
                scan.in_head.setdefault(needle.text, head[oid])
            else:
                scan.hits.append(_Hit(needle.label, needle.text, oid, object_type))
    # A line the agent is given in HEAD's tree is not distinctive anywhere else either.
    scan.hits = [hit for hit in scan.hits if hit.text not in scan.in_head]
    scan.seconds = time.monotonic() - started
    return scan


def _refs(repo: Path, home: Path) -> list[tuple[str, str, str]]:
    """``(refname, oid, peeled commit or "")`` for every ref (loose and packed)."""
    output = run_git(
        repo,
        ["for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)"],
        home=home,
    ).stdout.decode("utf-8", "surrogateescape")
    return [tuple(line.split("\x00")) for line in output.splitlines() if line]  # type: ignore[misc]


def _describe_ref(refname: str) -> str:
    """A ref as a person names it: 'branch "x"', 'tag "v2"', 'note ref ...', 'the stash'."""
    for prefix, kind in (
        ("refs/heads/", "branch"),
        ("refs/tags/", "tag"),
        ("refs/remotes/", "remote-tracking ref"),
        ("refs/notes/", "notes ref"),
        ("refs/replace/", "replace ref"),
    ):
        if refname.startswith(prefix):
            return f'{kind} "{refname[len(prefix) :]}"'
    if refname == "refs/stash":
        return "the stash (refs/stash)"
    return f'ref "{refname}"'


def _listing(items: Sequence[str]) -> str:
    shown = "; ".join(items[:SAMPLE])
    more = len(items) - SAMPLE
    return shown + (f"; and {more} more" if more > 0 else "")


def _check_remote(repo: Path, home: Path, refs) -> CheckResult:
    config = run_git(
        repo, ["config", "--local", "--get-regexp", r"^remote\."], home=home, check=False
    ).stdout.decode("utf-8", "replace")
    keys = [line.split(" ", 1)[0] for line in config.splitlines()]
    remotes = sorted({key[len("remote.") : key.rfind(".")] for key in keys if key.count(".") >= 2})
    tracking = [name for name, _oid, _peeled in refs if name.startswith("refs/remotes/")]
    leaks = [f'remote "{name}" is configured' for name in remotes]
    leaks += [f"{_describe_ref(name)} ({name}) exists" for name in tracking]
    if leaks:
        message = "The repository knows about another repository: " + _listing(leaks) + "."
        details = {"remotes": remotes, "remote_refs": tracking}
        return CheckResult("no_remote", FAILED, message, details)
    return CheckResult("no_remote", PASSED, "No remote is configured and no remote-tracking ref.")


def _check_refs(gdir: Path, head_ref: str | None, refs) -> CheckResult:
    extra = [
        name
        for name, _oid, _peeled in refs
        if name != head_ref and not name.startswith("refs/remotes/")
    ]
    # Pseudo-refs such as ORIG_HEAD or FETCH_HEAD name commits outside HEAD's history too.
    pseudo = sorted(
        path.name for path in gdir.iterdir() if path.is_file() and _SPECIAL_HEAD.match(path.name)
    )
    pseudo = [name for name in pseudo if name != "HEAD"]
    leaks = [f"{_describe_ref(name)} ({name})" for name in extra] + [
        f"pseudo-ref {name}" for name in pseudo
    ]
    if leaks:
        message = f"Refs besides HEAD's branch ({head_ref or 'detached HEAD'}): " + _listing(leaks)
        return CheckResult(
            "only_head_refs", FAILED, message + ".", {"refs": extra, "pseudo_refs": pseudo}
        )
    return CheckResult("only_head_refs", PASSED, f"The only ref is HEAD's branch ({head_ref}).")


def _check_reflog(gdir: Path) -> CheckResult:
    """Reflog entries live in ``logs/`` (files backend): any line there is an old ref value."""
    entries: dict[str, int] = {}
    logs = gdir / "logs"
    if logs.is_dir():
        for path in sorted(logs.rglob("*")):
            if path.is_file():
                count = sum(1 for line in path.read_bytes().splitlines() if line.strip())
                if count:
                    entries[path.relative_to(logs).as_posix()] = count
    if entries:
        leaks = [
            f"{count} entr{'y' if count == 1 else 'ies'} for {name}"
            for name, count in entries.items()
        ]
        message = "The reflog keeps old ref values: " + _listing(leaks) + "."
        return CheckResult("no_reflog", FAILED, message, {"reflogs": entries})
    return CheckResult("no_reflog", PASSED, "There is no reflog entry.")


def _reachable_from_head(repo: Path, home: Path) -> dict[str, str]:
    """oid -> path ("" for commits and root trees) of every object reachable from HEAD."""
    args = ["rev-list", "--objects", "HEAD", "--"]
    result = run_git(repo, args, home=home, check=False, timeout=600)
    if result.returncode != 0:  # no HEAD commit: nothing is reachable
        return {}
    reachable = {}
    for line in result.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, path = line.partition(" ")
        reachable[oid] = path
    return reachable


def _check_unreachable(gdir: Path, scan: _Scan, reachable: dict[str, str], refs) -> CheckResult:
    """Every object must be reachable from HEAD: anything else is history the agent can read.

    Objects that a ref points at are named with the ref, so the message says where they hang.
    """
    tips: dict[str, list[str]] = {}
    for refname, oid, _peeled in refs:
        tips.setdefault(oid, []).append(_describe_ref(refname))
    # Ref tips first: they say the most about where the rest comes from.
    unreachable = sorted(
        (oid for oid in scan.types if oid not in reachable), key=lambda oid: (oid not in tips, oid)
    )
    alternates = gdir / "objects" / "info" / "alternates"
    borrowed = alternates.is_file() and alternates.read_text(errors="replace").strip()
    details = {
        "objects": len(scan.types),
        "reachable_from_head": len(reachable),
        "unreachable": unreachable[:MAX_DETAILS],
    }
    if unreachable or borrowed:
        leaks = [
            f"{scan.types[oid]} {oid}"
            + (f" (tip of {', '.join(tips[oid])})" if oid in tips else "")
            for oid in unreachable
        ]
        message = (
            f"{len(unreachable)} of {len(scan.types)} objects are not reachable from HEAD: "
            + _listing(leaks)
            + "."
        )
        if borrowed:
            message += f" objects/info/alternates borrows objects from {borrowed!r}."
            details["alternates"] = borrowed
        return CheckResult("no_unreachable_objects", FAILED, message.lstrip(), details)
    return CheckResult(
        "no_unreachable_objects",
        PASSED,
        f"All {len(scan.types)} objects are reachable from HEAD.",
        details,
    )


def _check_newer(
    repo: Path, home: Path, base_commit: str | None, base_date: int | None, scan: _Scan, refs
) -> CheckResult:
    name = "no_newer_commits"
    reference, source = None, ""
    if base_date is not None:
        reference, source = base_date, "base commit's date"
    if reference is None and base_commit:
        args = ["rev-parse", "--verify", "-q", "--end-of-options", f"{base_commit}^{{commit}}"]
        found = run_git(repo, args, home=home, check=False)
        if found.returncode == 0:
            oid = found.stdout.decode().strip()
            reference, source = scan.dates.get(oid), f"base commit {oid[:12]}"
    if reference is None:
        args = ["rev-parse", "--verify", "-q", "HEAD^{commit}"]
        head = run_git(repo, args, home=home, check=False)
        if head.returncode == 0:
            oid = head.stdout.decode().strip()
            # A sanitized repository's single commit carries the base commit's date.
            reference, source = scan.dates.get(oid), f"HEAD {oid[:12]} (carries the base date)"
    if reference is None:
        return CheckResult(name, SKIPPED, "No base commit and no HEAD commit to compare with.")
    newer = {oid for oid, date in scan.dates.items() if date > reference}
    details = {
        "reference": source,
        "reference_date": reference,
        "newer": sorted(newer)[:MAX_DETAILS],
    }
    if not newer:
        return CheckResult(name, PASSED, f"No commit or tag is newer than the {source}.", details)
    leaks = []
    for refname, oid, peeled in refs:
        tip = peeled or oid
        if tip in newer or oid in newer:
            leaks.append(f"{_describe_ref(refname)} points at a commit newer than the {source}")
    at_tips = {peeled or oid for _name, oid, peeled in refs} | {oid for _n, oid, _p in refs}
    inner = sorted(newer - at_tips, key=lambda oid: -scan.dates[oid])
    for oid in inner[:SAMPLE]:
        args = ["for-each-ref", "--format=%(refname)", "--contains", oid]
        containing = run_git(repo, args, home=home, check=False).stdout.decode().split()
        where = f"reachable from {', '.join(containing)}" if containing else "in the object store"
        leaks.append(f"{scan.types.get(oid, 'object')} {oid[:12]} is newer ({where})")
    message = f"{len(newer)} commit(s)/tag(s) are newer than the {source}: {_listing(leaks)}."
    return CheckResult(name, FAILED, message, details)


def _where(hit: _Hit, reachable: dict[str, str], head_oids: dict[str, str]) -> str:
    if hit.object_type == "file":
        return f"in {hit.place}"
    where = f"in {hit.object_type} {hit.oid[:12]}"
    if hit.oid in head_oids:
        return f'{where} at "{head_oids[hit.oid]}" in HEAD\'s tree (the agent reads it)'
    path = reachable.get(hit.oid)
    if path:
        return f'{where} at "{path}" in HEAD\'s history'
    return f"{where} {'reachable from HEAD' if hit.oid in reachable else 'not reachable from HEAD'}"


def _check_text(
    scan: _Scan,
    reachable: dict[str, str],
    skipped: list[dict],
    searched: int,
    head_oids: dict[str, str],
) -> CheckResult:
    name = "no_forbidden_text"
    details = {
        "objects_scanned": len(scan.types),
        "texts_searched": searched,
        "texts_skipped_too_short": skipped,
        # Patch lines the agent is given in HEAD's tree anyway: not distinctive, not searched.
        "texts_in_head_tree": dict(list(scan.in_head.items())[:MAX_DETAILS]),
        "seconds": round(scan.seconds, 3),
        "leaks": [],
    }
    note = (
        f" ({len(skipped)} text(s) shorter than {MIN_TEXT_LENGTH} characters were not searched:"
        " too generic)"
        if skipped
        else ""
    )
    if not scan.hits:
        return CheckResult(
            name,
            PASSED,
            f"None of {searched} forbidden texts is in any of {len(scan.types)} objects, in "
            f"the git directory's files or in the work tree outside HEAD's tree{note}.",
            details,
        )
    leaks = []
    for hit in scan.hits:
        excerpt = hit.text if len(hit.text) <= 60 else hit.text[:57] + "..."
        leaks.append(f'{hit.label} ("{excerpt}") is {_where(hit, reachable, head_oids)}')
        if len(details["leaks"]) < MAX_DETAILS:
            details["leaks"].append(
                {
                    "label": hit.label,
                    "text": hit.text,
                    "object": hit.oid or None,
                    "type": hit.object_type,
                    "place": hit.place or reachable.get(hit.oid) or None,
                    "in_head_tree": hit.oid in head_oids,
                    "reachable_from_head": hit.oid in reachable,
                }
            )
    labels = sorted({hit.label for hit in scan.hits})
    details["leak_count"] = len(scan.hits)
    details["texts_found"] = sorted({hit.text for hit in scan.hits})
    details["objects_by_label"] = {
        label: sum(1 for hit in scan.hits if hit.label == label) for label in labels
    }
    message = f"Forbidden text is recoverable ({', '.join(labels)}): {_listing(leaks)}{note}."
    return CheckResult(name, FAILED, message, details)


def check_leakage(
    *,
    repo: Path,
    base_commit: str | None = None,
    forbidden: Iterable[tuple[str, str]] = (),
    base_date: int | None = None,
) -> list[CheckResult]:
    """One CheckResult per rule in RULES for the repository ``repo`` (bare or with work tree).

    ``forbidden`` holds ``(label, text)`` pairs (see :func:`forbidden_texts`). A text is a
    leak where it is in something other than HEAD's tree — history, other refs, unreachable
    objects, the git directory's files (``COMMIT_EDITMSG``, ``FETCH_HEAD``, config, hooks,
    logs…), the work tree's untracked, ignored or modified files — and a patch line that
    HEAD's tree holds is no leak anywhere (the agent is given it). ``base_date`` (or
    ``base_commit``, when the repository holds it; else HEAD's commit, which a sanitized
    repository dates at the base) dates "newer".

    Only the repository's own configuration is read (``git config --local``): what ships is
    the directory, not whoever inspects it. Replace refs are reported, never followed, and
    no git command that could run a hook, a filter or an fsmonitor of the repository is used.
    """
    repo = Path(repo)
    gdir = git_dir(repo)
    bare = gdir == repo.resolve()
    needles, skipped = needles_for(forbidden)
    with tempfile.TemporaryDirectory(prefix="hilbench-leakage-") as scratch:
        home = Path(scratch)
        refs = _refs(repo, home)
        symbolic = run_git(repo, ["symbolic-ref", "-q", "HEAD"], home=home, check=False)
        head_ref = (symbolic.stdout.decode().strip() or None) if symbolic.returncode == 0 else None
        head = _head_tree(repo, home)
        head_oids = {oid: path for path, (kind, oid) in head.items() if kind == "blob"}
        with ThreadPoolExecutor(max_workers=1) as pool:  # walking HEAD's history meanwhile
            reaching = pool.submit(_reachable_from_head, repo, home)
            scan = _scan(repo, home, needles, head_oids)
            reachable = reaching.result()
        extras = [] if bare else _work_tree_extras(repo, head)
        places = _git_files(gdir) + [
            (f"work tree: {path} ({status})", repo / path) for path, status in extras
        ]
        outside = [h for h in _file_hits(needles, places) if h.text not in scan.in_head]
        scan.hits.extend(outside)
        return [
            _check_remote(repo, home, refs),
            _check_refs(gdir, head_ref, refs),
            _check_reflog(gdir),
            _check_unreachable(gdir, scan, reachable, refs),
            _check_newer(repo, home, base_commit, base_date, scan, refs),
            _check_work_tree(extras, bare),
            _check_text(scan, reachable, skipped, len(needles), head_oids),
        ]
