"""Lint a task draft against the benchmark's authoring rules (PRODUCT.md).

Pure functions over a revision snapshot (``{"domain", "blocked_spec", "environment",
"blockers"}``): no database, no models, no I/O. It runs on every keystroke pause, so it is
kept to cheap text heuristics plus one cached ``sqlglot`` parse of the gold SQL.

The heuristics were calibrated on the public HiL-Bench release (five registries in
``../shared/examples/hilbench``): valid release items should not raise errors, while the
genuinely questionable ones (a trigger question that lists the answer among its options) do.

*Distinctive literals* (rules ``contains_resolution`` and ``resolution_leak``) are the parts
of a resolution an agent could not guess and that give the answer away:

- quoted strings (``'CAT7'``, ``"sanctioned"``) of 2–80 characters — except a lowercase
  identifier quoted inside a backtick code span (``dict(mac=x['mac'])``), which is a key;
- codes: tokens of 2–12 characters that mix letters and digits (``CAT7``, ``R3``) or are
  all capitals (``LN``, ``CLIENT_ID``) — except SQL keywords and everyday acronyms (``AND``,
  ``MAC``, ``DHCP``), tokens of a dotted name (``district.A12``, ``distro.id()``) and names
  of known tables or columns; matched case-sensitively;
- numbers with at least two digits (``1995``, ``5.0``) and dates in ISO or written form
  (``1996-01-01``, ``January 1, 1950``; compared as dates, whatever their spelling).

Column names and ordinary words are never distinctive. A literal that also appears in the
blocker's description is the gap's topic, not its answer, and is ignored by both rules.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from hilbench_annotate.vocabulary import (
    MAX_BLOCKERS,
    MAX_TRIGGER_QUESTIONS,
    MIN_BLOCKERS,
    MIN_TRIGGER_QUESTIONS,
    QUALITY_CRITERIA_KEYS,
)

ERROR, WARNING = "error", "warning"

RULES: dict[str, str] = {
    "blocker_count": f"A task has {MIN_BLOCKERS}–{MAX_BLOCKERS} blockers.",
    "trigger_count": (
        f"Each blocker has {MIN_TRIGGER_QUESTIONS}–{MAX_TRIGGER_QUESTIONS} trigger questions."
    ),
    "empty_field": "A blocker's description, resolution and trigger questions are not empty.",
    "self_referential": (
        'A trigger question is about the task, not the registry ("this blocker", "the gap").'
    ),
    "multi_topic": "A trigger question asks one thing; the judge rejects multi-topic messages.",
    "not_a_question": (
        "A trigger question is phrased as a question, not a statement or an "
        '"I assume X, right?" confirmation.'
    ),
    "contains_resolution": "A trigger question does not contain the resolution or its values.",
    "near_duplicate": "A blocker's trigger questions are varied: no two near-duplicates.",
    "cross_blocker_duplicate": (
        "A trigger question is not nearly identical to a trigger question of another blocker."
    ),
    "resolution_leak": (
        "A resolution is not discoverable in the blocked specification, column descriptions "
        "or business info."
    ),
    "overlapping_blockers": (
        "Blockers are independent: descriptions do not overlap and resolutions differ."
    ),
    "gold_sql": (
        "The gold SQL is a single query that parses (SQLite dialect) and names only existing "
        "tables and columns."
    ),
    "criteria_unattested": (
        "Each blocker attests all seven quality criteria with a tick and a one-line note."
    ),
}


@dataclass(frozen=True)
class Finding:
    """One problem in a draft, addressed by a stable rule id and a field path."""

    rule: str
    field: str
    message: str
    severity: str

    @property
    def fingerprint(self) -> str:
        """Stable across saves (no message text), so a waiver keeps matching the finding."""
        return f"{self.rule}@{self.field}"


# --------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------


def _word_set(words: str) -> frozenset[str]:
    """A word list written as prose-wrapped text, for readability."""
    return frozenset(words.split())


_WORD = re.compile(r"[a-z0-9]+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•‣–—]+|\d{1,2}[.)])\s+")
STOPWORDS = _word_set(
    """a an the and or but if so of to in on at by for from with without as into onto about
    is are was were be been being do does did has have had can could would will shall should
    may might must i we you it its this that these those there their they them he she his her
    what which who whom whose when where why how whether any all some each every such only
    just also than then there here not no yes one ones my our your me us"""
)


def _text(value: object) -> str:
    """Drafts come from forms and JSON: tolerate None and non-strings."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _clean_question(question: str) -> str:
    """The release prefixes some questions with a list marker ("-  How should…").

    A question with no word left (a lone "-") is empty.
    """
    cleaned = _LIST_MARKER.sub("", question.strip(), count=1).strip()
    return cleaned if re.search(r"\w", cleaned) else ""


