"""Text helpers shared by the rules: tolerant coercion of draft values, word sets and
normalisation, telling-word stems, and the cached similarity score behind the
near-duplicate rules.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache


def word_set(words: str) -> frozenset[str]:
    """A word list written as prose-wrapped text, for readability."""
    return frozenset(words.split())


WORD = re.compile(r"[a-z0-9]+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•‣–—]+|\d{1,2}[.)])\s+")
STOPWORDS = word_set(
    """a an the and or but if so of to in on at by for from with without as into onto about
    is are was were be been being do does did has have had can could would will shall should
    may might must i we you it its this that these those there their they them he she his her
    what which who whom whose when where why how whether any all some each every such only
    just also than then there here not no yes one ones my our your me us"""
)


def as_text(value: object) -> str:
    """Drafts come from forms and JSON: tolerate None and non-strings."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def as_mapping(value: object) -> Mapping:
    """Drafts come from forms and JSON: read anything that is not a mapping as empty."""
    return value if isinstance(value, Mapping) else {}


def clean_question(question: str) -> str:
    """The release prefixes some questions with a list marker ("-  How should…").

    A question with no word left (a lone "-") is empty.
    """
    cleaned = _LIST_MARKER.sub("", question.strip(), count=1).strip()
    return cleaned if re.search(r"\w", cleaned) else ""


@lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """Lowercase words only, single-spaced: spelling of punctuation must not matter."""
    return " ".join(WORD.findall(text.lower()))


@lru_cache(maxsize=4096)
def content_tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in WORD.findall(text.lower()) if t not in STOPWORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@lru_cache(maxsize=4096)
def _letter_counts(text: str) -> Counter[str]:
    return Counter(text)


@lru_cache(maxsize=16384)
def similarity(a: str, b: str, threshold: float) -> float:
    """max(SequenceMatcher ratio of the normalised texts, Jaccard of their content words).

    The ratio catches reworded-by-one-word copies; Jaccard catches the same words in another
    order. Cached per pair (questions rarely change between lints), and the exact ratio is
    only computed when its cheap upper bounds (lengths, letter counts) reach the threshold.
    """
    jac = jaccard(content_tokens(a), content_tokens(b))
    if jac >= threshold:
        return jac
    na, nb = normalise(a), normalise(b)
    total = len(na) + len(nb)
    if not total or 2 * min(len(na), len(nb)) / total < threshold:
        return jac
    common = sum((_letter_counts(na) & _letter_counts(nb)).values())
    if 2 * common / total < threshold:
        return jac
    return max(jac, difflib.SequenceMatcher(None, na, nb, autojunk=False).ratio())


def contains_phrase(haystack_normalised: str, needle_normalised: str) -> bool:
    """Whole-word containment of one normalised text in another."""
    return bool(needle_normalised) and f" {needle_normalised} " in f" {haystack_normalised} "


def natural_key(field: str) -> list:
    """Sort "blockers[10]" after "blockers[2]"."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", field)]


# Words every blocker description uses; they say nothing about which gap it is.
_GENERIC_WORDS = word_set(
    """question questions refers refer referring term terms unclear clear define defines
    defined definition definitions specify specifies specified specific specifying database
    table tables column columns value values data business info information attribute
    attributes classification classifications code codes schema record records multiple
    contains contain provide provides providing without making make makes whether determine
    determining determined identify identifying identified qualify qualifies qualifying
    corresponds correspond corresponding indicate indicates requirements requirement state
    states missing exact given uses used using field fields type types criteria rule rules
    single source sources mention mentions mentioned known unknown ambiguous ambiguity
    possible impossible which relevant group should would could does leaving allows"""
)


@lru_cache(maxsize=4096)
def stems(text: str) -> frozenset[str]:
    """Five-letter stems of a text's telling words ("distressed" and "distress" agree)."""
    return frozenset(
        token[:5]
        for token in WORD.findall(text.lower())
        if len(token) >= 4 and token not in STOPWORDS and token not in _GENERIC_WORDS
    )
