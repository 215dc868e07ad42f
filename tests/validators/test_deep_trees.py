"""Issue 24, item 3: the trees a sandbox writes are walked and removed without recursing, so a
folder 1,200 levels deep (more than Python's recursion limit) stops neither, nor does a
folder its owner closed, and neither follows a symbolic link out of the tree."""

import os
from pathlib import Path

import pytest

from hilbench_annotate.toolkit.trees import files_under, own_tree, remove_tree, walk
from validators.sandbox import checkout

from .gitutil import git

DEPTH = 1200


@pytest.fixture(autouse=True)
def _deep_trees_removed(tmp_path):
    """pytest removes its old temporary folders with ``shutil.rmtree``, which these stop."""
    yield
    for path in tmp_path.iterdir():
        remove_tree(path)


def deep_folder(root: Path, depth: int = DEPTH) -> None:
    """``root/d/d/…/d/leaf.txt``, made one level at a time through fds (a path that long
    is past what the shell's ``mkdir -p`` or ``Path.mkdir`` would do in one call)."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def test_a_deep_folder_is_walked_and_removed(tmp_path):
    root = tmp_path / "tree"
    deep_folder(root)
    (root / "top.txt").write_text("x")
    with pytest.raises(RecursionError):  # what the standard library does with it
        list(root.rglob("*"))
    found = dict(files_under(root))
    assert found["top.txt"] == "file" and found["/".join(["d"] * DEPTH) + "/leaf.txt"] == "file"
    assert len(list(walk(root))) == DEPTH + 1
    remove_tree(root)
    assert not root.exists()


def test_remove_tree_follows_no_link_and_opens_closed_folders(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("host file")
    root = tmp_path / "tree"
    (root / "closed" / "inner").mkdir(parents=True)
    (root / "closed" / "inner" / "f").write_text("x")
    (root / "readonly").mkdir()
    (root / "readonly" / "g").write_text("y")
    os.symlink(outside, root / "link")
    os.symlink(outside, root / "closed" / "link")
    os.mkfifo(root / "pipe")
    (root / "readonly").chmod(0o500)
    (root / "closed" / "inner").chmod(0o000)
    (root / "closed").chmod(0o000)
    kinds = dict(files_under(root, kinds=("file", "link", "other")))
    assert kinds["link"] == "link" and kinds["pipe"] == "other"
    remove_tree(root)
    assert not root.exists()
    assert (outside / "keep.txt").read_text() == "host file"
    remove_tree(root)  # missing: nothing to do


def test_own_tree_changes_links_not_what_they_name(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("host")
    before = outside.stat()
    root = tmp_path / "tree"
    deep_folder(root, depth=50)
    os.symlink(outside, root / "link")
    uid, gid = os.getuid(), os.getgid()
    own_tree(root, uid, gid, folder_mode=0o700)
    assert (root / "d").stat().st_mode & 0o777 == 0o700
    assert outside.stat().st_mode == before.st_mode


def test_a_committed_tree_1200_deep_is_checked_out(tmp_path):
    """The repository itself may be that deep: its checkout makes folders a level at a time."""
    work = tmp_path / "repo"
    deep_folder(work)
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "deep")
    dest = checkout(work, git(work, "rev-parse", "HEAD").strip(), tmp_path / "dest")
    assert dict(files_under(dest)) == {"/".join(["d"] * DEPTH) + "/leaf.txt": "file"}