@lru_cache(maxsize=4096)
def _normalise(text: str) -> str:
    """Lowercase words only, single-spaced: spelling of punctuation must not matter."""
    return " ".join(_WORD.findall(text.lower()))


@lru_cache(maxsize=4096)
def _content_tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in _WORD.findall(text.lower()) if t not in STOPWORDS)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@lru_cache(maxsize=4096)
def _letter_counts(text: str) -> Counter[str]:
    return Counter(text)


@lru_cache(maxsize=16384)
def _similarity(a: str, b: str, threshold: float) -> float:
    """max(SequenceMatcher ratio of the normalised texts, Jaccard of their content words).

    The ratio catches reworded-by-one-word copies; Jaccard catches the same words in another
    order. Cached per pair (questions rarely change between lints), and the exact ratio is
    only computed when its cheap upper bounds (lengths, letter counts) reach the threshold.
    """
    jac = _jaccard(_content_tokens(a), _content_tokens(b))
    if jac >= threshold:
        return jac
    na, nb = _normalise(a), _normalise(b)
    total = len(na) + len(nb)
    if not total or 2 * min(len(na), len(nb)) / total < threshold:
        return jac
    common = sum((_letter_counts(na) & _letter_counts(nb)).values())
    if 2 * common / total < threshold:
        return jac
    return max(jac, difflib.SequenceMatcher(None, na, nb, autojunk=False).ratio())


def _contains_phrase(haystack_normalised: str, needle_normalised: str) -> bool:
    """Whole-word containment of one normalised text in another."""
    return bool(needle_normalised) and f" {needle_normalised} " in f" {haystack_normalised} "


