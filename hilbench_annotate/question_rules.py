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
"""

import re

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


_SPLIT = re.compile(
    r"(?<=\?)\s+|\s*;\s*also\b\s*|\s+and\s+also\s+|\s+as\s+well\s+as\s+(?=(?:which|what|how|"
    r"whether|where|when|who)\b)|\s+also,?\s+(?=(?:what|which|how|should|is|are|do|does|where|"
    r"when)\b)",
    re.IGNORECASE,
)


def question_parts(question: str) -> list[str]:
    """The questions a message asks, when it asks several ("X? And Y?", "X and also Y",
    "X; also Y"); one part otherwise. Parts of fewer than three words are dropped."""
    parts = [p.strip(" ,;") for p in _SPLIT.split(_strip(question))]
    parts = [p for p in parts if len(re.findall(r"\w+", p)) >= MIN_WORDS]
    return parts if len(parts) > 1 else [_strip(question)]


def clean(question: str) -> str:
    """The question as the judge embeds it: list marker and surrounding quotes stripped."""
    return _strip(question)
