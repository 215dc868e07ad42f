"""The task's own text, as the judge's copy rules read it (the release's automatic
rejections of what an agent builds from its task's text alone)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .question_rules import FRAME_WORDS, MIN_WORDS, STOPWORDS, clean, stem

# --- the task's own text ----------------------------------------------------------------
#
# An evaluated agent holds its task's text (the SQL question and business information, the
# SWE problem statement, requirements and interface). The release's judge turns away what an
# agent can build from that text alone without understanding anything: a definition request
# that only quotes a term of the task, the task's text asked back, and a question wrapped in
# the task's text (background context). Each is found by what the message copies from the
# text — runs of words in the text's own order — and what is left around the copy: nothing
# that names what is unknown (``KIND_WORDS``: a value, a threshold, a column, a date range…)
# or anything the text does not already say.

# What asks for nothing in particular: the words of vague requests and of definitions.
GENERIC_WORDS = frozenset(
    re.findall(
        r"\S+",
        """mean means meant meaning define defines defined definition definitions refer refers
    referred referring explain explained explanation clarify clarification clarified describe
    described interpret interpreted interpretation understand understood say says said tell
    know proceed do does done handle handled deal approach help need needs detail details
    more information info context task question questions part parts thing things missing
    recommend recommended suggest given regarding about exactly sure answer true please word
    words phrase phrases term terms sentence statement following quote quoted text instead
    intended intend supposed consider considered represent represents what which how why
    when where who whom whose is are was were be been being should would could can will
    shall may might must does did have has had i me my you your this that these those it
    its am im don doesn isn aren t s d ll ve re anything something everything here there
    give provide show let us we our bit happening going mentioned mention mentions right
    correct wrong okay ok yes no also just really actually""",
    )
)
# The kinds of thing a targeted question asks for: naming one is naming what is unknown.
KIND_WORDS = frozenset(
    re.findall(
        r"\S+",
        """value values number numbers amount total sum average median percentage percent ratio
    rate share proportion fraction score level threshold thresholds cutoff limit bound
    minimum maximum min max range interval window period timeframe date dates time year
    years month months week day days hour minute duration timeout size length depth
    precision decimal decimals digit digits unit units format formats type types kind
    category categories class status state mode flag option setting parameter parameters
    argument default constant variable field fields column columns row rows table tables
    record records entry key keys id identifier name names label tag string code codes
    message error exception result list array file path paths directory function method
    module endpoint version rule policy priority precedence condition criteria criterion
    requirement constraint formula metric measure order ordering sort separator delimiter
    encoding header prefix suffix pattern regex""",
    )
)
_NONSPECIFIC = (STOPWORDS | GENERIC_WORDS | FRAME_WORDS) - KIND_WORDS
# What makes a request vague rather than a plain "What is X?": it asks to be told, helped,
# confirmed or given more, or what a thing means.
VAGUE_MARKERS = frozenset(
    re.findall(
        r"\S+",
        """mean means meant meaning explain clarify describe interpret understand tell know
    proceed handle deal approach help details more information info context missing recommend
    suggest regarding about answer true sure thing things part""",
    )
)
_TOKEN = re.compile(r"[a-z0-9_]+")
QUOTE_BACK_RUN = 6  # copied words around which nothing specific is asked: the task asked back
ECHO_RUN = 3  # copied words around which only the words of a vague request stand
PADDING_RUN = 10  # copied words beside a question of its own: background context
QUOTE_SHARE = 0.75  # ...or a shorter run that is most of the message

_DEFINITION = re.compile(
    r"^\W*(?:(?:can|could|would)\s+you\s+)?(?:please\s+)?(?:"
    r"what\s+(?:does|do|did)\s+(?P<s1>.{2,160}?)\s+(?:mean|stand\s+for|refer\s+to|signify|imply)"
    r"|what(?:'s|\s+is|\s+are)\s+(?:meant|intended)\s+by\s+(?P<s2>.{2,160}?)"
    r"|what\s+(?:exactly\s+)?do(?:es)?\s+(?:you|the\s+task|it|this|the\s+question)\s+"
    r"(?:exactly\s+|really\s+)?mean\s+(?:by|as)\s*:?\s+(?P<s3>.{2,160}?)"
    r"|how\s+(?:is|are|was|were)\s+(?P<s4>.{2,160}?)\s+(?:defined|interpreted|understood|meant)"
    r"|what(?:'s|\s+is|\s+are)\s+the\s+(?:definition|meaning|interpretation)s?\s+of\s+"
    r"(?P<s5>.{2,160}?)"
    r"|(?:define|explain|clarify|describe|interpret)\s+(?:what\s+)?(?P<s6>.{2,160}?)"
    r"|how\s+(?:should|do|can)\s+i\s+(?:interpret|understand|read)\s+(?P<s7>.{2,160}?)"
    r"|what(?:'s|\s+is|\s+are)\s+(?:(?:a|an|the)\s+)?(?P<s8>.{2,80}?)\s+"
    r"(?:exactly|precisely|really|actually|supposed\s+to\s+be)"
    r")\s*(?:means?|refers?\s+to)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
# "What is the start date of X?" asks a value of something, not what a phrase means.
_VALUE_OF = re.compile(
    r"^(?:the\s+|a\s+|an\s+)?(?:[\w-]+\s+){0,3}?(?:"
    + "|".join(sorted(KIND_WORDS))
    + r")s?\s+(?:of|for|in|to|used|that|when|at|on|from|between|should|would|does|do|is|are"
    r"|we|i)\b",
    re.IGNORECASE,
)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class TaskText:
    """A task's own text as the copy rules read it: its words, and its runs of three words
    (a run of the message is copied when each of its three-word windows is the text's)."""

    words: frozenset[str]
    trigrams: frozenset[tuple[str, str, str]]
    bigrams: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, text: str) -> TaskText:
        tokens = _tokens(text or "")
        return cls(
            frozenset(tokens),
            frozenset(zip(tokens, tokens[1:], tokens[2:], strict=False)),
            frozenset(zip(tokens, tokens[1:], strict=False)),
        )

    def runs(self, tokens: list[str], minimum: int = 3) -> list[tuple[int, int]]:
        """Spans ``[start, end)`` of ``tokens`` copied from the text, ``minimum`` long or more
        (2 or 3), longest first from the left."""
        grams, size = (self.bigrams, 2) if minimum < 3 else (self.trigrams, 3)
        out, start = [], 0
        while start + size <= len(tokens):
            end = start
            while end + size <= len(tokens) and tuple(tokens[end : end + size]) in grams:
                end += 1
            if end > start and end - start + size - 1 >= minimum:
                out.append((start, end + size - 1))
                start = end + size - 1
            else:
                start += 1
        return out


