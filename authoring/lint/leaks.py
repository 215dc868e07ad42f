"""The ``resolution_leak`` rule: the texts the agent sees while working (blocked
specification, description CSVs, business info) and whether a blocker's resolution shows
through any of them.

A leak, as the paper means it, is the answer given away — not a token of the resolution
occurring somewhere. It is an error when the resolution, or one of its sentences of six words
or more, is there as written. Literals of the resolution (values, codes, quoted strings,
dates) that show are warnings for a reviewer to read — louder when one sentence on the
blocker's topic holds half of them or more: on the release's human-validated tasks such
sentences are mostly deliberate distractors that name the candidates ("'POPLATEK MESICNE' and
'POPLATEK TYDNE' were introduced for fee cycles…"), which a person does not call broken.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .draft import DraftBlocker, csv_clauses
from .findings import ERROR, WARNING, Finding
from .literals import Literal, distinctive
from .text import WORD, as_mapping, as_text, contains_phrase, normalise, stems


@dataclass(frozen=True)
class Surface:
    """A text the agent sees while working, named as the author knows it.

    ``clauses`` is set for description CSVs. Their value lists enumerate every code of a
    column (``"black", "borderless", "gold"``) and their names carry years ("unemployment
    rate 1995"), so a literal leaks there only when the clause holding it also speaks of the
    blocker's topic ("CAT7 stands for loan servicing").
    """

    where: str
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


def agent_surfaces(draft: Mapping) -> list[Surface]:
    """The blocked specification, the column-description CSVs and the business info."""
    surfaces = [
        Surface(f"blocked specification ({section})", as_text(text))
        for section, text in as_mapping(draft.get("blocked_spec")).items()
    ]
    environment = as_mapping(draft.get("environment"))
    for table, text in as_mapping(environment.get("descriptions")).items():
        name, text = as_text(table), as_text(text)
        name = name if name.endswith(".csv") else f"{name}.csv"
        surfaces.append(Surface(f"description CSV {name}", text, csv_clauses(text)))
    business = environment.get("business_info")
    if isinstance(business, list):
        surfaces += [
            Surface(f"business info sentence {n}", as_text(sentence))
            for n, sentence in enumerate(business, start=1)
        ]
    return [s for s in surfaces if s.text.strip()]


def check_leak(
    blocker: DraftBlocker, surfaces: list[Surface], identifiers: frozenset[str]
) -> Iterator[Finding]:
    """The resolution is there as written (error), or some of its literals are (warning)."""
    if not blocker.resolution.strip():
        return
    whole = normalise(blocker.resolution)
    sentences = _copied_sentences(blocker.resolution)
    literals = distinctive(blocker.resolution, blocker.description, identifiers)
    topic = stems(blocker.description)
    copied: dict[str, list[str]] = {}
    together: dict[str, list[str]] = {}
    seen: dict[str, list[str]] = {}
    for surface in surfaces:
        text = surface.normalised
        if len(whole) >= 3 and contains_phrase(text, whole):
            copied.setdefault(surface.where, []).append("the whole resolution")
            continue
        found = [f"“{s}”" for s in sentences if contains_phrase(text, s)]
        if found:
            copied.setdefault(surface.where, []).extend(found)
            continue
        held = _gives_away(surface, literals, topic)
        if held:
            together.setdefault(surface.where, []).extend(f'"{text}"' for text in held)
            continue
        for lit in literals:
            if surface.shows(lit, topic):
                seen.setdefault(surface.where, []).append(f'"{lit.text}"')
    if copied:
        yield Finding(
            "resolution_leak",
            f"{blocker.field}.resolution",
            f"The resolution of blocker {blocker.label} is given away: {_places(copied)}; "
            "remove it from what the agent sees.",
            ERROR,
        )
    elif together or seen:
        louder = (
            f"one sentence on its topic names {_places(together)}"
            + ("; elsewhere " + _places(seen) if seen else "")
            if together
            else _places(seen)
        )
        yield Finding(
            "resolution_literal_visible",
            f"{blocker.field}.resolution",
            f"Values of the resolution of blocker {blocker.label} are visible: {louder}; check "
            "that this does not tell the agent the answer (a value named among others is fine).",
            WARNING,
        )


def _places(places: dict[str, list[str]]) -> str:
    return "; ".join(f"{', '.join(what)} in {place}" for place, what in places.items())
