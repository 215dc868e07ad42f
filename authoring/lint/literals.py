"""Distinctive literals of a resolution (quoted strings, codes, identifiers, numbers and
dates; see the package docstring), which of them decide the answer, and how to recognise
each one, however it is spelled, in other text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from .text import stems, word_set

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
    r"(?<!\w)(?:'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|‘([^’\n]{1,80})’|“([^”\n]{1,80})”)(?!\w)"
)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_TOKEN = re.compile(r"(?<![\w.])[A-Za-z0-9_]+(?![\w(]|\.\w)")
# Names written as code: CamelCase (AvgScrMath2, MIMEApplication), snake_case
# (set_run_state_for_host) or with a leading underscore (_encoder), wherever they sit (the
# last part of email.mime.MIMEApplication()).
_NAME = re.compile(r"(?<![\w$])[A-Za-z_][A-Za-z0-9_]*(?![\w$])")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_PLURAL_ACRONYM = re.compile(r"^[A-Z]{2,}s$")  # IDs, URLs: words, not names
_LOWER_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_ORDINAL_OR_DECADE = re.compile(r"^\d+(?:st|nd|rd|th|s)$", re.I)
_ACRONYM = re.compile(r"^[A-Z]{2,5}$")
# All-capital words that are vocabulary, not values: SQL keywords and everyday acronyms.
_COMMON_CAPS = word_set(
    """AND OR NOT NULL IS IN AS ON BY LIKE GLOB BETWEEN CASE WHEN THEN ELSE END SELECT FROM
    WHERE JOIN INNER LEFT RIGHT OUTER CROSS GROUP ORDER HAVING LIMIT OFFSET ASC DESC DISTINCT
    UNION ALL EXISTS COUNT SUM AVG MIN MAX CAST REAL INTEGER INT TEXT IIF TRUE FALSE WITH
    ID IDS API SQL URL URI HTTP HTTPS JSON XML CSV UTC OS IP MAC DHCP DNS VM NIC CPU GPU UI
    CLI SDK YAML TOML UTF ASCII REST RPC TCP UDP SSH SSL TLS VPN LAN WAN OK PR FAQ CEO ETL
    KPI NA AM PM US USA UK EU ISO PDF HTML CSS DB NB IE EG TODO FIXME README
    MUST ONLY NEVER DO NO"""
)

# What a resolution rules out is not its answer: "do NOT use '7bit', '8bit' or 'raw'",
# "'$2a$', not '$2b$'", "Counterexample: …". A cue's scope runs to the end of its clause.
_NEGATION = re.compile(
    r"\b(?:not|never|no(?=\s+\w)|instead of|rather than|other than|avoid(?:ing)?|"
    r"exclud(?:e|ing)|without)\b|n't\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;!?](?=\s|$)|\)|—|\s--\s|\n")
# Examples illustrate a rule with placeholders ({'filename': 'a.txt'}); counterexamples show
# what is wrong. Neither states the answer (when the answer is in one, the rule states it too).
_EXAMPLE = re.compile(
    r"\(\s*(?P<paren>e\.g\.|for example|for instance)"
    r"|\b(?:counter[- ]?examples?|examples?)\s*:|\b(?:for example|for instance)\s*,"
    r"|\be\.g\.",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z`'\"(\[-]|\s*$)|\n\s*\n|\n\s*[-*•]\s+")


@dataclass(frozen=True)
class Known:
    """What the agent can read besides a resolution, lowercased names: of the schema or
    repository (``identifiers``) and those the specification gives as code (``spec_names``);
    and the sentences of the visible texts."""

    identifiers: frozenset[str] = frozenset()
    spec_names: frozenset[str] = frozenset()
    sentences: tuple[str, ...] = ()

    def reads(self, literal: Literal) -> bool:
        """A name of the schema, the repository or the specification's code."""
        if literal.kind not in ("quoted", "code", "identifier"):
            return False
        return literal.key.lower() in self.identifiers or literal.key.lower() in self.spec_names

    _uses: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def vocabulary(self, literal: Literal) -> bool:
        """A name, an acronym or a phrase that two or more visible sentences use: the task's
        own words (``PlayIterator``, ``SAT``, "cached link data"), not a value it gives away.
        One sentence alone does not make one: it may be the very sentence that gives the
        answer away ("Servicing rows have k_symbol LN")."""
        if not _vocabulary_shaped(literal):
            return False
        key = value_key(literal)
        if key not in self._uses:
            holding = (s for s in self.sentences if literal.found_in(s))
            self._uses[key] = next(holding, None) is not None and next(holding, None) is not None
        return self._uses[key]


