"""Distinctive literals of a resolution (quoted strings, codes, numbers and dates; see the
package docstring) and how to recognise each one, however it is spelled, in other text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .text import word_set

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_MDY_DATE = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_DMY_DATE = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)")
_QUOTED = re.compile(
    r"(?<!\w)(?:'([^'\n]{2,80})'|\"([^\"\n]{2,80})\"|‘([^’\n]{2,80})’|“([^”\n]{2,80})”)(?!\w)"
)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_TOKEN = re.compile(r"(?<![\w.])[A-Za-z0-9_]+(?![\w(]|\.\w)")
_LOWER_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_ORDINAL_OR_DECADE = re.compile(r"^\d+(?:st|nd|rd|th|s)$", re.I)
# All-capital words that are vocabulary, not values: SQL keywords and everyday acronyms.
_COMMON_CAPS = word_set(
    """AND OR NOT NULL IS IN AS ON BY LIKE GLOB BETWEEN CASE WHEN THEN ELSE END SELECT FROM
    WHERE JOIN INNER LEFT RIGHT OUTER CROSS GROUP ORDER HAVING LIMIT OFFSET ASC DESC DISTINCT
    UNION ALL EXISTS COUNT SUM AVG MIN MAX CAST REAL INTEGER INT TEXT IIF TRUE FALSE WITH
    ID IDS API SQL URL URI HTTP HTTPS JSON XML CSV UTC OS IP MAC DHCP DNS VM NIC CPU GPU UI
    CLI SDK YAML TOML UTF ASCII REST RPC TCP UDP SSH SSL TLS VPN LAN WAN OK PR FAQ CEO ETL
    KPI NA AM PM US USA UK EU ISO PDF HTML CSS DB NB IE EG TODO FIXME README"""
)


@dataclass(frozen=True)
class Literal:
    """A distinctive piece of a resolution and how to recognise it in other text."""

    kind: str  # "quoted", "code", "number" or "date"
    text: str  # as shown to the author
    key: str  # ISO date for dates, else the text

    def found_in(self, text: str) -> bool:
        if self.kind == "date":
            return self.key in _dates(text)
        return bool(_literal_pattern(self.kind, self.key).search(text))


@lru_cache(maxsize=4096)
def _literal_pattern(kind: str, key: str) -> re.Pattern[str]:
    """Word-bounded (numbers also dot-bounded); codes case-sensitive, quoted strings not."""
    body = re.escape(key)
    left = r"(?<![\w.])" if kind == "number" else (r"(?<!\w)" if key[0].isalnum() else "")
    right = r"(?!\w|\.\d)" if kind == "number" else (r"(?!\w)" if key[-1].isalnum() else "")
    flags = re.IGNORECASE if kind == "quoted" else 0
    return re.compile(left + body + right, flags)


def _iso(year: str, month: int, day: str) -> str | None:
    m, d = int(month), int(day)
    if 1 <= m <= 12 and 1 <= d <= 31:
        return f"{int(year):04d}-{m:02d}-{d:02d}"
    return None


def _date_matches(text: str) -> Iterator[tuple[re.Match[str], str]]:
    for match in _ISO_DATE.finditer(text):
        iso = _iso(match[1], int(match[2]), match[3])
        if iso:
            yield match, iso
    for match in _MDY_DATE.finditer(text):
        iso = _iso(match[3], _MONTHS[match[1].lower()], match[2])
        if iso:
            yield match, iso
    for match in _DMY_DATE.finditer(text):
        iso = _iso(match[3], _MONTHS[match[2].lower()], match[1])
        if iso:
            yield match, iso


@lru_cache(maxsize=4096)
def _dates(text: str) -> frozenset[str]:
    """Every date in a text as ISO, however it is spelled."""
    return frozenset(iso for _, iso in _date_matches(text))


def _is_code(token: str) -> bool:
    if not 2 <= len(token) <= 12 or _ORDINAL_OR_DECADE.match(token):
        return False
    letters = any(c.isalpha() for c in token)
    digits = any(c.isdigit() for c in token)
    if letters and digits:
        return True
    return letters and token.upper() == token and token not in _COMMON_CAPS


@lru_cache(maxsize=1024)
def _resolution_literals(resolution: str, identifiers: frozenset[str]) -> tuple[Literal, ...]:
    """The distinctive literals of a resolution, deduplicated, in order of appearance."""
    found: dict[tuple[str, str], Literal] = {}

    def add(kind: str, text: str, key: str | None = None) -> None:
        key = key or text
        if kind in ("quoted", "code") and key.lower() in identifiers:
            return
        found.setdefault(
            (kind if kind == "date" else "text", key.lower()), Literal(kind, text, key)
        )

    code_spans = [m.span() for m in _CODE_SPAN.finditer(resolution)]
    for match in _QUOTED.finditer(resolution):
        value = next(g for g in match.groups() if g is not None).strip()
        in_code = any(start <= match.start() < end for start, end in code_spans)
        if len(value) < 2 or (in_code and _LOWER_IDENTIFIER.match(value)):
            continue
        if _NUMBER.fullmatch(value) or any(m[0] == value for m, _ in _date_matches(value)):
            continue  # found below as a number or a date, and matched as such
        add("quoted", value)
    rest = resolution
    for match, iso in _date_matches(resolution):
        add("date", match[0], iso)
        rest = rest.replace(match[0], " ")
    for match in _NUMBER.finditer(rest):
        if sum(c.isdigit() for c in match[0]) >= 2:
            add("number", match[0])
    for match in _TOKEN.finditer(rest):
        if _is_code(match[0]):
            add("code", match[0])
    return tuple(found.values())


def distinctive(resolution: str, description: str, identifiers: frozenset[str]) -> list[Literal]:
    """Literals of the resolution that the description (the gap's topic) does not mention."""
    return [
        lit
        for lit in _resolution_literals(resolution, identifiers)
        if not lit.found_in(description)
    ]
