"""The ``resolution_leak`` rule: the texts the agent sees while working (blocked
specification, description CSVs, business info) and whether a blocker's resolution shows
through any of them.

A leak, as the paper means it, is the answer given away — not a token of the resolution
occurring somewhere. It is an error when the resolution, or one of its sentences of six words
or more, is there as written; or when one sentence states the resolution's decisive values
(all of them: ``'D'``, ``1998``, ``_encoder`` and ``MIMEApplication``) on the blocker's
topic, as a plain statement — "Troubled means status 'D'.", "The review year is 1998.".

What stays a warning, for a reviewer to read, is what the release's human-validated tasks
do on purpose: distractor sentences that name the candidates ("'POPLATEK MESICNE' and
'POPLATEK TYDNE' were introduced for fee cycles…": another value beside the answer), that
hedge ("some analysts sometimes approximate it as NumGE1500 divided by enroll12"), or that
hold only some of the values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .draft import DraftBlocker, csv_clauses
from .findings import ERROR, WARNING, Finding
from .literals import Known, Literal, distinctive, resolution_literals, text_literals, value_key
from .text import WORD, as_mapping, as_text, contains_phrase, normalise, stems


@dataclass(frozen=True)
class Surface:
    """A text the agent sees while working, named as the author knows it (``where``) and
    as a waiver records it (``key``: ``blocked_spec.question``, ``business_info[3]``).

    ``clauses`` is set for description CSVs. Their value lists enumerate every code of a
    column (``"black", "borderless", "gold"``) and their names carry years ("unemployment
    rate 1995"), so a literal leaks there only when the clause holding it also speaks of the
    blocker's topic ("CAT7 stands for loan servicing").
    """

    where: str
    key: str
    text: str
    clauses: tuple[str, ...] = ()

    @property
    def normalised(self) -> str:
        return normalise(self.text)

    def shows(self, literal: Literal, topic: frozenset[str]) -> bool:
        if not self.clauses:
            return literal.found_in(self.text)
        return any(stems(c) & topic and literal.found_in(c) for c in self.clauses)

    def sentences(self) -> tuple[str, ...]:
        return self.clauses or tuple(s for s in _SENTENCE.split(self.text) if s.strip())


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(\[-])|\n\s*\n|\n\s*[-*•]\s+|\n(?=#)")
# A sentence that hedges, negates or offers a choice does not state the answer: the release's
# distractors read "analysts sometimes…", "may be…", "e.g.", "not encoded anywhere".
_HEDGE = re.compile(
    r"\b(?:some|sometimes|might|may|could|often|occasionally|typically|usually|generally|"
    r"commonly|frequently|loosely|perhaps|possibly|anecdotally|arguably|informally|rarely|"
    r"seldom|not|never|no|although|though|whereas|unless|either|whether|versus|vs|"
    r"such as|for example|for instance)\b|\be\.g\.|n't\b",
    re.IGNORECASE,
)


def _copied_sentences(resolution: str) -> list[str]:
    """The resolution's sentences long enough that finding one as written is a copy."""
    return [
        normalise(s)
        for s in _SENTENCE.split(resolution)
        if len(WORD.findall(s)) >= COPIED_SENTENCE_WORDS
    ]


COPIED_SENTENCE_WORDS = 6


def _gives_away(surface: Surface, literals: list[Literal], topic: frozenset[str]) -> list[str]:
    """The literals one sentence about the topic holds, when they are half of them or more."""
    needed = max(1, -(-len(literals) // 2))
    for sentence in surface.sentences():
        if not stems(sentence) & topic:
            continue
        held = [lit.text for lit in literals if lit.found_in(sentence)]
        if len(held) >= needed:
            return held
    return []


def _states_answer(
    surface: Surface, blocker: DraftBlocker, decisive: list[Literal], known: Known
) -> str | None:
    """The sentence of ``surface`` that states every decisive literal on the blocker's topic,
    plainly (no hedge, no negation) and with no other value beside them, if there is one."""
    if not decisive:
        return None
    topic = stems(blocker.description)
    resolution = {value_key(lit) for lit, _says in resolution_literals(blocker.resolution)}
    for sentence in surface.sentences():
        if not stems(sentence) & topic or _HEDGE.search(sentence):
            continue
        if not all(lit.found_in(sentence) for lit in decisive):
            continue
        others = [
            lit
            for lit in text_literals(sentence)
            if value_key(lit) not in resolution
            and not known.reads(lit)
            and not known.vocabulary(lit)
            and not lit.found_in(blocker.description)
        ]
        if not others:
            return sentence.strip()
    return None


def agent_surfaces(draft: Mapping) -> list[Surface]:
    """The blocked specification, the column-description CSVs and the business info."""
    surfaces = [
        Surface(f"blocked specification ({section})", f"blocked_spec.{section}", as_text(text))
        for section, text in as_mapping(draft.get("blocked_spec")).items()
    ]
    environment = as_mapping(draft.get("environment"))
    for table, text in as_mapping(environment.get("descriptions")).items():
        name, text = as_text(table), as_text(text)
        name = name if name.endswith(".csv") else f"{name}.csv"
        surfaces.append(
            Surface(f"description CSV {name}", f"descriptions/{name}", text, csv_clauses(text))
        )
    business = environment.get("business_info")
    if isinstance(business, list):
        surfaces += [
            Surface(f"business info sentence {n}", f"business_info[{n}]", as_text(sentence))
            for n, sentence in enumerate(business, start=1)
        ]
    return [s for s in surfaces if s.text.strip()]


def check_leak(blocker: DraftBlocker, surfaces: list[Surface], known: Known) -> Iterator[Finding]:
    """The resolution is given away (an error per surface where it is), or some of its
    literals are visible (one warning)."""
    if not blocker.resolution.strip():
        return
    whole = normalise(blocker.resolution)
    sentences = _copied_sentences(blocker.resolution)
    literals = distinctive(blocker.resolution, blocker.description, known)
    decisive = distinctive(blocker.resolution, blocker.description, known, answers=True)
    topic = stems(blocker.description)
    field = f"{blocker.field}.resolution"
    given: list[Finding] = []
    together: dict[str, list[str]] = {}
    seen: dict[str, list[str]] = {}
    for surface in surfaces:
        text = surface.normalised
        if len(whole) >= 3 and contains_phrase(text, whole):
            given.append(_given(blocker, surface, "the whole resolution is there", "whole"))
            continue
        found = [s for s in sentences if contains_phrase(text, s)]
        if found:
            what = "its sentence " + ", ".join(f"“{s}”" for s in found) + " is there"
            given.append(_given(blocker, surface, what, "sentence:" + "|".join(found)))
            continue
        stated = _states_answer(surface, blocker, decisive, known)
        if stated:
            values = ", ".join(f'"{lit.text}"' for lit in decisive)
            what = f"“{stated}” states {values} on its topic"
            given.append(_given(blocker, surface, what, ",".join(lit.key for lit in decisive)))
            continue
        held = _gives_away(surface, literals, topic)
        if held:
            together.setdefault(surface.key, []).extend(held)
            continue
        for lit in literals:
            if surface.shows(lit, topic):
                seen.setdefault(surface.key, []).append(lit.text)
    if given:
        yield from given
    elif together or seen:
        where = {s.key: s.where for s in surfaces}
        louder = (
            f"one sentence on its topic names {_places(together, where)}"
            + ("; elsewhere " + _places(seen, where) if seen else "")
            if together
            else _places(seen, where)
        )
        yield Finding(
            "resolution_literal_visible",
            field,
            f"Values of the resolution of blocker {blocker.label} are visible: {louder}; check "
            "that this does not tell the agent the answer (a value named among others is fine).",
            WARNING,
            detail=";".join(
                f"{key}:{','.join(values)}" for key, values in {**together, **seen}.items()
            ),
        )


def _given(blocker: DraftBlocker, surface: Surface, what: str, value: str) -> Finding:
    return Finding(
        "resolution_leak",
        f"{blocker.field}.resolution",
        f"The resolution of blocker {blocker.label} is given away in {surface.where}: {what}; "
        "remove it from what the agent sees.",
        ERROR,
        detail=f"{surface.key}:{value}",
    )


def _places(places: dict[str, list[str]], where: dict[str, str]) -> str:
    quoted = {key: ", ".join(f'"{value}"' for value in what) for key, what in places.items()}
    return "; ".join(f"{values} in {where[key]}" for key, values in quoted.items())
