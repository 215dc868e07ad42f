"""The one-pass object scan finds exactly the objects that hold an anchor, however it runs.

A real repository (loose and packed objects, an unreachable blob, a tag, a commit message
holding an anchor) is scanned in process with libgit2 and through ``git cat-file`` streams,
with Hyperscan and with the ``bytes.find`` fallback, with one and with several processes,
and with chunks and runs small enough that anchors straddle chunk boundaries. Every way must
agree with the objects git itself says hold each anchor.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from hilbench_annotate.errors import DomainError
from validators import objectread, objectscan, packindex
from validators.objectscan import scan_objects

ANCHORS = [b"rounding_rule = HALF_UP", b"Ties round half-up", b"never-present-anchor-text"]


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env |= {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, env=env, check=True, capture_output=True
    ).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("scan") / "repo"
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    for number in range(12):
        body = "".join(f"value_{number}_{line} = {line * number}\n" for line in range(400))
        if number in (3, 4):
            body += "rounding_rule = HALF_UP\n"
        (repo / f"module_{number % 3}.py").write_text(body)
        _git(repo, "add", "-A")
        message = "Ties round half-up from now on" if number == 7 else f"Change {number}"
        _git(repo, "commit", "-q", "-m", message)
        if number == 5:
            _git(repo, "gc", "-q")  # the rest stays loose: both kinds of store are read
    _git(repo, "tag", "-a", "v1", "-m", "release")
    _git(repo, "hash-object", "-w", "--stdin", stdin=b"orphan: rounding_rule = HALF_UP\n")
    return repo


def _truth(repo: Path) -> dict[bytes, set[str]]:
    """For each anchor, the objects holding it, as git's own stream says."""
    stream = _git(repo, "cat-file", "--batch-all-objects", "--batch")
    truth: dict[bytes, set[str]] = {anchor: set() for anchor in ANCHORS}
    position = 0
    while position < len(stream):
        end = stream.index(b"\n", position)
        oid, kind, size = stream[position:end].split()
        data = stream[end + 1 : end + 1 + int(size)]
        position = end + 1 + int(size) + 1
        for anchor in ANCHORS:
            if kind != b"tree" and anchor in data:
                truth[anchor].add(oid.decode())
    return truth


@pytest.mark.parametrize("in_process", [True, False], ids=["libgit2", "cat-file"])
@pytest.mark.parametrize("fast", [True, False], ids=["hyperscan", "bytes.find"])
@pytest.mark.parametrize("streams,chunk,run", [(1, 1 << 20, 16 << 20), (3, 7, 300)])
def test_every_way_finds_exactly_the_objects_git_says_hold_an_anchor(
    repo, tmp_path, monkeypatch, in_process, fast, streams, chunk, run
):
    if not fast:  # a platform without the Hyperscan wheel
        monkeypatch.setattr(objectscan, "hyperscan", None)
    monkeypatch.setattr(objectscan, "CHUNK", chunk)
    monkeypatch.setattr(objectscan, "RUN", run)
    store = scan_objects(repo, tmp_path, ANCHORS, streams=streams, in_process=in_process)

    _assert_exact(repo, store, fast)


def _assert_exact(repo: Path, store, fast: bool = True) -> None:
    truth = _truth(repo)
    assert store.fast is fast
    assert store.candidates == set().union(*truth.values())
    assert truth[b"rounding_rule = HALF_UP"]  # blobs, the loose orphan among them
    assert truth[b"Ties round half-up"]  # a commit message
    for oid in store.candidates:
        assert any(anchor in store.content[oid] for anchor in ANCHORS)
    listed = _git(repo, "cat-file", "--batch-all-objects", "--batch-check").decode().split()
    assert store.types == dict(zip(listed[0::3], listed[1::3], strict=True))
    commits = {oid for oid, kind in store.types.items() if kind in ("commit", "tag")}
    assert commits <= store.content.keys()
    for oid in commits:
        assert store.content[oid] == _git(repo, "cat-file", store.types[oid], oid)