def _vocabulary_shaped(literal: Literal) -> bool:
    if literal.kind == "identifier":
        return True
    if literal.kind == "quoted":
        return len(literal.key.split()) >= 2
    return literal.kind == "code" and bool(_ACRONYM.match(literal.key))


@dataclass(frozen=True)
class Literal:
    """A distinctive piece of a resolution and how to recognise it in other text."""

    kind: str  # "quoted", "code", "identifier", "number" or "date"
    text: str  # as shown to the author
    key: str  # ISO date for dates, else the text

    def found_in(self, text: str) -> bool:
        if self.kind == "date":
            return self.key in _dates(text)
        return bool(_literal_pattern(self.kind, self.key).search(text))


@lru_cache(maxsize=4096)
def _literal_pattern(kind: str, key: str) -> re.Pattern[str]:
    """Word-bounded (numbers also dot-bounded); codes and identifiers case-sensitive, quoted
    strings not. One-character codes ('D') are found unquoted too ("status D"), except the
    two that are English words."""
    body = re.escape(key)
    if not key:
        return re.compile(r"(?!)")  # nothing is the empty value
    if kind == "code" and key in ("A", "I"):  # English words unless quoted: 'A', "I"
        return re.compile(rf"(?<!\w)(['\"‘“]){body}['\"’”](?!\w)")
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


def _is_name(token: str) -> bool:
    """Written as code: CamelCase, snake_case or a leading underscore (not ``_`` alone)."""
    if "_" in token:
        return any(c.isalpha() for c in token)
    return bool(_CAMEL.search(token)) and not _PLURAL_ACRONYM.match(token)


@dataclass(frozen=True)
class _Found:
    literal: Literal
    start: int


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


@lru_cache(maxsize=1024)
def _occurrences(text: str) -> tuple[_Found, ...]:
    """Every literal of a text with where it starts, in order of appearance (duplicates kept)."""
    found: list[_Found] = []
    code_spans = _spans(_CODE_SPAN, text)
    quoted_spans = []
    for match in _QUOTED.finditer(text):
        group = next(i for i, g in enumerate(match.groups(), start=1) if g is not None)
        value, start = match[group].strip(), match.start(group)
        quoted_spans.append(match.span())
        if not value:
            continue  # a quoted space (first || ' ' || last) is a separator, not a value
        in_code = _inside(match.start(), code_spans)
        if len(value) == 1:
            if value.isupper():  # a one-character code ('D'), found unquoted too ("status D")
                found.append(_Found(Literal("code", value, value), start))
            continue
        if in_code and _LOWER_IDENTIFIER.match(value):
            continue  # a key inside code: dict(mac=x['mac'])
        if _NUMBER.fullmatch(value) or any(m[0] == value for m, _ in _date_matches(value)):
            continue  # found below as a number or a date, and matched as such
        found.append(_Found(Literal("quoted", value, value), start))
    rest = text
    for match, iso in _date_matches(text):
        found.append(_Found(Literal("date", match[0], iso), match.start()))
        rest = rest[: match.start()] + " " * len(match[0]) + rest[match.end() :]
    for match in _NUMBER.finditer(rest):
        if sum(c.isdigit() for c in match[0]) >= 2:
            found.append(_Found(Literal("number", match[0], match[0]), match.start()))
    # Words of a quoted value are that value ('VYBER KARTOU'), not codes of their own.
    for match in _TOKEN.finditer(rest):
        if _is_code(match[0]) and not _inside(match.start(), quoted_spans):
            found.append(_Found(Literal("code", match[0], match[0]), match.start()))
    for match in _NAME.finditer(rest):
        name = match[0]
        if _is_name(name) and not _is_code(name) and not _inside(match.start(), quoted_spans):
            found.append(_Found(Literal("identifier", match[0], match[0]), match.start()))
    return tuple(sorted(found, key=lambda f: f.start))


