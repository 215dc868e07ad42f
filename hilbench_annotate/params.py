"""Query parameters of list pages and list endpoints, read one way: a value a filter cannot use
is ignored (the list shows as if it were absent), never passed on to the database.

What the database would refuse with an error instead of an empty answer: an integer past its
column's range (SQLite: "Python int too large", PostgreSQL: "out of range"), a search pattern
past SQLite's LIKE limit ("LIKE or GLOB pattern too complex") and a NUL character (PostgreSQL:
"A string literal cannot contain NUL"). Ids are positive and fit every integer column, so
``MAX_ID`` is the smallest column's limit (PostgreSQL ``integer``).
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_ID = 2**31 - 1
# Longer text than any name or search people type; a search is cut to it, a name ignored.
MAX_TEXT = 200


def param_id(value: object) -> int | None:
    """A positive id written in ASCII digits and within ``MAX_ID``, else None."""
    text = str(value or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > len(str(MAX_ID)):
        return None
    number = int(text)
    return number if 1 <= number <= MAX_ID else None


def param_text(value: object, *, max_length: int = MAX_TEXT, cut: bool = False) -> str:
    """Text without NULs and surrounding space; longer than ``max_length`` it is cut when
    ``cut`` (a search) and ignored otherwise (an exact name no row can have)."""
    text = str(value or "").replace("\x00", "").strip()
    if len(text) > max_length:
        return text[:max_length].strip() if cut else ""
    return text


def param_choice(value: object, choices: Iterable[str]) -> str:
    """``value`` when it is one of ``choices``, else ""."""
    text = str(value or "")
    return text if text in set(choices) else ""
