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
:class:`~validators.results.CheckResult` per rule. It reads every object of the store in one
streaming ``git cat-file --batch-all-objects --batch`` pass (git decompresses; Python only
looks for a few substrings per object), so it stays fast on repositories with tens of
thousands of commits.

:func:`forbidden_texts` lists the texts that must not be recoverable.

Every git call follows :mod:`toolkit.gitrepo`'s conventions (explicit ``--git-dir``, no user
or system configuration, no replace objects, timeouts). Nothing here writes to the mirror.
"""

import keyword
import re
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import git_dir, git_env, run_git
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

MIN_TEXT_LENGTH = 12  # normalised characters; shorter texts are too generic to search for
SCAN_TIMEOUT = 900  # seconds for the streaming pass over every object
SAMPLE = 5  # how many offending items a message names
MAX_DETAILS = 100  # how many offending items details list (counts are always complete)

RULES = (
    "no_remote",
    "only_head_refs",
    "no_reflog",
    "no_unreachable_objects",
    "no_newer_commits",
    "no_forbidden_text",
)

# Words that carry no information on their own: a line made only of these and punctuation
# ("} else {", "return None", "pass") says nothing about the fix and matches everywhere.
_GENERIC_WORDS = """
    self cls this null nil undefined true false none void var let const func function fn end
    then do done fi case switch default break continue public private protected static final
    new int str bool float string object super throw throws catch begin endif elsif unless
    until go defer"""
_TRIVIAL_WORDS = {word.lower() for word in keyword.kwlist + keyword.softkwlist}
_TRIVIAL_WORDS |= set(_GENERIC_WORDS.split())
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_WHITESPACE = re.compile(r"\s+")
_SPECIAL_HEAD = re.compile(r"^[A-Z_]*HEAD$")
_COMMITTER = re.compile(rb"^committer .*> (-?\d+) [+-]\d{4}$", re.M)
_TAGGER = re.compile(rb"^tagger .*> (-?\d+) [+-]\d{4}$", re.M)


# --- forbidden texts -------------------------------------------------------------------------


def normalise(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space, ends stripped.

    Matching normalised text makes a leak survive re-indentation or re-wrapping.
    """
    return _WHITESPACE.sub(" ", text).strip()


def _is_trivial(line: str) -> bool:
    """Too short, or only punctuation and keywords: searching for it would flag every repo."""
    if len(normalise(line)) < MIN_TEXT_LENGTH:
        return True
    return not any(word.lower() not in _TRIVIAL_WORDS for word in _WORD.findall(line))


def _patch_lines(patch: str, sign: str) -> list[str]:
    """Lines a unified diff adds (``sign="+"``) or removes (``"-"``), without file headers."""
    header = sign * 3
    lines = []
    for line in patch.splitlines():
        if line.startswith(sign) and not line.startswith(header):
            lines.append(line[1:].strip())
    return lines


