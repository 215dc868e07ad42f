"""Reading what task code wrote (``hilbench_annotate/toolkit/safefiles.py``): only regular
files reached without a link, never more than asked, never blocking on a pipe.

Each test builds the folder a trial's containers could have left, in ``tmp_path``.
"""

import os
import threading
import time

import pytest

from hilbench_annotate.toolkit.safefiles import UnsafeFile, is_regular, read_regular, regular_files


@pytest.fixture
def trial(tmp_path):
    """A trial folder with an agent log, a nested result and a secret outside it."""
    root = tmp_path / "trial"
    (root / "agent" / "episode-0").mkdir(parents=True)
    (root / "agent" / "episode-0" / "response.txt").write_bytes(b"the answer\n")
    (root / "result.json").write_bytes(b'{"reward": 1}')
    outside = tmp_path / "app"
    outside.mkdir()
    (outside / "db.sqlite3").write_bytes(b"another project's secrets")
    return root


def _finishes(call, seconds: float = 5.0):
    """``call()``'s result or exception, failing the test if it has not returned in time (a
    blocked read of a FIFO would otherwise hang the suite)."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_reads_a_regular_file(trial):
    assert read_regular(trial, "result.json", max_bytes=100) == b'{"reward": 1}'
    assert read_regular(trial, "agent/episode-0/response.txt", max_bytes=11) == b"the answer\n"
    assert (
        read_regular(trial, "agent/episode-0/response.txt", max_bytes=11)
        == (trial / "agent" / "episode-0" / "response.txt").read_bytes()
    )


def test_a_final_link_to_a_file_outside_is_refused_naming_it(trial, tmp_path):
    (trial / "agent" / "trajectory.json").symlink_to(tmp_path / "app" / "db.sqlite3")
    with pytest.raises(UnsafeFile, match="trajectory.json is a link"):
        read_regular(trial, "agent/trajectory.json", max_bytes=1 << 20)


def test_a_link_to_dev_zero_is_refused_without_reading(trial):
    (trial / "agent" / "zero").symlink_to("/dev/zero")
    with pytest.raises(UnsafeFile, match="zero"):
        _finishes(lambda: read_regular(trial, "agent/zero", max_bytes=1 << 30))


def test_a_linked_folder_on_the_way_is_refused(trial, tmp_path):
    (trial / "logs").symlink_to(tmp_path / "app", target_is_directory=True)
    with pytest.raises(UnsafeFile, match="logs is a link or not a folder"):
        read_regular(trial, "logs/db.sqlite3", max_bytes=1 << 20)


def test_a_fifo_is_refused_without_blocking(trial):
    os.mkfifo(trial / "agent" / "pipe")  # no writer ever opens it
    with pytest.raises(UnsafeFile, match="not a regular file"):
        _finishes(lambda: read_regular(trial, "agent/pipe", max_bytes=100))


def test_a_file_over_max_bytes_is_refused(trial):
    (trial / "big.log").write_bytes(b"x" * 101)
    assert read_regular(trial, "big.log", max_bytes=101) == b"x" * 101
    with pytest.raises(UnsafeFile, match="101 bytes, more than 100"):
        read_regular(trial, "big.log", max_bytes=100)


@pytest.mark.parametrize(
    "relative", ["../app/db.sqlite3", "agent/../../app/db.sqlite3", "/etc/passwd", "", "."]
)
def test_a_path_that_is_not_inside_the_folder_is_refused(trial, relative):
    with pytest.raises(UnsafeFile, match="not a path inside"):
        read_regular(trial, relative, max_bytes=1 << 20)


def test_a_missing_file_is_file_not_found(trial):
    with pytest.raises(FileNotFoundError):
        read_regular(trial, "agent/nothing.txt", max_bytes=100)
    with pytest.raises(FileNotFoundError):
        read_regular(trial, "nothing/at/all.txt", max_bytes=100)


def test_is_regular(trial, tmp_path):
    (trial / "link").symlink_to(trial / "result.json")
    (trial / "linked-folder").symlink_to(trial / "agent", target_is_directory=True)
    os.mkfifo(trial / "pipe")
    assert is_regular(trial, "result.json")
    assert is_regular(trial, "agent/episode-0/response.txt")
    assert not is_regular(trial, "agent")
    assert not is_regular(trial, "link")
    assert not is_regular(trial, "linked-folder/episode-0/response.txt")
    assert not _finishes(lambda: is_regular(trial, "pipe"))
    assert not is_regular(trial, "missing")
    assert not is_regular(trial, "../app/db.sqlite3")


def test_regular_files_lists_in_order_and_never_enters_a_link(trial, tmp_path):
    (trial / "agent" / "a.txt").write_bytes(b"a")
    (trial / "agent" / "z").mkdir()
    (trial / "agent" / "z" / "last.txt").write_bytes(b"z")
    (trial / "agent" / "linked").symlink_to(tmp_path / "app", target_is_directory=True)
    (trial / "agent" / "file-link").symlink_to(trial / "result.json")
    (trial / "agent" / "zero").symlink_to("/dev/zero")
    os.mkfifo(trial / "agent" / "pipe")

    # Depth first: a folder's files by name, then its folders by name.
    assert list(regular_files(trial)) == [
        "result.json",
        "agent/a.txt",
        "agent/episode-0/response.txt",
        "agent/z/last.txt",
    ]
    assert list(regular_files(trial, "agent/episode-0")) == ["agent/episode-0/response.txt"]
    assert list(regular_files(trial, "agent/linked")) == []
    assert list(regular_files(trial, "missing")) == []
    assert list(regular_files(trial, "result.json")) == []


def test_regular_files_never_enters_a_link_earlier_in_relative(trial, tmp_path):
    (tmp_path / "app" / "sub").mkdir()
    (tmp_path / "app" / "sub" / "secret.txt").write_bytes(b"s")
    (trial / "linked").symlink_to(tmp_path / "app", target_is_directory=True)
    assert list(regular_files(trial, "linked/sub")) == []


def test_a_file_swapped_for_a_link_while_being_read_never_yields_the_links_target(trial, tmp_path):
    """The race a trial's container can run while the app reads its logs: the file flips,
    by atomic renames, between a regular file and a link to the app's database. Every read
    is either the file's own bytes or a refusal, never the database's."""
    folder = trial / "agent" / "episode-0"
    secret = (tmp_path / "app" / "db.sqlite3").read_bytes()
    (folder / "as-link").symlink_to(tmp_path / "app" / "db.sqlite3")
    stop = threading.Event()

    # Each round: a fresh regular file renamed into place, then the link renamed over it,
    # then the link renamed away again (the path is missing until the next round).
    def flipper():
        while not stop.is_set():
            (folder / "as-file").write_bytes(b"the answer\n")
            os.replace(folder / "as-file", folder / "response.txt")
            os.replace(folder / "as-link", folder / "response.txt")
            os.replace(folder / "response.txt", folder / "as-link")

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    seen = {"read": 0, "refused": 0, "missing": 0}
    try:
        deadline = time.monotonic() + 10
        reads = 0
        # At least 2000 reads, and on until both states were met (or 10 s passed).
        while reads < 2000 or (
            not (seen["read"] and seen["refused"]) and time.monotonic() < deadline
        ):
            reads += 1
            try:
                data = read_regular(trial, "agent/episode-0/response.txt", max_bytes=1 << 20)
            except UnsafeFile:
                seen["refused"] += 1
            except FileNotFoundError:
                seen["missing"] += 1
            else:
                assert data != secret
                assert data == b"the answer\n"
                seen["read"] += 1
    finally:
        stop.set()
        thread.join(5)
    assert seen["read"] and seen["refused"], seen