def _natural_key(field: str) -> list:
    """Sort "blockers[10]" after "blockers[2]"."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", field)]


# --------------------------------------------------------------------------------------
# Distinctive literals of a resolution (see module docstring)
# --------------------------------------------------------------------------------------

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
_COMMON_CAPS = _word_set(
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


def _distinctive(resolution: str, description: str, identifiers: frozenset[str]) -> list[Literal]:
    """Literals of the resolution that the description (the gap's topic) does not mention."""
    return [
        lit
        for lit in _resolution_literals(resolution, identifiers)
        if not lit.found_in(description)
    ]


# --------------------------------------------------------------------------------------
# Draft access
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Blocker:
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


def _blockers(draft: Mapping) -> list[_Blocker]:
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
        ident = _text(item.get("id")).strip()
        criteria = item.get("criteria")
        blockers.append(
            _Blocker(
                index=i,
                label=f'"{ident}"' if ident else f"#{i + 1}",
                description=_text(item.get("description")),
                resolution=_text(item.get("resolution")),
                questions=tuple(_text(q) for q in questions),
                criteria=criteria if isinstance(criteria, Mapping) else {},
            )
        )
    return blockers


def _mapping(value: object) -> Mapping:
    return value if isinstance(value, Mapping) else {}


@lru_cache(maxsize=256)
def _csv_rows(csv_text: str) -> tuple[dict[str, str], ...]:
    """The rows of a description CSV (BOM-tolerant, as BIRD ships them); none if unreadable."""
    try:
        reader = csv.DictReader(io.StringIO(csv_text.lstrip("\ufeff")))
        return tuple(
            {k.strip(): _text(v) for k, v in row.items() if isinstance(k, str)} for row in reader
        )
    except csv.Error:
        return ()


_CLAUSE_BREAK = re.compile(r"[,;\n]+")


@lru_cache(maxsize=256)
def _csv_clauses(csv_text: str) -> tuple[str, ...]:
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


def _identifiers(environment: Mapping, schema: Mapping[str, Iterable[str]] | None) -> frozenset:
    """Known table and column names: identifiers, never distinctive literals."""
    names: set[str] = set()
    for table, columns in _mapping(schema).items():
        names.add(_text(table).lower())
        names.update(_text(c).lower() for c in columns)
    for table, csv_text in _mapping(environment.get("descriptions")).items():
        names.add(_text(table).lower().removesuffix(".csv"))
        names.update(_description_columns(_text(csv_text)))
    return frozenset(names)


@dataclass(frozen=True)
class _Surface:
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
        return _normalise(self.text)

    def shows(self, literal: Literal, topic: frozenset[str]) -> bool:
        if not self.clauses:
            return literal.found_in(self.text)
        return any(_stems(c) & topic and literal.found_in(c) for c in self.clauses)


def _surfaces(draft: Mapping) -> list[_Surface]:
    """The blocked specification, the column-description CSVs and the business info."""
    surfaces = [
        _Surface(f"blocked specification ({section})", _text(text))
        for section, text in _mapping(draft.get("blocked_spec")).items()
    ]
    environment = _mapping(draft.get("environment"))
    for table, text in _mapping(environment.get("descriptions")).items():
        name, text = _text(table), _text(text)
        name = name if name.endswith(".csv") else f"{name}.csv"
        surfaces.append(_Surface(f"description CSV {name}", text, _csv_clauses(text)))
    business = environment.get("business_info")
    if isinstance(business, list):
        surfaces += [
            _Surface(f"business info sentence {n}", _text(sentence))
            for n, sentence in enumerate(business, start=1)
        ]
    return [s for s in surfaces if s.text.strip()]


# Words every blocker description uses; they say nothing about which gap it is.
_GENERIC_WORDS = _word_set(
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
def _stems(text: str) -> frozenset[str]:
    """Five-letter stems of a text's telling words ("distressed" and "distress" agree)."""
    return frozenset(
        token[:5]
        for token in _WORD.findall(text.lower())
        if len(token) >= 4 and token not in STOPWORDS and token not in _GENERIC_WORDS
    )


# --------------------------------------------------------------------------------------
# Rules: counts and empty fields
# --------------------------------------------------------------------------------------


def _check_blocker_count(blockers: list[_Blocker]) -> Iterator[Finding]:
    n = len(blockers)
    if not MIN_BLOCKERS <= n <= MAX_BLOCKERS:
        yield Finding(
            "blocker_count",
            "blockers",
            f"The task has {n} blocker{'s' if n != 1 else ''}; "
            f"register between {MIN_BLOCKERS} and {MAX_BLOCKERS}.",
            ERROR,
        )


def _check_trigger_count(blocker: _Blocker) -> Iterator[Finding]:
    n = sum(1 for q in blocker.questions if _clean_question(q))
    if not MIN_TRIGGER_QUESTIONS <= n <= MAX_TRIGGER_QUESTIONS:
        yield Finding(
            "trigger_count",
            blocker.field,
            f"Blocker {blocker.label} has {n} trigger question{'s' if n != 1 else ''}; "
            f"write between {MIN_TRIGGER_QUESTIONS} and {MAX_TRIGGER_QUESTIONS}.",
            ERROR,
        )


def _check_empty(blocker: _Blocker) -> Iterator[Finding]:
    for part in ("description", "resolution"):
        if not getattr(blocker, part).strip():
            yield Finding(
                "empty_field",
                f"{blocker.field}.{part}",
                f"Blocker {blocker.label} has an empty {part}; fill it in.",
                ERROR,
            )
    for j, question in enumerate(blocker.questions):
        if not _clean_question(question):
            yield Finding(
                "empty_field",
                blocker.question_field(j),
                f"{blocker.question_label(j)} is empty; write the question or remove it.",
                ERROR,
            )


# --------------------------------------------------------------------------------------
# Rules: one trigger question
# --------------------------------------------------------------------------------------

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


def _check_self_referential(blocker: _Blocker, j: int, question: str) -> Iterator[Finding]:
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


def _check_multi_topic(blocker: _Blocker, j: int, question: str) -> Iterator[Finding]:
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
_INTERROGATIVES = _word_set(
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


def _check_not_a_question(blocker: _Blocker, j: int, question: str) -> Iterator[Finding]:
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
    first = _WORD.match(question.lower().lstrip("¿(\"'`"))
    if not question.endswith("?") and not (first and first[0] in _INTERROGATIVES):
        yield Finding(
            "not_a_question",
            blocker.question_field(j),
            f"{label} is not phrased as a question; the judge rejects statements, so rewrite "
            "it as a question ending with '?'.",
            ERROR,
        )


def _check_contains_resolution(
    blocker: _Blocker, j: int, question: str, identifiers: frozenset[str]
) -> Iterator[Finding]:
    label = blocker.question_label(j)
    resolution = _normalise(blocker.resolution)
    if len(resolution) >= 3 and _contains_phrase(_normalise(question), resolution):
        yield Finding(
            "contains_resolution",
            blocker.question_field(j),
            f"{label} contains the whole resolution; ask for it instead of stating it.",
            ERROR,
        )
        return
    leaked = [
        lit.text
        for lit in _distinctive(blocker.resolution, blocker.description, identifiers)
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


# --------------------------------------------------------------------------------------
# Rules: across questions and blockers
# --------------------------------------------------------------------------------------


def _check_duplicates(
    blockers: list[_Blocker], cleaned: dict[tuple[int, int], str], threshold: float
) -> Iterator[Finding]:
    """Near-duplicates in a blocker (error) and across blockers (warning), on the later one.

    Each question is reported at most once per rule, against the first question it repeats.
    """
    items = sorted(cleaned.items())
    for n, ((bi, qi), question) in enumerate(items):
        reported: set[bool] = set()
        for (bj, qj), other in items[:n]:
            same = bi == bj
            if same in reported or _similarity(other, question, threshold) < threshold:
                continue
            reported.add(same)
            score = _similarity(other, question, threshold)
            blocker = blockers[bi]
            if same:
                yield Finding(
                    "near_duplicate",
                    blocker.question_field(qi),
                    f"{blocker.question_label(qi)} nearly repeats trigger question {qj + 1} "
                    f"(similarity {score:.2f}); vary the wording or ask from another angle.",
                    ERROR,
                )
            else:
                yield Finding(
                    "cross_blocker_duplicate",
                    blocker.question_field(qi),
                    f"{blocker.question_label(qi)} is nearly identical to trigger question "
                    f"{qj + 1} of blocker {blockers[bj].label} (similarity {score:.2f}); make "
                    "it target this blocker's gap so the judge can tell them apart.",
                    WARNING,
                )


def _check_overlap(blockers: list[_Blocker], threshold: float) -> Iterator[Finding]:
    tokens = [_content_tokens(b.description) for b in blockers]
    resolutions = [_normalise(b.resolution) for b in blockers]
    for j, later in enumerate(blockers):
        for i, earlier in enumerate(blockers[:j]):
            if resolutions[j] and resolutions[i] == resolutions[j]:
                yield Finding(
                    "overlapping_blockers",
                    later.field,
                    f"Blockers {earlier.label} and {later.label} have the same resolution; "
                    "merge them or make each resolve its own gap.",
                    ERROR,
                )
                continue
            score = _jaccard(tokens[i], tokens[j])
            if score >= threshold:
                yield Finding(
                    "overlapping_blockers",
                    later.field,
                    f"The descriptions of blockers {earlier.label} and {later.label} overlap "
                    f"({score:.0%} shared words); check that each is an independent gap.",
                    WARNING,
                )


def _check_leak(
    blocker: _Blocker, surfaces: list[_Surface], identifiers: frozenset[str]
) -> Iterator[Finding]:
    """The resolution (or one of its distinctive literals) is visible to the agent."""
    if not blocker.resolution.strip():
        return
    whole = _normalise(blocker.resolution)
    literals = _distinctive(blocker.resolution, blocker.description, identifiers)
    topic = _stems(blocker.description)
    places: dict[str, list[str]] = {}
    for surface in surfaces:
        if len(whole) >= 3 and _contains_phrase(surface.normalised, whole):
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


def _check_criteria(blocker: _Blocker) -> Iterator[Finding]:
    missing = []
    for key in QUALITY_CRITERIA_KEYS:
        attested = _mapping(blocker.criteria.get(key))
        if not (attested.get("ok") is True and _text(attested.get("note")).strip()):
            missing.append(key)
    if missing:
        yield Finding(
            "criteria_unattested",
            blocker.field,
            f"Blocker {blocker.label} does not attest {', '.join(missing)}; tick each "
            "criterion and add a one-line note.",
            WARNING,
        )


# --------------------------------------------------------------------------------------
# Rule: gold SQL
# --------------------------------------------------------------------------------------

_TOKEN_REPR = re.compile(r"<Token token_type: [\w.]+, text: (.*?), line: .*?>")
_PSEUDO_COLUMNS = frozenset({"rowid", "oid", "_rowid_"})


@lru_cache(maxsize=64)
def _parse_sql(sql: str) -> tuple[tuple[exp.Expression, ...], str | None]:
    """Statements or a readable parse error. Cached: the SQL rarely changes between lints."""
    try:
        statements = sqlglot.parse(sql, read="sqlite")
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        description = _TOKEN_REPR.sub(r"'\1'", _text(first.get("description")) or str(exc))
        where = f" (line {first['line']}, column {first['col']})" if "line" in first else ""
        return (), f"{description}{where}"
    except SqlglotError as exc:
        return (), str(exc).splitlines()[0]
    return tuple(s for s in statements if s is not None), None


def _check_gold_sql(
    environment: Mapping, schema: Mapping[str, Iterable[str]] | None
) -> Iterator[Finding]:
    field = "environment.gold_sql"
    sql = _text(environment.get("gold_sql"))
    if not sql.strip():
        yield Finding("gold_sql", field, "The gold SQL is empty; write the query.", ERROR)
        return
    statements, error = _parse_sql(sql)
    if error:
        yield Finding("gold_sql", field, f"The gold SQL does not parse as SQLite: {error}.", ERROR)
        return
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        yield Finding(
            "gold_sql",
            field,
            "The gold SQL must be exactly one SELECT query (only SELECT runs on task databases).",
            ERROR,
        )
        return
    if schema is None:
        return
    unknown = _unknown_names(
        statements[0],
        {_text(t).lower(): {_text(c).lower() for c in cols} for t, cols in schema.items()},
    )
    if unknown:
        yield Finding(
            "gold_sql",
            field,
            f"The gold SQL names {', '.join(unknown)}, not in the task database; "
            "fix the names or the database.",
            ERROR,
        )


def _unknown_names(tree: exp.Expression, schema: dict[str, set[str]]) -> list[str]:
    """Tables and columns the query names that the schema lacks (conservative).

    Sources that are not database tables (CTEs, derived tables, table functions) make their
    columns unknowable here, so columns that might come from them are never reported.
    """
    ctes = list(tree.find_all(exp.CTE))
    cte_names = {cte.alias_or_name.lower() for cte in ctes}
    cte_columns = {
        _text(getattr(col, "name", col)).lower()
        for cte in ctes
        if isinstance(cte.args.get("alias"), exp.TableAlias)
        for col in cte.args["alias"].columns
    }
    select_aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    derived = {s.alias.lower() for s in tree.find_all(exp.Subquery) if s.alias}

    unknown: list[str] = []
    aliases: dict[str, str] = {}
    tables: set[str] = set()
    opaque_source = bool(derived)
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            opaque_source = True  # a table-valued function such as json_each(...)
            continue
        name = table.name.lower()
        if name in cte_names:
            opaque_source = True
            aliases[(table.alias or name).lower()] = ""
            continue
        if name not in schema:
            unknown.append(f'table "{table.name}"')
            aliases[(table.alias or name).lower()] = ""
            continue
        tables.add(name)
        aliases[name] = name
        if table.alias:
            aliases[table.alias.lower()] = name

    for column in tree.find_all(exp.Column):
        if isinstance(column.this, exp.Star) or not column.name:
            continue
        name = column.name.lower()
        if name in _PSEUDO_COLUMNS:
            continue
        qualifier = column.table.lower()
        if qualifier:
            table = aliases.get(qualifier)
            if table and name not in schema[table]:
                unknown.append(f'column "{column.table}.{column.name}"')
            continue  # unknown qualifiers (derived tables, outer scopes) are not ours to judge
        if name in select_aliases or name in cte_columns or opaque_source:
            continue
        if any(name in schema[t] for t in tables):
            continue
        if not column.this.args.get("quoted"):
            # A quoted name that resolves nowhere is a string to SQLite ("black"): not ours.
            unknown.append(f'column "{column.name}"')
    return list(dict.fromkeys(unknown))


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def lint_task(
    draft: Mapping,
    *,
    schema: Mapping[str, set[str]] | None = None,
    similarity_threshold: float = 0.85,
    overlap_threshold: float = 0.6,
) -> list[Finding]:
    """Every finding for a draft, sorted by field then rule (stable for the UI and waivers).

    ``schema`` maps lowercased table names to their lowercased column names (SQL only);
    ``None`` means unknown, so gold SQL is parsed but its names are not checked.
    """
    draft = _mapping(draft)
    environment = _mapping(draft.get("environment"))
    blockers = _blockers(draft)
    identifiers = _identifiers(environment, schema)
    surfaces = _surfaces(draft)

    findings: list[Finding] = list(_check_blocker_count(blockers))
    cleaned: dict[tuple[int, int], str] = {}
    for blocker in blockers:
        findings += _check_trigger_count(blocker)
        findings += _check_empty(blocker)
        findings += _check_criteria(blocker)
        findings += _check_leak(blocker, surfaces, identifiers)
        for j, raw in enumerate(blocker.questions):
            question = _clean_question(raw)
            if not question:
                continue
            cleaned[(blocker.index, j)] = question
            findings += _check_self_referential(blocker, j, question)
            findings += _check_multi_topic(blocker, j, question)
            findings += _check_not_a_question(blocker, j, question)
            findings += _check_contains_resolution(blocker, j, question, identifiers)
    findings += _check_duplicates(blockers, cleaned, similarity_threshold)
    findings += _check_overlap(blockers, overlap_threshold)
    if _text(draft.get("domain")).lower() == "sql":
        findings += _check_gold_sql(environment, schema)

    unique = dict.fromkeys(findings)
    return sorted(unique, key=lambda f: (_natural_key(f.field), f.rule, f.message))
