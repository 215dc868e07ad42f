"""The one-pass object scan finds exactly the objects that hold an anchor, however it runs.

A real repository (loose and packed objects, an unreachable blob, a tag, a commit message
holding an anchor) is scanned with Hyperscan and with the ``bytes.find`` fallback, with one
and with several git processes, and with chunks and runs small enough that anchors straddle
chunk boundaries. Every way must agree with the objects git itself says hold each anchor.
"""

import os
import subprocess
from pathlib import Path

import pytest

from validators import objectscan
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


@pytest.mark.parametrize("fast", [True, False], ids=["hyperscan", "bytes.find"])
@pytest.mark.parametrize("streams,chunk,run", [(1, 1 << 20, 16 << 20), (3, 7, 300)])
def test_every_way_finds_exactly_the_objects_git_says_hold_an_anchor(
    repo, tmp_path, monkeypatch, fast, streams, chunk, run
):
    if not fast:  # a platform without the Hyperscan wheel
        monkeypatch.setattr(objectscan, "hyperscan", None)
    monkeypatch.setattr(objectscan, "CHUNK", chunk)
    monkeypatch.setattr(objectscan, "RUN", run)
    store = scan_objects(repo, tmp_path, ANCHORS, streams=streams)

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


def test_a_corrupt_object_is_named_unreadable_and_the_rest_is_still_scanned(tmp_path):
    repo = tmp_path / "repo"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "a.py").write_text("rounding_rule = HALF_UP\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    corrupt = repo / ".git" / "objects" / "12" / ("3" * 38)
    corrupt.parent.mkdir()
    corrupt.write_bytes(b"not zlib")

    store = scan_objects(repo, tmp_path, ANCHORS)

    assert store.types["12" + "3" * 38] == "unreadable"
    assert len(store.candidates) == 1


@pytest.mark.parametrize("fast", [True, False], ids=["hyperscan", "bytes.find"])
def test_an_anchor_in_any_letter_case_is_found_however_it_is_written(
    repo, tmp_path, monkeypatch, fast
):
    """A resolution lower-cased in a commit message is still found; an exact anchor is not
    found in another case."""
    if not fast:
        monkeypatch.setattr(objectscan, "hyperscan", None)
    monkeypatch.setattr(objectscan, "CHUNK", 5)
    holding = _truth(repo)[b"Ties round half-up"]
    assert holding
    assert scan_objects(repo, tmp_path, [(b"TIES ROUND HALF-UP", True)]).candidates == holding
    assert scan_objects(repo, tmp_path, [b"TIES ROUND HALF-UP"]).candidates == set()
