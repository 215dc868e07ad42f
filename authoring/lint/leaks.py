"""The ``resolution_leak`` rule: the texts the agent sees while working (blocked
specification, description CSVs, business info) and whether a blocker's resolution, or
one of its distinctive literals, shows through any of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .draft import DraftBlocker, csv_clauses
from .findings import ERROR, Finding
from .literals import Literal, distinctive
from .text import as_mapping, as_text, contains_phrase, normalise, stems


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
    """The resolution (or one of its distinctive literals) is visible to the agent."""
    if not blocker.resolution.strip():
        return
    whole = normalise(blocker.resolution)
    literals = distinctive(blocker.resolution, blocker.description, identifiers)
    topic = stems(blocker.description)
    places: dict[str, list[str]] = {}
    for surface in surfaces:
        if len(whole) >= 3 and contains_phrase(surface.normalised, whole):
            places.setdefault(surface.where, []).append("the whole resolution")
            continue
        for lit in literals:
            if surface.shows(lit, topic):
                places.setdefault(surface.where, []).append(f'"{lit.text}"')
    if places:
        where = "; ".join(f"{', '.join(what)} in {place}" for place, what in places.items())
        yield Finding(
            "resolution_leak",
            f"{blocker.field}.resolution",
            f"The resolution of blocker {blocker.label} is discoverable: {where}; "
            "remove it from what the agent sees.",
            ERROR,
        )
