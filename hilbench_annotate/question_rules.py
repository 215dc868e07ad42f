"""Question-form rules: reasons a message is irrelevant whatever the task's blockers are.

One module for both sides: the ask_human judge turns such messages away
(``judge.embedded``), and lint warns an author whose trigger question the judge would turn
away (``authoring.lint.questions``), with the same reason.

Pure functions, no model. The release's judge rejects statements, "I assume X, right?"
confirmations, multi-topic messages and broad or best-practice questions; these rules
catch the unmistakable cases before any similarity is computed. They are calibrated so
that no example question of the release's registries (the five examples and the 98
calibration tasks) is rejected (tests check it): a follow-up in the same message ("Should I
use X or Y? And which column?") is a question, not a rule breach. Whether a message with
several questions asks about several *blockers* needs the registry: :func:`question_parts`
splits it and the judge decides (``judge.embedded``).

A question must also *name the task* (:func:`names_task`): a term or quoted phrase its
blockers or its text use, beyond the frame words every clarifying question has. "What
threshold should I use?" names nothing; sent blind to every task it would harvest answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_CHARS = 8
MIN_WORDS = 3

# "-  ", "* ", "1. ", "2) " list markers in front of a question.
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]+|\d+[.)])\s+")

_INTERROGATIVES = (
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
    "is",
    "are",
    "was",
    "were",
    "do",
    "does",
    "did",
    "should",
    "shall",
    "can",
    "could",
    "would",
    "will",
    "may",
    "might",
    "must",
    "has",
    "have",
    "had",
)
_INTERROGATIVE_START = re.compile(r"^(?:" + "|".join(_INTERROGATIVES) + r")\b", re.IGNORECASE)

_CONFIRMATION = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bI\s+(?:assume|presume|suppose|guess|take\s+it|believe|think|understand)\b"
        r".*,\s*(?:right|correct|yes|no|ok|okay|true)\s*\?\s*$",
        r",\s*(?:right|correct|isn't\s+it|isn’t\s+it|aren't\s+they|aren’t\s+they|no|yes|ok|"
        r"okay|true|am\s+i\s+right|is\s+that\s+(?:right|correct|ok))\s*\?*\s*$",
        r"\b(?:is\s+that\s+(?:right|correct|so)|am\s+I\s+(?:right|correct))\s*\?\s*$",
        r"^(?:can|could|would)\s+you\s+(?:please\s+)?(?:confirm|verify|validate|check)\s+"
        r"(?:that|whether|if|my|this|it)\b",
        r"^(?:please\s+)?(?:confirm|verify)\s+(?:that|whether|if|my)\b",
        r"^(?:just\s+to\s+(?:confirm|double[- ]check|be\s+sure|clarify)|to\s+confirm)\b",
        r"^(?:so,?\s+)?(?:I|we)(?:['’]m|\s+am|['’]re|\s+are)?\s+(?:assume|assuming|presume|"
        r"suppose|take\s+it)\b",
        r"^(?:my|our)\s+understanding\s+is\b|^presumably\b",
    )
]

_BROAD = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^(?:what\s+(?:is|are|would\s+be)\s+(?:the\s+)?)?best\s+practices?\b",
        r"^what\s+(?:is|are|would\s+be)\s+(?:the\s+)?(?:best|recommended|ideal|right|"
        r"correct|general)\s+(?:practices?|approach|way\s+to\s+(?:approach|solve|tackle|do|"
        r"handle)\s+(?:this|the)\s+(?:task|problem|assignment|exercise))\b",
        r"\b(?:any|some)\s+(?:tips|advice|hints|suggestions|pointers|recommendations)\b",
        r"^(?:how|where)\s+(?:should|do|can|would)\s+I\s+(?:approach|start|begin|tackle|"
        r"get\s+started\s+(?:on|with))\s+(?:this|the)\b",
        r"^how\s+(?:should|do|can|would)\s+I\s+(?:solve|complete|do|finish)\s+(?:this|the)\s+"
        r"(?:task|problem|assignment|exercise)\b",
        r"^what\s+(?:should|do|can|must)\s+I\s+do\s*(?:next|now|here|first|about\s+"
        r"(?:this|it)|with\s+(?:this|it))?\s*[?.!]?$",
        r"^what\s+(?:else\s+)?(?:should|do)\s+I\s+(?:know|keep\s+in\s+mind|be\s+aware\s+of)\b",
        r"^(?:is|are)\s+there\s+(?:anything|something|any\s+other\s+things?)\s+(?:else\s+)?"
        r"(?:I\s+should|I\s+need\s+to|to)\s+(?:know|consider|be\s+aware|keep\s+in\s+mind)",
        r"^(?:can|could|would)\s+you\s+(?:please\s+)?(?:help|assist|guide)\b",
        r"^(?:can|could|would)\s+you\s+(?:please\s+)?(?:solve|do|write|give\s+me)\s+"
        r"(?:this|the|it|me)\b",
        r"^(?:what|which)\s+(?:is|are)\s+the\s+(?:answer|solution)\b",
        r"\bhow\s+would\s+you\s+(?:approach|solve|do|tackle)\b",
        r"^(?:do\s+you\s+have\s+)?any\s+(?:other\s+)?(?:guidance|information|details|"
        r"requirements|clarifications?)\b",
        r"^(?:is|are)\s+there\s+any\s+(?:other\s+)?(?:hidden\s+)?(?:requirements|constraints|"
        r"details|gotchas|ambiguities|information)\b",
        r"^what\s+(?:am\s+I\s+missing|is\s+missing|information\s+is\s+missing)\b",
    )
]

# "Please tell me …", "I need to know …": requests for information, phrased without "?".
_REQUEST = re.compile(
    r"^(?:please\s+)?(?:tell|show|give)\s+me\b|^I\s+(?:need|want|would\s+like|'d\s+like)\s+"
    r"to\s+know\b|^(?:please\s+)?(?:clarify|explain|specify)\b",
    re.IGNORECASE,
)

_JOINED_SECOND_QUESTION = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\?\s*(?:and|also|plus|additionally)\b",
        r"\band\s+also\b",
        r";\s*also\b",
        r"\bas\s+well\s+as\s+(?:which|what|how|whether|where|when|who)\b",
        r"\balso,?\s+(?:what|which|how|should|is|are|do|does|where|when)\b.*\?",
    )
]


def _strip(question: str) -> str:
    text = question.strip()
    text = _LIST_MARKER.sub("", text)
    return text.strip().strip("\"'“”").strip()


def reject_reason(question: str) -> str | None:
    """Why the message is irrelevant whatever the blockers are, or None if it may be judged."""
    if not isinstance(question, str):
        return "not text"
    text = _strip(question)
    if len(text) < MIN_CHARS or len(re.findall(r"\w+", text)) < MIN_WORDS:
        return "empty or too short"
    for pattern in _CONFIRMATION:
        if pattern.search(text):
            return "confirmation of an assumption, not a question"
    for pattern in _BROAD:
        if pattern.search(text):
            return "broad or best-practice question"
    if "?" not in text and not _INTERROGATIVE_START.match(text) and not _REQUEST.match(text):
        return "a statement, not a question"
    return None


_WH = (
    r"(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|should|"
    r"shall|can|could|would|will|may|might|must|has|have|had)\b"
)
# Where one question ends and another may begin: after a "?", at a line break, a ";", a
# " / ", a list number ("1) ", "2. "), a sentence end, or an "and" (", and", "and also")
# that opens a new question or clause ("… and which column …", "… and if X, should …").
_SPLIT = re.compile(
    r"(?<=\?)\s+|\s*\n+\s*|\s*;\s*|\s+/\s+|\s*\(?\b\d{1,2}[.)]\s+|(?<=[.!])\s+(?=[A-Z])"
    r"|,?\s+and\s+(?:also\s+)?(?=(?:" + _WH + r"|if|when|whenever|once|after|before|since|"
    r"given|assuming|there\s+(?:is|are)|(?:above|below|over|under|in|on|at|for|from|by|to|"
    r"with|within|after|before|until|during|between)\s+(?:which|what|whose|how)\b)\b)"
    r"|\s+also,?\s+(?=(?:what|which|how|should|is|are|do|does|where|when)\b)"
    r"|\s+as\s+well\s+as\s+(?=(?:which|what|how|whether|where|when|who)\b)",
    re.IGNORECASE,
)
# A part that asks something: it ends with "?", starts with an interrogative ("At what
# point…", "And which…" too) or has one after a comma or colon ("In CollectChunks, which …").
_ASKS = re.compile(
    r"^(?:(?:and|also|or|but|plus|then)\s+)?(?:(?:above|below|over|under|at|in|for|from|by|on|"
    r"to|with|within|until|during|between|of)\s+(?:what|which|whose|how)\b|" + _WH + r")"
    r"|[,:]\s+" + _WH,
    re.IGNORECASE,
)
# A part that follows up on the question before it rather than opening a topic: it points
# back ("how is it calculated?", "which field should this be?"), opens with "and", "if so"…
_BACK_REFERENCE = re.compile(
    r"\b(?:it|its|this|that|these|those|they|them|their|so|yes|such|one|ones|above|same)\b"
    r"|^(?:and|specifically|if\s+(?:so|yes|not))\b",
    re.IGNORECASE,
)
FOLLOW_UP_MAX_WORDS = 6


# The explicit markers of a second question ("X? Y?", "X and also Y", "X; also Y", "X as well
# as which Y"): what lint warns about in a trigger question. The judge splits further
# (``question_parts``), since an agent joins questions every way.
_EXPLICIT_SPLIT = re.compile(
    r"(?<=\?)\s+|\s*;\s*also\b\s*|\s+and\s+also\s+|\s+as\s+well\s+as\s+(?=(?:which|what|how|"
    r"whether|where|when|who)\b)|\s+also,?\s+(?=(?:what|which|how|should|is|are|do|does|where|"
    r"when)\b)",
    re.IGNORECASE,
)


def explicit_question_parts(question: str) -> list[str]:
    """The questions a message asks by the explicit markers (``_EXPLICIT_SPLIT``); one part
    otherwise. Parts of fewer than three words are dropped."""
    parts = [p.strip(" ,;") for p in _EXPLICIT_SPLIT.split(_strip(question))]
    parts = [p for p in parts if len(re.findall(r"\w+", p)) >= MIN_WORDS]
    return parts if len(parts) > 1 else [_strip(question)]


def question_parts(question: str) -> list[str]:
    """The questions a message asks, when it asks several ("X? And Y?", "X and which Y?",
    "X; Y?", "1) X 2) Y", one per line); one part (the message) otherwise. Statements
    around them ("The column holds codes. Which one is French?") are not parts, nor are
    parts of fewer than three words."""
    parts = [p.strip(" ,;-") for p in _SPLIT.split(_strip(question)) if p and p.strip()]
    parts = [
        p
        for p in parts
        if len(re.findall(r"\w+", p)) >= MIN_WORDS and (p.endswith("?") or _ASKS.search(p))
    ]
    return parts if len(parts) > 1 else [_strip(question)]


def follows_up(part: str) -> bool:
    """Whether a part of a message continues the question before it (refers back to it, or is
    a short generic tail such as "which column should I use?") instead of opening a topic."""
    return bool(_BACK_REFERENCE.search(part)) or len(re.findall(r"\w+", part)) <= (
        FOLLOW_UP_MAX_WORDS
    )


# --- naming the task ------------------------------------------------------------------------
#
# A question must name something of its task — a term, an identifier, a quoted phrase of its
# blockers or of the task's text — not only the frame every clarifying question has ("What
# threshold should I use?", "Which columns?", "What should the function return?"). Such a
# message is vague: sent blind to any task, it would harvest resolutions without the agent
# understanding the task. FRAME_WORDS are the words of that frame: the kinds of thing asked
# for (a value, a column, a threshold, a date range), what is done with them (use, pass,
# return, filter) and how they are qualified (exact, default, first). Everything else a
# question says that the task also says is a term of the task.

STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        """a an the of to in on for and or is are was were be been being do does did should
    would could can will shall may might must which what who whom whose when where why how
    that this these those it its as at by with from if so any all some there their they we
    i you me my our your he she his her them than then into about whether not no only just
    used use using defined define determine determined considered mean meant""",
    )
)
_WORD = re.compile(r"[a-z0-9_]+")

FRAME_WORDS = frozenset(
    re.findall(
        r"\S+",
        """use used uses using pass passed passes passing take taken takes apply applied applies
    applying handle handled handles handling treat treated treats consider considered considers
    include included includes including exclude excluded excludes count counted counts counting
    compute computed computes calculate calculated calculates calculating calculation
    calculations determine determined determines decide decided choose chosen chooses pick
    picked select set sets setting get gets got put give given gives make made makes do does
    done doing need needs needed want wanted expect expected expects expectation happen happens
    happened mean means meant meaning define defined defines definition definitions refer
    refers referred represent represents represented representation return returns returned
    returning raise raised throw thrown show shown shows display displayed print printed log
    logged store stored save saved keep kept remove removed delete deleted add added create
    created update updated change changed changes modify modified replace replaced convert
    converted format formatted parse parsed validate validated validation check checked checks
    compare compared comparison match matches matched matching filter filtered filtering
    filters sort sorted sorting order ordered ordering group grouped grouping round rounded
    rounding truncate truncated trim trimmed enforce enforced enforces allow allowed allows
    accept accepted accepts reject rejected rejects support supported supports override
    overrides overridden prefer preferred prioritize prioritized follow followed implement
    implemented implementation behave behaves behavior behaviour behaviors work works worked
    run runs call calls called calling invoke invoked trigger triggered produce produced emit
    emitted output outputs input inputs read write written load loaded fetch fetched query
    queries queried look looking find found search identify identified specify specified
    assume assumed interpret interpreted interpretation cover covers covered span break broken
    resolve resolved reconcile fail fails failed failing failure failures succeed success
    value values number numbers amount amounts total totals sum sums average averages mean
    median percentage percentages percent ratio ratios rate rates share proportion fraction
    score scores level levels threshold thresholds cutoff cutoffs limit limits bound bounds
    minimum maximum min max range ranges interval intervals window windows period periods
    timeframe timeframes date dates time times year years month months week weeks day days
    hour hours minute minutes second seconds duration durations timeout timeouts size sizes
    length lengths depth precision decimal decimals digit digits unit units formats type types
    kind kinds category categories class classes status statuses state states mode modes flag
    flags option options setting settings parameter parameters param params argument arguments
    arg args default defaults constant constants variable variables field fields column columns
    row rows table tables record records entry entries item items element elements key keys id
    ids identifier identifiers name names naming label labels tag tags string strings text
    texts message messages error errors exception exceptions warning warnings code codes result
    results answer answers list lists array arrays map maps object objects file files path
    paths directory directories folder folders function functions method methods module
    modules api endpoint endpoints version versions rule rules policy policies priority
    priorities precedence condition conditions criteria criterion requirement requirements
    required require requires constraint constraints term terms word words phrase phrases
    approach approaches way ways case cases scenario scenarios situation situations edge thing
    things data database databases dataset information info detail details logic spec
    specification specifications metric metrics measure measures measured formula formulas
    config configuration configurations question questions task tasks problem problems correct
    right exact exactly specific specifically proper properly appropriate valid invalid
    optional acceptable intended desired standard normal usual typical high higher highest low
    lower lowest large larger largest small smaller smallest big top bottom above below new old
    first last next previous current recent latest earliest past future today now same
    different other others another each every all both either neither multiple several many
    much few single one two three empty null none missing blank zero negative positive true
    false here there back far instead also only just still already again enough certain
    particular general overall whole entire s e i g etc ok okay
    has have had having get gets getting go goes going gone went come comes came coming tell
    told say says said see seen saw know known think thought like likes wish try tries tried
    keep let lets seem seems become becomes became leave leaves left turn turned turns ran win
    wins won lose loses lost play control controls controlled skip skips skipped bring brought
    help helps wait waits stop stops start starts end ends begin begins open close put puts
    too very more most less least quite rather really actually precise precisely good better
    best bad worse worst wrong sure fine possible likely able necessary usually always never
    often sometimes ever even else otherwise yet still though although however since until
    while during before after within without between among against per via across along around
    part parts piece pieces sort sorts example examples point points place places step steps
    side sides area areas aspect aspects factor factors feature features kind""",
    )
)


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry meaning (lower case, stopwords out)."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def stem(word: str) -> str:
    """A plural's singular ("columns", "entries", "matches"); identifiers (with "_" or digits)
    stay as written."""
    if "_" in word or any(c.isdigit() for c in word):
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_FRAME_STEMS = frozenset(stem(w) for w in FRAME_WORDS)


def term_stems(text: str) -> frozenset[str]:
    """The stems of ``text``'s content words that are not frame words: what it names."""
    return frozenset(stem(w) for w in content_words(text)) - _FRAME_STEMS