def forbidden_texts(
    *, gold_patch: str, setup_patch: str, resolutions: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``(label, text)`` pairs that must not be recoverable from the shipped repository.

    * every non-trivial line the gold patch adds ("gold patch added line"): the answer;
    * every resolution ("resolution of <id>"): what the agent must ask a human for;
    * every non-trivial line the setup patch removes ("text the setup patch removed"): the
      information the setup patch hid on purpose.

    Lines are stripped; trivial ones (shorter than MIN_TEXT_LENGTH, or only punctuation and
    keywords) are dropped because they would match any repository. Texts are deduplicated on
    their normalised form, the first label winning. Resolutions are kept whatever their
    length: :func:`check_leakage` reports (rather than silently drops) those too short to search.
    """
    candidates: list[tuple[str, str]] = []
    candidates += [("gold patch added line", line) for line in _patch_lines(gold_patch, "+")]
    candidates += [(f"resolution of {rid}", text.strip()) for rid, text in resolutions]
    candidates += [
        ("text the setup patch removed", line) for line in _patch_lines(setup_patch, "-")
    ]
    seen: set[str] = set()
    result = []
    for label, text in candidates:
        key = normalise(text)
        if not key or key in seen:
            continue
        if not label.startswith("resolution of ") and _is_trivial(text):
            continue
        seen.add(key)
        result.append((label, text))
    return result


@dataclass(frozen=True)
class _Needle:
    label: str
    text: str  # normalised
    anchor: bytes  # longest whitespace-free run: a fast C substring test before the regex
    pattern: re.Pattern  # the text with each whitespace run matching any whitespace run


def _needles(forbidden: Iterable[tuple[str, str]]) -> tuple[list[_Needle], list[dict]]:
    needles, skipped = [], []
    for label, text in forbidden:
        key = normalise(text)
        if len(key) < MIN_TEXT_LENGTH:
            skipped.append({"label": label, "text": key})
            continue
        tokens = [token.encode("utf-8") for token in key.split(" ")]
        pattern = re.compile(rb"\s+".join(re.escape(token) for token in tokens))
        needles.append(_Needle(label, key, max(tokens, key=len), pattern))
    return needles, skipped


# --- check -----------------------------------------------------------------------------------


@dataclass
class _Hit:
    label: str
    text: str
    oid: str
    object_type: str


@dataclass
class _Scan:
    """What one pass over every object of the store found."""

    types: dict[str, str]  # oid -> type
    dates: dict[str, int]  # commit/tag oid -> committer/tagger timestamp
    hits: list[_Hit]
    seconds: float


def _scan(repo: Path, home: Path, needles: list[_Needle]) -> _Scan:
    """Stream every object (loose, packed, alternates) once through ``cat-file --batch``.

    Per object, each needle's anchor is looked for with ``bytes.__contains__`` (C speed); the
    whitespace-tolerant regex only runs on the few objects whose content holds an anchor.
    Trees are read (the stream must be consumed) but not searched: they only hold names.
    """
    started = time.monotonic()
    command = [
        "git",
        f"--git-dir={git_dir(repo)}",
        "cat-file",
        "--batch-all-objects",
        "--unordered",
        "--batch",
    ]
    types: dict[str, str] = {}
    dates: dict[str, int] = {}
    hits: list[_Hit] = []
    anchors: dict[bytes, list[_Needle]] = {}
    for needle in needles:
        anchors.setdefault(needle.anchor, []).append(needle)
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=git_env(home),
        cwd=home,
    )
    try:
        stream = process.stdout
        assert stream is not None
        while True:
            header = stream.readline()
            if not header:
                break
            oid_bytes, type_bytes, size = header.split()
            data = stream.read(int(size) + 1)[:-1]
            oid, object_type = oid_bytes.decode(), type_bytes.decode()
            types[oid] = object_type
            if time.monotonic() - started > SCAN_TIMEOUT:
                raise DomainError(f"Reading every object took longer than {SCAN_TIMEOUT} s.")
            if object_type == "tree":
                continue
            if object_type in ("commit", "tag"):
                head = data.split(b"\n\n", 1)[0]
                found = (_COMMITTER if object_type == "commit" else _TAGGER).search(head)
                if found:
                    dates[oid] = int(found.group(1))
            for anchor, group in anchors.items():
                if anchor in data:
                    for needle in group:
                        if needle.pattern.search(data):
                            hits.append(_Hit(needle.label, needle.text, oid, object_type))
        process.wait(timeout=60)
        if process.returncode != 0:
            message = process.stderr.read().decode("utf-8", "replace").strip()
            raise DomainError(f"git cat-file failed: {message}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe:
                pipe.close()
    return _Scan(types, dates, hits, time.monotonic() - started)


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


def _check_newer(repo: Path, home: Path, base_commit: str | None, scan: _Scan, refs) -> CheckResult:
    name = "no_newer_commits"
    reference, source = None, ""
    if base_commit:
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


def _check_text(
    scan: _Scan, reachable: dict[str, str], skipped: list[dict], searched: int
) -> CheckResult:
    name = "no_forbidden_text"
    details = {
        "objects_scanned": len(scan.types),
        "texts_searched": searched,
        "texts_skipped_too_short": skipped,
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
            f"None of {searched} forbidden texts is in any of {len(scan.types)} objects{note}.",
            details,
        )
    leaks = []
    for hit in scan.hits:
        path = reachable.get(hit.oid)
        if path:
            where = f'at "{path}" in HEAD\'s history'
        elif hit.oid in reachable:
            where = "reachable from HEAD"
        else:
            where = "not reachable from HEAD"
        excerpt = hit.text if len(hit.text) <= 60 else hit.text[:57] + "..."
        leaks.append(f'{hit.label} ("{excerpt}") is in {hit.object_type} {hit.oid[:12]} {where}')
        if len(details["leaks"]) < MAX_DETAILS:
            details["leaks"].append(
                {
                    "label": hit.label,
                    "text": hit.text,
                    "object": hit.oid,
                    "type": hit.object_type,
                    "path": path or None,
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
) -> list[CheckResult]:
    """One CheckResult per rule in RULES for the repository ``repo`` (bare or with work tree).

    ``forbidden`` holds ``(label, text)`` pairs (see :func:`forbidden_texts`). ``base_commit``
    dates "newer": when it is absent from ``repo`` (always, for a sanitized repository) HEAD's
    commit is the reference, since a sanitized HEAD carries the base commit's date.

    Only the repository's own configuration is read (``git config --local``): what ships is
    the directory, not whoever inspects it. Replace refs are reported, never followed.
    """
    repo = Path(repo)
    gdir = git_dir(repo)
    needles, skipped = _needles(forbidden)
    with tempfile.TemporaryDirectory(prefix="hilbench-leakage-") as scratch:
        home = Path(scratch)
        refs = _refs(repo, home)
        symbolic = run_git(repo, ["symbolic-ref", "-q", "HEAD"], home=home, check=False)
        head_ref = (symbolic.stdout.decode().strip() or None) if symbolic.returncode == 0 else None
        scan = _scan(repo, home, needles)
        reachable = _reachable_from_head(repo, home)
        return [
            _check_remote(repo, home, refs),
            _check_refs(gdir, head_ref, refs),
            _check_reflog(gdir),
            _check_unreachable(gdir, scan, reachable, refs),
            _check_newer(repo, home, base_commit, scan, refs),
            _check_text(scan, reachable, skipped, len(needles)),
        ]
