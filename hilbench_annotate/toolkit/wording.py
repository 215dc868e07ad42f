"""Text for people: lists in plain words and text shortened at a word boundary.

Messages reach reviewers and authors, who should read "“a”, “b” and “c”", never a Python
list's repr, and a shortened title that ends in "…" rather than mid-word.
"""

from collections.abc import Iterable

ELLIPSIS = "…"


def plain_list(items: Iterable[object], *, quote: bool = True, last: str = "and") -> str:
    """``“a”, “b” and “c”`` (or ``a, b or c`` with ``quote=False, last="or"``)."""
    words = [f"“{item}”" if quote else str(item) for item in items]
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def shorten(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: cut at the last word boundary, then "…".

    A single word longer than the limit is cut inside it: there is no boundary to use.
    """
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    room = text[: max(limit - len(ELLIPSIS), 0)]
    whole_words = text[len(room)] == " "
    cut = room if whole_words or " " not in room else room.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-–—") + ELLIPSIS