@lru_cache(maxsize=1024)
def _not_stating(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of a resolution that do not state its answer: negated clauses, examples and
    counterexamples. Cues inside code spans (``if not x:``) are code, not negation."""
    code_spans = _spans(_CODE_SPAN, text)
    spans = []
    for cue in _NEGATION.finditer(text):
        if _inside(cue.start(), code_spans):
            continue
        end = _CLAUSE_END.search(text, cue.end())
        spans.append((cue.end(), end.start() if end else len(text)))
    for cue in _EXAMPLE.finditer(text):
        closing = ")" if cue["paren"] else None
        end = text.find(closing, cue.end()) if closing else -1
        if end < 0:
            stop = _SENTENCE_END.search(text, cue.end())
            end = stop.end() if stop else len(text)
        spans.append((cue.end(), end))
    return tuple(spans)


def value_key(literal: Literal) -> tuple[str, str]:
    """What two literals share when they are the same value, however each was written."""
    return (literal.kind if literal.kind == "date" else "text", literal.key.lower())


@lru_cache(maxsize=1024)
def resolution_literals(resolution: str) -> tuple[tuple[Literal, bool], ...]:
    """Each distinct literal of a resolution, in order, with whether the resolution states it
    (False: every occurrence is ruled out or only illustrates — "not X", "Example: …")."""
    quiet = _not_stating(resolution)
    stated: dict[tuple[str, str], tuple[Literal, bool]] = {}
    for found in _occurrences(resolution):
        key = value_key(found.literal)
        says = not _inside(found.start, list(quiet))
        first, before = stated.get(key, (found.literal, False))
        stated[key] = (first, before or says)
    years = {lit.key for lit, says in stated.values() if says and lit.kind == "number"}
    # "calendar year 1998: 1998-01-01 to 1998-12-31" decides one thing, the year.
    return tuple(
        (lit, says and not (lit.kind == "date" and lit.key[:4] in years))
        for lit, says in stated.values()
    )


_NAME_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")
# A gap about which name to use: "several columns could match", "which key the mapping takes".
_CHOICE_OF_NAMES = re.compile(
    r"\b(?:columns?|tables?|fields?|keys?|parameters?|arguments?|methods?|functions?|"
    r"identifiers?|propert(?:y|ies)|attributes?|variables?)\b",
    re.IGNORECASE,
)


def _family_of(description: str) -> tuple[str, ...]:
    """Names the description writes as code ("columns named AvGScrWrite*"), lowercased."""
    return tuple(
        word.rstrip("*").lower()
        for word in _NAME_WORD.findall(description)
        if word.endswith("*") or "_" in word or _is_name(word) or any(c.isdigit() for c in word)
    )


def _names_are_the_answer(description: str) -> bool:
    """The gap is a choice between names (its description speaks of columns, keys,
    parameters…): a name of the schema or repository that the resolution picks is then its
    answer, not an identifier the agent already reads."""
    return bool(_CHOICE_OF_NAMES.search(description))


def _chosen(literal: Literal, family: tuple[str, ...]) -> bool:
    """A known name the resolution picks from the family its description names
    (AvgScrMath2 of "columns named AvGScrWrite*")."""
    key = literal.key.lower()
    return literal.kind in ("identifier", "code") and any(
        len(_common_prefix(key, name)) >= _FAMILY_PREFIX for name in family
    )


_FAMILY_PREFIX = 6


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _excluded(literal: Literal, known: Known, description: str, answers: bool) -> bool:
    """Names the agent reads in the schema, the repository or the specification's code, and
    the task's own vocabulary. With ``answers``, a schema or repository name stays when the
    gap is which name to use: then it is part of what a sentence must say to give it away."""
    named = literal.kind in ("quoted", "code", "identifier")
    if named and literal.key.lower() in known.spec_names:
        return True
    if named and literal.key.lower() in known.identifiers:
        chosen = _names_are_the_answer(description) or _chosen(literal, _family_of(description))
        if not (answers and chosen):
            return True
    return known.vocabulary(literal)


def _echoes(literal: Literal, description: str) -> bool:
    """The description names it: as written, or a quoted phrase in other word forms (the
    resolution quoting the question: "latitude lower than -24", "latitudes lower than -24")."""
    if literal.found_in(description):
        return True
    words = stems(literal.key) if literal.kind == "quoted" else frozenset()
    return bool(words) and len(literal.key.split()) >= 2 and words <= stems(description)


def distinctive(
    resolution: str, description: str, known: Known, *, answers: bool = False
) -> list[Literal]:
    """The resolution's decisive literals: those it states (not ruled out, not only in an
    example), that the description (the gap's topic) does not mention, and that are not the
    task's vocabulary or names the agent reads elsewhere — unless ``answers`` and the gap is
    a choice between such names ("Use AvgScrMath2, AvgScrRead2, AvgScrWrite2")."""
    return [
        lit
        for lit, says in resolution_literals(resolution)
        if says
        and not _echoes(lit, description)
        and not _excluded(lit, known, description, answers)
    ]


def text_literals(text: str) -> list[Literal]:
    """Every distinct literal of a text other than a resolution (a visible sentence)."""
    seen: dict[tuple[str, str], Literal] = {}
    for found in _occurrences(text):
        seen.setdefault(value_key(found.literal), found.literal)
    return list(seen.values())
