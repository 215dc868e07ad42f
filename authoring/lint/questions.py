"""Rules over one trigger question: it stands on its own (not self-referential), asks one
thing, is phrased as an open question, and does not give away the resolution.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .draft import DraftBlocker
from .findings import ERROR, Finding
from .literals import distinctive
from .text import WORD, contains_phrase, normalise, word_set

_SELF_REFERENCE = re.compile(
    r"\b(?:"
    r"(?:this|the|that|these|each|every|other) blockers?"
    r"|(?:this|that|the) (?:information )?gap(?!\s+(?:between|of|in|size|length|width)\b)"
    r"|(?:this|that|the) ambiguity"
    r"|the above\b|above[- ]mentioned|mentioned above|described above|stated above"
    r"|(?:the|this) registry"
    r"|as described(?!\s+(?:in|by|under)\b)"
    r"|(?:the|this|that) (?:previous|preceding|earlier|last|other) questions?"
    r"|this (?:question|resolution)'s|this resolution"
    r")",
    re.IGNORECASE,
)


def check_self_referential(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    match = _SELF_REFERENCE.search(question)
    if match:
        yield Finding(
            "self_referential",
            blocker.question_field(j),
            f'{blocker.question_label(j)} refers to the registry ("{match[0]}") instead of the '
            "task; name the missing detail so the question stands on its own.",
            ERROR,
        )


# Joins of two questions. Noun conjunctions ("start and end dates") are left alone: only an
# interrogative after the conjunction starts a second question.
_SECOND_QUESTION = re.compile(
    r"\?\s*(?:and|also|plus)\b"
    r"|\band also\b|;\s*also\b"
    r"|\bas well as (?:what|which|how|who|when|where|why|whether)\b"
    r"|\band (?:what|which|how|whether|should)\b",
    re.IGNORECASE,
)


def check_multi_topic(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    reason = None
    if question.count("?") > 1:
        reason = "has more than one question mark"
    else:
        match = _SECOND_QUESTION.search(question)
        if match:
            reason = f'joins two questions ("{match[0].strip()}")'
    if reason:
        yield Finding(
            "multi_topic",
            blocker.question_field(j),
            f"{blocker.question_label(j)} {reason}; the judge rejects multi-topic messages, "
            "so split it into separate questions.",
            ERROR,
        )


# First words of a question; contractions are cut at the apostrophe ("isn't" -> "isn").
_INTERROGATIVES = word_set(
    """what which how who whom whose when where why should is are was were does do did can
    could would will may might must shall has have isn aren wasn weren doesn don didn
    couldn wouldn won shouldn mustn hasn haven"""
)
_CONFIRMATION = re.compile(
    r"^(?:so,?\s+)?(?:i|we)(?:['’]m| am|['’]re| are)? "
    r"(?:assume|assuming|guess|think|suppose|believe|take it|understand)\b"
    r"|^(?:my|our) understanding is\b|^presumably\b"
    r"|^(?:can|could) you confirm that\b"
    r"|,\s*(?:right|correct|yes|no|ok|okay|is that (?:right|correct|ok)|am i right|isn['’]t it"
    r"|aren['’]t they|true)\s*\?*\s*$",
    re.IGNORECASE,
)


def check_not_a_question(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    label = blocker.question_label(j)
    if _CONFIRMATION.search(question):
        yield Finding(
            "not_a_question",
            blocker.question_field(j),
            f'{label} is a confirmation; the judge rejects "I assume X, right?" '
            "confirmations, so ask an open question instead.",
            ERROR,
        )
        return
    first = WORD.match(question.lower().lstrip("¿(\"'`"))
    if not question.endswith("?") and not (first and first[0] in _INTERROGATIVES):
        yield Finding(
            "not_a_question",
            blocker.question_field(j),
            f"{label} is not phrased as a question; the judge rejects statements, so rewrite "
            "it as a question ending with '?'.",
            ERROR,
        )


def check_contains_resolution(
    blocker: DraftBlocker, j: int, question: str, identifiers: frozenset[str]
) -> Iterator[Finding]:
    label = blocker.question_label(j)
    resolution = normalise(blocker.resolution)
    if len(resolution) >= 3 and contains_phrase(normalise(question), resolution):
        yield Finding(
            "contains_resolution",
            blocker.question_field(j),
            f"{label} contains the whole resolution; ask for it instead of stating it.",
            ERROR,
        )
        return
    leaked = [
        lit.text
        for lit in distinctive(blocker.resolution, blocker.description, identifiers)
        if lit.found_in(question)
    ]
    if leaked:
        yield Finding(
            "contains_resolution",
            blocker.question_field(j),
            f"{label} contains the resolution's {_quote_list(leaked)}; "
            "remove the answer from the question.",
            ERROR,
        )


def _quote_list(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)
