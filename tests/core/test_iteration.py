import gc

import pytest

from hilbench_annotate.toolkit.iteration import batched, fewer_collections


def test_batched_reads_lazily_in_lists_of_the_size():
    assert list(batched(iter(range(7)), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batched([], 3)) == []


def test_fewer_collections_raises_the_youngest_threshold_and_puts_it_back():
    before = gc.get_threshold()
    with fewer_collections(40_000):
        assert gc.get_threshold() == (40_000, *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(ValueError), fewer_collections(40_000):
        raise ValueError("the block failed")
    assert gc.get_threshold() == before


def test_fewer_collections_never_lowers_a_higher_threshold():
    before = gc.get_threshold()
    gc.set_threshold(90_000, *before[1:])
    try:
        with fewer_collections(40_000):
            assert gc.get_threshold()[0] == 90_000
    finally:
        gc.set_threshold(*before)


def test_overlapping_blocks_in_two_threads_put_the_thresholds_back_once_both_end():
    import threading

    before = gc.get_threshold()
    first_in, leave_first = threading.Event(), threading.Event()

    def first():
        with fewer_collections(40_000):
            first_in.set()
            leave_first.wait(5)

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with fewer_collections(40_000):
        leave_first.set()  # the first block ends while this one runs …
        thread.join(5)
        assert gc.get_threshold()[0] == 40_000
    assert gc.get_threshold() == before  # … and the last to end puts them back


class _Node:
    def __init__(self):
        self.other = self  # a cycle: only the collector frees it


def test_the_cycles_a_block_let_through_are_collected_when_it_ends():
    """Issue 46: an export chunk leaves thousands of objects in cycles; with the higher
    threshold they outlived the young generations and a Celery process grew chunk after
    chunk. The last block to end collects them (here with automatic collection off, so
    only that collection can free the cycle)."""
    import weakref

    gc.disable()
    try:
        with fewer_collections(40_000):
            with fewer_collections(40_000):
                inner = weakref.ref(_Node())
            assert inner() is not None  # a block still runs: nothing collected yet
        assert inner() is None
    finally:
        gc.enable()
