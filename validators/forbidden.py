"""The texts a shipped repository must not give away, and how to find them fast.

:func:`forbidden_texts` lists them for a task (the gold patch's added lines, the resolutions,
the lines the setup patch removed); :func:`needles_for` turns each into an exact pattern — a
patch line as a whole line, a resolution as a whole sentence, whitespace-tolerant — and
anchors (exact substrings every match holds) for the one-pass object scan of
:mod:`validators.objectscan`. Used by :mod:`validators.leakage`.
"""

import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from validators.objectread import Anchor

MIN_TEXT_LENGTH = 12  # normalised characters; shorter texts are too generic to search for
ANCHOR_MIN = 16  # characters: a piece of a text this long is rare enough to find it by

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
class Needle:
    label: str
    text: str  # normalised
    anchors: tuple[bytes, ...]  # exact substrings one of which any match holds (see _anchors)
    pattern: re.Pattern  # the text, whitespace-tolerant, as a whole line or a whole sentence

    @property
    def sentence(self) -> bool:
        return self.label.startswith("resolution of ")

    @property
    def caseless(self) -> bool:
        """A resolution is found in any letter case (a lower-cased copy still tells the
        answer); a patch line only as written (code is case-sensitive)."""
        return self.sentence


def needles_for(forbidden: Iterable[tuple[str, str]]) -> tuple[list[Needle], list[dict]]:
    """A patch line is matched as a whole line (so ``rule.endpoint,`` is not found inside
    ``row.format(rule.endpoint, …)``), exactly; a resolution as a whole sentence, between
    word boundaries, in any letter case (ASCII). Whitespace runs match any whitespace run,
    line breaks included."""
    needles, skipped = [], []
    for label, text in forbidden:
        key = normalise(text)
        if len(key) < MIN_TEXT_LENGTH:
            skipped.append({"label": label, "text": key})
            continue
        tokens = [token.encode("utf-8") for token in key.split(" ")]
        body = rb"\s+".join(re.escape(token) for token in tokens)
        anchors = _anchors(text.strip(), tokens)
        if label.startswith("resolution of "):
            left = rb"(?<![\w])" if re.match(rb"\w", tokens[0]) else b""
            right = rb"(?![\w])" if re.search(rb"\w$", tokens[-1]) else b""
            pattern = re.compile(left + body + right, re.IGNORECASE)
            anchors = tuple(sorted({anchor.lower() for anchor in anchors}))
        else:
            pattern = re.compile(rb"(?m)^[ \t]*" + body + rb"[ \t]*\r?$")
        needles.append(Needle(label, key, anchors, pattern))
    return needles, skipped


def _anchors(original: str, tokens: list[bytes]) -> tuple[bytes, ...]:
    """Exact substrings one of which every match of the text holds, for the fast first pass
    (Hyperscan, then ``bytes.__contains__``). Every match holds each token of the text, so
    a long token (``item._store[xfailed_key]``) is enough on its own and finds re-spaced and
    re-wrapped copies too. Without one, the text as written (aligned code keeps its inner
    spacing), the text with single spaces, and — so that a sentence re-wrapped across lines
    is still found — its two halves when each is long enough to be rare."""
    longest = max(tokens, key=len)
    if len(longest) >= ANCHOR_MIN:
        return (longest,)
    normal = b" ".join(tokens)
    anchors = {original.encode("utf-8"), normal}
    if len(tokens) >= 4:
        middle = len(tokens) // 2
        halves = [b" ".join(tokens[:middle]), b" ".join(tokens[middle:])]
        if min(len(half) for half in halves) >= ANCHOR_MIN:
            anchors |= set(halves)
    return tuple(sorted(anchors))


def by_anchor(needles: Iterable[Needle]) -> dict[Anchor, list[Needle]]:
    anchors: dict[Anchor, list[Needle]] = {}
    for needle in needles:
        for anchor in needle.anchors:
            anchors.setdefault((anchor, needle.caseless), []).append(needle)
    return anchors


def search_needles(needles_by_anchor: dict[Anchor, list[Needle]], data: bytes) -> list[Needle]:
    found: dict[int, Needle] = {}
    lowered: bytes | None = None
    for (anchor, caseless), group in needles_by_anchor.items():
        if caseless and lowered is None:
            lowered = data.lower()
        if anchor in (lowered if caseless else data):
            for needle in group:
                if id(needle) not in found and needle.pattern.search(data):
                    found[id(needle)] = needle
    return list(found.values())