def _names_something(words: list[str], text: TaskText, *, task_words_count: bool) -> bool:
    for word in words:
        if word in KIND_WORDS or stem(word) in KIND_WORDS:
            return True
        if word in _NONSPECIFIC or stem(word) in _NONSPECIFIC:
            continue
        if task_words_count or word not in text.words:
            return True
    return False


def _definition_echo(question: str, tokens: list[str], text: TaskText) -> bool:
    """A definition request whose subject is copied from the task and around which nothing
    names what is unknown ("What does 'landslide victory ratio' mean?")."""
    found = _DEFINITION.match(question.strip())
    if not found:
        return False
    name, subject = next((k, v) for k, v in found.groupdict().items() if v)
    own = set(_tokens(subject))
    if _names_something([t for t in tokens if t not in own], text, task_words_count=True):
        return False
    if name == "s8" and _VALUE_OF.match(subject.strip()):
        return False
    words = _tokens(subject)
    spans = text.runs(words, 2)
    added = [w for n, w in enumerate(words) if not any(a <= n < b for a, b in spans)]
    if len(words) == 1 and words[0] in text.words:
        added = []
    if any(w in KIND_WORDS or stem(w) in KIND_WORDS for w in added):
        return False  # the subject names a kind of thing the task does not put there
    if len(words) == 1:  # one term ("What does processor_vcpus mean?")
        copied = int(words[0] in text.words)
    else:
        copied = sum(end - start for start, end in text.runs(words, 2))
    return bool([w for w in words if w not in STOPWORDS]) and copied >= 0.6 * len(words)


_SENTENCES = re.compile(r"(?<=[.!?:])\s+|\n+")
# "How do I do this: <the task's words>": a frame of request words, a colon, then the quote.
_FRAMED = re.compile(r"^\W*(?P<frame>[^:]{1,60}):\s*(?P<quote>\S.*)$", re.DOTALL)


def _framed_quote(question: str, text: TaskText) -> bool:
    """A frame that asks nothing in particular ("Can you answer this:") before a quote of the
    task, which is most of what follows the colon: the task's text asked back."""
    found = _FRAMED.match(clean(question))
    if not found:
        return False
    frame, quote = _tokens(found["frame"]), _tokens(found["quote"])
    if not quote or _names_something(frame, text, task_words_count=False):
        return False
    copied = sum(end - start for start, end in text.runs(quote, 3))
    return copied >= ECHO_RUN and copied >= QUOTE_SHARE * len(quote)


def _padded(question: str, text: TaskText) -> bool:
    """A sentence of the message is the task's own (``PADDING_RUN`` words or more, nearly all
    copied) and another one asks: background context beside a question. A long phrase of the
    task quoted inside the question itself is not padding."""
    sentences = [_tokens(s) for s in _SENTENCES.split(clean(question)) if s.strip()]
    if len(sentences) < 2:
        return False
    for n, words in enumerate(sentences):
        copied = sum(end - start for start, end in text.runs(words, 3))
        others = [w for m, ws in enumerate(sentences) if m != n for w in ws]
        if copied >= PADDING_RUN and copied >= 0.8 * len(words) and len(others) >= MIN_WORDS:
            return True
    return False


def task_text_reason(question: str, text: TaskText) -> str | None:
    """Why the message is built from the task's own text rather than asking what is missing
    (the release's automatic rejections), or None."""
    tokens = _tokens(clean(question))
    runs = text.runs(tokens, 3)
    longest = max((end - start for start, end in runs), default=0)
    outside = [t for n, t in enumerate(tokens) if not any(s <= n < e for s, e in runs)]
    if longest >= PADDING_RUN and _padded(question, text):
        return "background context: the task's own text around the question"
    copied_share = 1 - len(outside) / len(tokens) if tokens else 0.0
    if (
        longest >= QUOTE_BACK_RUN or (longest >= ECHO_RUN and copied_share >= QUOTE_SHARE)
    ) and not _names_something(outside, text, task_words_count=False):
        return "the task's own text asked back, naming nothing that is missing"
    if _framed_quote(question, text):
        return "the task's own text asked back, naming nothing that is missing"
    if (
        longest >= ECHO_RUN
        and set(outside) & VAGUE_MARKERS
        and all(w in STOPWORDS or w in GENERIC_WORDS or stem(w) in GENERIC_WORDS for w in outside)
    ):
        return "a phrase of the task asked back in a vague request"
    if _definition_echo(question, tokens, text):
        return "a definition request that only quotes a term of the task"
    return None
