"""The ``resolution_off_gold`` rule (SQL): a blocker's resolution shares something with the
gold SQL — a column, a table, a value or a literal of it.

Three blockers about a height threshold copied onto a question whose gold SQL filters on no
height passed every other rule: each was well formed, only about another query. A resolution
that names its own values (a number, a quoted literal, a ``table.column``) is related when one
of them is in the gold SQL; one in words only, when a word of it is a column, a literal or
(with nothing specific of its own) a table of the gold. A resolution that tells the agent to
leave something out ("ignore the ... condition") legitimately leaves no trace in the query.

Calibrated on the release (``docs/quality.md``): no blocker (of 205) of the 52 SQL tasks in
``examples/hilbench*`` raises it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from .findings import WARNING, Finding
from .sql import parse_sql
from .text import as_text

if TYPE_CHECKING:
    from .draft import DraftBlocker

_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "with",
        "that",
        "this",
        "from",
        "which",
        "where",
        "when",
        "what",
        "than",
        "then",
        "into",
        "only",
        "each",
        "any",
        "all",
        "not",
        "but",
        "its",
        "their",
        "those",
        "these",
        "was",
        "were",
        "has",
        "have",
        "had",
        "been",
        "being",
        "per",
        "such",
        "use",
        "used",
        "using",
        "value",
        "values",
        "given",
        "should",
    ]
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")
_SCALES = {"thousand": 1e3, "million": 1e6, "millon": 1e6, "billion": 1e9}
# Never from inside a run of digits: a match there is the one from the run's start, and
# trying every position of a long run is quadratic (20,000 pasted digits took a minute).
_SCALED = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*(thousand|million|millon|billion)\b", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:\.\d+)?(?!\w)"
)
_QUOTED = re.compile(r"'([^'\n]*)'|`([^`\n]*)`")
_IDENTIFIER = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b|\b[A-Za-z]+\d+[A-Za-z0-9]*\b"
)
_LEAVE_OUT = re.compile(r"\b(ignore|disregard|omit|skip)\w*", re.IGNORECASE)


def _number(text: str) -> str:
    return f"{float(text.replace(',', '')):g}"


def _words(text: str, *, numbers: bool = True) -> set[str]:
    """Content words (and their parts split at ``_``, a plural's singular) and numbers (a
    resolution's numbers are read whole by ``_specific``: "1,500" is not 1 and 500)."""
    found: set[str] = set()
    for match in _WORD.finditer(text):
        token = match.group(0).lower()
        if token[0].isdigit():
            if numbers:
                found.add(_number(token))
            continue
        for part in {token, *token.split("_")}:
            if len(part) >= 3 and part not in _STOP:
                found.add(part)
                if part.endswith("s") and len(part) > 3:
                    found.add(part[:-1])
    return found


def _specific(text: str) -> set[str]:
    """What a resolution names of its own: numbers, quoted literals, column-like names."""
    found: set[str] = set()
    for match in _SCALED.finditer(text):
        found.add(f"{float(match[1]) * _SCALES[match[2].lower()]:g}")
    found |= {_number(m[0]) for m in _NUMBER.finditer(text)}
    for match in _QUOTED.finditer(text):
        value = next(v for v in match.groups() if v is not None).strip().lower()
        if value:
            found |= {value} | _words(value)
    for match in _IDENTIFIER.finditer(text):
        name = match[0].lower()
        found |= {name, *name.split(".")} | _words(name, numbers=False)
    return found


class _Gold:
    """The gold SQL's columns, tables and literals as comparable tokens."""

    def __init__(self, tree) -> None:
        from sqlglot import exp

        self.columns: set[str] = set()
        self.tables: set[str] = set()
        self.literals: set[str] = set()
        self.short_literals: set[str] = set()
        for node in tree.walk():
            if isinstance(node, exp.Column) and node.name:
                self.columns |= {node.name.lower()} | _words(node.name)
            elif isinstance(node, exp.Table) and node.name:
                self.tables |= {node.name.lower()} | _words(node.name)
            elif isinstance(node, exp.Literal):
                value = as_text(node.this).lower()
                self.literals |= {value} | _words(value)
                if node.is_number:
                    self.literals.add(_number(value))
                elif value.strip().isalnum() and len(value.strip()) < 3:
                    self.short_literals.add(value.strip())
        # A column's part that is a table's name ("player" of player_name) says no more than
        # the table does.
        self.column_words = self.columns - self.tables

    def related(self, resolution: str) -> bool:
        specific = _specific(resolution)
        words = _words(resolution, numbers=False)
        if specific & (self.column_words | self.literals):
            return True
        if words & (self.column_words | self.literals):
            return True
        if not specific and words & self.tables:
            return True
        lowered = resolution.lower()
        return any(re.search(rf"\b{re.escape(v)}\b", lowered) for v in self.short_literals)


def check_resolutions_on_gold(
    blockers: list[DraftBlocker], environment: Mapping
) -> Iterator[Finding]:
    """A warning per blocker whose resolution shares nothing with a gold SQL that parses."""
    from sqlglot import exp

    statements, error = parse_sql(as_text(environment.get("gold_sql")))
    if error or len(statements) != 1 or not isinstance(statements[0], exp.Query):
        return  # the gold_sql rule reports it; there is nothing to compare with
    gold = _Gold(statements[0])
    for blocker in blockers:
        resolution = blocker.resolution.strip()
        if not resolution or _LEAVE_OUT.search(resolution) or gold.related(resolution):
            continue
        yield Finding(
            "resolution_off_gold",
            f"{blocker.field}.resolution",
            f"The resolution of blocker {blocker.label} shares nothing with the gold SQL (none "
            "of its columns, tables, values or literals); check that the blocker belongs to "
            "this question, or that the gold SQL uses its answer.",
            WARNING,
        )
