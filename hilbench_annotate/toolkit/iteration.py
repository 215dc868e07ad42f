"""Iterating in batches (``itertools.batched`` arrives with Python 3.12)."""

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read lazily."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
