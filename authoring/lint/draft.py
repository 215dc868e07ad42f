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

from .sql import nodes, parse_sql
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


@lru_cache(maxsize=256)
def _description_columns(csv_text: str) -> frozenset[str]:
    """Column names a description CSV documents (both name columns), lowercased. Cached as
    ``_csv_rows`` is: the questions of one database share its CSVs."""
    return frozenset(
        row.get(key, "").strip().lower()
        for row in _csv_rows(csv_text)
        for key in ("original_column_name", "column_name")
    ) - {""}


_DOTTED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _dotted_names(text: str) -> set[str]:
    """Both parts of every ``table.column`` a text writes (one letter is an initial: "e.g.")."""
    return {
        part.lower() for match in _DOTTED.finditer(text) for part in match.groups() if len(part) > 1
    }


def _sql_names(sql: str) -> set[str]:
    """The tables and columns the gold SQL names: it runs on the task database, so they are
    its schema's (string literals such as '%Adams%' are values, and are not read)."""
    from sqlglot import exp

    statements, _error = parse_sql(sql)
    names: set[str] = set()
    for statement in statements:
        found = nodes(statement, exp.Table, exp.Column)
        names.update(t.name.lower() for t in found[exp.Table] if t.name)
        names.update(
            column.name.lower()
            for column in found[exp.Column]
            # SQLite reads a double-quoted name that resolves nowhere as a string ("black").
            if column.name and not column.this.args.get("quoted")
        )
    return names


def _spec_code_names(blocked_spec: Mapping) -> set[str]:
    """Names a SWE specification gives as code: its code spans and its interface section."""
    names: set[str] = set()
    for section, text in as_mapping(blocked_spec).items():
        text = as_text(text)
        spans = _CODE_SPAN.findall(text) if section != "interface" else [text]
        names.update(name.lower() for span in spans for name in _NAME.findall(span))
    return names


def known_identifiers(
    draft: Mapping,
    schema: Mapping[str, Iterable[str]] | None,
    repository_names: Iterable[str] | None = None,
) -> tuple[frozenset[str], frozenset[str]]:
    """Names the agent reads besides the texts, lowercased: ``(schema or repository names,
    names the blocked specification gives as code)``.

    SQL: the database's tables and columns (``schema``) when it is known, and in any case
    the names the description CSVs document and the ``table.column`` names the task writes
    (specification, business info, blockers) and its gold SQL runs on. SWE: the names of the
    repository at the base commit (``repository_names``, looked up by the caller); and,
    second, the names the blocked specification gives as code (code spans, the interface
    section), which are the specification's own words whatever the gap is.
    """
    environment = as_mapping(draft.get("environment"))
    names: set[str] = set()
    for table, columns in as_mapping(schema).items():
        names.add(as_text(table).lower())
        names.update(as_text(c).lower() for c in columns)
    for table, csv_text in as_mapping(environment.get("descriptions")).items():
        names.add(as_text(table).lower().removesuffix(".csv"))
        names.update(_description_columns(as_text(csv_text)))
    names.update(as_text(n).lower() for n in repository_names or ())
    blocked_spec = as_mapping(draft.get("blocked_spec"))
    if as_text(draft.get("domain")).lower() == "swe":
        return frozenset(names), frozenset(_spec_code_names(blocked_spec))
    texts = [as_text(t) for t in blocked_spec.values()]
    business = environment.get("business_info")
    texts += [as_text(t) for t in business] if isinstance(business, list) else []
    for blocker in draft_blockers(draft):
        texts += [blocker.description, blocker.resolution]
    for text in texts:
        names.update(_dotted_names(text))
    names.update(_sql_names(as_text(environment.get("gold_sql"))))
    return frozenset(names), frozenset()
