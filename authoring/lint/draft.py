"""Read access to a draft snapshot: its blockers as the rules see them, the column-description
CSVs, and the known table and column names that are never distinctive literals.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from .text import as_mapping, as_text


@dataclass(frozen=True)
class DraftBlocker:
    """One blocker of a draft as the rules read it.

    Text fields are coerced to strings; trigger questions are kept as written (before list
    markers are cleaned), falling back to the release's older key names.
    """

    index: int
    label: str
    description: str
    resolution: str
    questions: tuple[str, ...]  # as written
    criteria: Mapping

    @property
    def field(self) -> str:
        return f"blockers[{self.index}]"

    def question_field(self, j: int) -> str:
        return f"{self.field}.trigger_questions[{j}]"

    def question_label(self, j: int) -> str:
        return f"Blocker {self.label}, trigger question {j + 1}"


def draft_blockers(draft: Mapping) -> list[DraftBlocker]:
    raw = draft.get("blockers")
    if not isinstance(raw, list):
        return []
    blockers = []
    for i, item in enumerate(raw):
        item = item if isinstance(item, Mapping) else {}
        questions = item.get("trigger_questions")
        if questions is None:
            questions = item.get("example_questions") or item.get("acceptable_questions")
        questions = questions if isinstance(questions, list | tuple) else []
        ident = as_text(item.get("id")).strip()
        criteria = item.get("criteria")
        blockers.append(
            DraftBlocker(
                index=i,
                label=f'"{ident}"' if ident else f"#{i + 1}",
                description=as_text(item.get("description")),
                resolution=as_text(item.get("resolution")),
                questions=tuple(as_text(q) for q in questions),
                criteria=criteria if isinstance(criteria, Mapping) else {},
            )
        )
    return blockers


@lru_cache(maxsize=256)
def _csv_rows(csv_text: str) -> tuple[dict[str, str], ...]:
    """The rows of a description CSV (BOM-tolerant, as BIRD ships them); none if unreadable."""
    try:
        reader = csv.DictReader(io.StringIO(csv_text.lstrip("\ufeff")))
        return tuple(
            {k.strip(): as_text(v) for k, v in row.items() if isinstance(k, str)} for row in reader
        )
    except csv.Error:
        return ()


_CLAUSE_BREAK = re.compile(r"[,;\n]+")


@lru_cache(maxsize=256)
def csv_clauses(csv_text: str) -> tuple[str, ...]:
    """The comma/semicolon/line-separated clauses of every cell of a description CSV."""
    cells = [cell for row in _csv_rows(csv_text) for cell in row.values()] or [csv_text]
    return tuple(c for cell in cells for c in _CLAUSE_BREAK.split(cell) if c.strip())


def _description_columns(csv_text: str) -> set[str]:
    """Column names a description CSV documents (both name columns), lowercased."""
    return {
        row.get(key, "").strip().lower()
        for row in _csv_rows(csv_text)
        for key in ("original_column_name", "column_name")
    } - {""}


def known_identifiers(
    environment: Mapping, schema: Mapping[str, Iterable[str]] | None
) -> frozenset:
    """Known table and column names: identifiers, never distinctive literals."""
    names: set[str] = set()
    for table, columns in as_mapping(schema).items():
        names.add(as_text(table).lower())
        names.update(as_text(c).lower() for c in columns)
    for table, csv_text in as_mapping(environment.get("descriptions")).items():
        names.add(as_text(table).lower().removesuffix(".csv"))
        names.update(_description_columns(as_text(csv_text)))
    return frozenset(names)