@pytest.mark.parametrize("in_process", [True, False], ids=["libgit2", "cat-file"])
def test_a_corrupt_object_is_named_unreadable_and_the_rest_is_still_scanned(tmp_path, in_process):
    repo = tmp_path / "repo"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "a.py").write_text("rounding_rule = HALF_UP\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    corrupt = repo / ".git" / "objects" / "12" / ("3" * 38)
    corrupt.parent.mkdir()
    corrupt.write_bytes(b"not zlib")

    store = scan_objects(repo, tmp_path, ANCHORS, in_process=in_process)

    assert store.types["12" + "3" * 38] == "unreadable"
    assert len(store.candidates) == 1


@pytest.mark.parametrize("in_process", [True, False], ids=["libgit2", "cat-file"])
@pytest.mark.parametrize("fast", [True, False], ids=["hyperscan", "bytes.find"])
def test_an_anchor_in_any_letter_case_is_found_however_it_is_written(
    repo, tmp_path, monkeypatch, fast, in_process
):
    """A resolution lower-cased in a commit message is still found; an exact anchor is not
    found in another case."""
    if not fast:
        monkeypatch.setattr(objectscan, "hyperscan", None)
    monkeypatch.setattr(objectscan, "CHUNK", 5)
    holding = _truth(repo)[b"Ties round half-up"]
    assert holding
    caseless = scan_objects(repo, tmp_path, [(b"TIES ROUND HALF-UP", True)], in_process=in_process)
    assert caseless.candidates == holding
    exact = scan_objects(repo, tmp_path, [b"TIES ROUND HALF-UP"], in_process=in_process)
    assert exact.candidates == set()


def test_runs_a_helper_took_and_never_reported_are_read_by_the_caller(repo, tmp_path, monkeypatch):
    """A helper that dies after taking some runs (here: three, then exit 1) loses nothing."""
    took = tmp_path / "took"
    script = tmp_path / "dying_helper.py"
    script.write_text(
        "import marshal, os, sys\n"
        "request = marshal.loads(sys.stdin.buffer.read())\n"
        f"open({str(took)!r}, 'wb').write(os.read(request[2], 3))\n"
        "sys.exit(1)\n"
    )
    monkeypatch.setattr(objectread, "__file__", str(script))
    monkeypatch.setattr(objectread, "RUNS", 8)
    scan_share = objectread.scan_share

    def late_share(*args):  # the helper takes its runs before this process takes any
        time.sleep(1)
        return scan_share(*args)

    monkeypatch.setattr(objectread, "scan_share", late_share)

    store = scan_objects(repo, tmp_path, ANCHORS, streams=2, in_process=True)

    assert len(took.read_bytes()) == 3
    _assert_exact(repo, store)


def test_a_helper_that_lists_other_objects_stops_the_scan(repo, tmp_path, monkeypatch):
    """Two processes that saw different stores (it changed meanwhile) would each miss what
    the other read: the scan says so instead of answering."""
    script = tmp_path / "other_store_helper.py"
    script.write_text(
        "import marshal, sys\n"
        "sys.stdin.buffer.read()\n"
        "sys.stdout.buffer.write(marshal.dumps(('another listing', ({}, {}, set(), []))))\n"
    )
    monkeypatch.setattr(objectread, "__file__", str(script))

    with pytest.raises(DomainError, match="changed while it was being read"):
        scan_objects(repo, tmp_path, ANCHORS, streams=2, in_process=True)


@pytest.mark.parametrize("offsets", [True, False], ids=["ofs-delta", "ref-delta"])
def test_pack_index_types_agree_with_git_for_every_packed_object(tmp_path, offsets):
    """Types read from the pack's index and entry headers (deltas followed to their base)
    are git's own; a loose object is left to libgit2 (0)."""
    repo = tmp_path / "repo"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    for number in range(30):  # versions of one file: long delta chains
        body = "".join(f"line {line} of a file that changes a little\n" for line in range(300))
        (repo / "a.txt").write_text(body + f"version {number}\n")
        (repo / "dir").mkdir(exist_ok=True)
        (repo / "dir" / "b.txt").write_text(body[: 40 * (number + 1)])
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"version {number}")
    _git(repo, "tag", "-a", "v1", "-m", "release")
    delta_base = "true" if offsets else "false"
    _git(repo, "-c", f"repack.useDeltaBaseOffset={delta_base}", "repack", "-adf", "-q")
    loose = _git(repo, "hash-object", "-w", "--stdin", stdin=b"loose\n").decode().strip()
    listed = _git(repo, "cat-file", "--batch-all-objects", "--batch-check").decode().split()
    truth = dict(zip(listed[0::3], listed[1::3], strict=True))
    verified = _git(
        repo, "verify-pack", "-v", *map(str, (repo / ".git/objects/pack").glob("*.idx"))
    )
    assert b" delta " in verified or b"chain length" in verified  # there are deltas to follow

    ids = b"".join(bytes.fromhex(oid) for oid in truth)
    codes = packindex.listing_types(repo / ".git" / "objects", ids)

    names = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
    found = {oid: names.get(code) for oid, code in zip(truth, codes, strict=True)}
    assert found[loose] is None
    del found[loose], truth[loose]
    assert found == truth


def test_a_crafted_pack_index_is_not_read_here_and_the_scan_goes_on(tmp_path):
    """An index whose offset names an 8-byte entry past its table (or past its pack): this
    module gives no types for it (the reader asks libgit2), it does not crash the check."""
    repo = tmp_path / "repo"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "a.txt").write_text("a line\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    _git(repo, "repack", "-adq")
    (idx,) = (repo / ".git/objects/pack").glob("*.idx")
    data = bytearray(idx.read_bytes())
    count = int.from_bytes(data[8 + 255 * 4 : 8 + 256 * 4], "big")
    first_offset = 8 + 256 * 4 + count * 20 + count * 4
    data[first_offset : first_offset + 4] = (0x80000000 | 1000).to_bytes(4, "big")
    idx.chmod(0o644)
    idx.write_bytes(bytes(data))
    ids, types = packindex.pack_types(idx)
    assert len(ids) == 0 and len(types) == 0