_QUOTED = re.compile(r'"([^"]{3,80})"|“([^”]{3,80})”|(?<![A-Za-z])\'([^\']{3,80})\'(?![A-Za-z])')


def quoted_phrases(text: str) -> list[str]:
    """Phrases of two words or more that ``text`` quotes, lower case, spaces normalised."""
    phrases = (
        " ".join(next(g for g in m.groups() if g).lower().split()) for m in _QUOTED.finditer(text)
    )
    return [p for p in phrases if len(p.split()) >= 2]


@dataclass(frozen=True)
class TaskTerms:
    """What a task names: the term stems and the text (lower case) of its blockers'
    descriptions and trigger questions and of the task's own text."""

    stems: frozenset[str]
    text: str

    @classmethod
    def of(cls, texts) -> TaskTerms:
        texts = list(texts)
        stems = frozenset().union(*(term_stems(t) for t in texts)) if texts else frozenset()
        return cls(stems, " ".join(" ".join(texts).lower().split()))


def names_task(question: str, terms: TaskTerms) -> bool:
    """Whether ``question`` names something of the task: a term of it, or a phrase of it in
    quotes ("What date range does 'recent period' refer to?")."""
    if term_stems(question) & terms.stems:
        return True
    return any(phrase in terms.text for phrase in quoted_phrases(question))


def clean(question: str) -> str:
    """The question as the judge embeds it: list marker and surrounding quotes stripped."""
    return _strip(question)
