"""Questions built mechanically from a task's own text: what an agent that understands
nothing could send to harvest resolutions. A test corpus and a measure, never training data
of the shipped judge's rules.

An evaluated agent holds its task's text (the SQL question and business information, the
SWE problem statement, requirements and interface). The release's judge rejects, whatever
they touch: a definition request that only quotes a term of the task, a question that
quotes the task back, background context or padding around a question, a vague question.
Each form below is generated from a task's text alone — no blocker, no trigger question:

* ``sentence_meaning``: what each sentence of the task means;
* ``phrase_meaning``: what each phrase of the task means, or how it is defined;
* ``padded_vague``: a vague question around a sentence of the task;
* ``quote_back``: the task's own text asked back as a question;
* ``padded_real`` (built by :func:`padded_real`, from a real question): a targeted question
  with the task's text appended or put before it — the release rejects the whole message as
  background context.

:func:`harvest` counts, per form, the tasks on which any question got a resolution.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from hilbench_annotate.question_rules import STOPWORDS

FORMS = ("sentence_meaning", "phrase_meaning", "padded_vague", "quote_back")
PER_TASK = 24

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?:])\s+|\n+")
_WORDS = re.compile(r"[A-Za-z0-9_'’-]+")

SENTENCE_TEMPLATES = (
    'What does "{s}" mean?',
    'What is meant by "{s}"?',
    "Can you explain what this means: {s}",
    "Could you clarify the following: {s}?",
    "What exactly does the task mean by: {s}",
    'I don\'t understand this part: "{s}". What does it mean?',
)
PHRASE_TEMPLATES = (
    "What does '{p}' mean?",
    "What is meant by {p}?",
    "How is {p} defined?",
    "What is the definition of {p}?",
    'What do you mean by "{p}"?',
    "Can you define {p}?",
    "Please explain {p}.",
    "What does {p} refer to?",
    "How should I interpret {p}?",
    "What is {p} exactly?",
)
VAGUE_TEMPLATES = (
    "{s} What should I do about this?",
    "Given that {s}, how should I proceed?",
    'Regarding "{s}" — can you tell me more?',
    "{s} Is there anything I need to know here?",
    "Context: {s}. What am I missing?",
    "The task says: {s}. Can you give me more details?",
    "About this: {s} — what do you recommend?",
    "{s} How do I handle this?",
)
QUOTE_TEMPLATES = (
    "{s}?",
    "Is it true that {s}?",
    "Can you answer this: {s}",
    "How do I do this: {s}",
    "Why {s}?",
    "What about this: {s}?",
)
PADDED_TEMPLATES = (
    "{q} {s}",
    "{s} {q}",
    "Context: {s} Question: {q}",
)


def task_sentences(text: str, *, longest: int = 60) -> list[str]:
    """The task text's sentences of 4 to ``longest`` words, trimmed of end punctuation."""
    out = []
    for raw in _SENTENCE_SPLIT.split(text or ""):
        sentence = " ".join(raw.split()).strip(" -*#>`").rstrip(".:;!?")
        words = _WORDS.findall(sentence)
        if 4 <= len(words) <= longest and sentence not in out:
            out.append(sentence)
    return out


def task_phrases(text: str) -> list[str]:
    """Runs of two to five content words of the task text (no stopword, no punctuation
    inside): the noun phrases and terms a spammer would ask about."""
    phrases: list[str] = []
    for sentence in task_sentences(text, longest=200):
        run: list[str] = []
        for token in re.split(r"[\s,;()\[\]{}]+", sentence):
            word = token.strip("\"'“”‘’.:!?")
            if word and word.lower() not in STOPWORDS and _WORDS.fullmatch(word):
                run.append(word)
                continue
            phrases.extend(_chunks(run))
            run = []
        phrases.extend(_chunks(run))
    return list(dict.fromkeys(phrases))


def _chunks(run: list[str]) -> list[str]:
    if len(run) < 2:
        return []
    return [" ".join(run[i : i + n]) for n in (2, 3) for i in range(0, len(run) - n + 1)]


def generate(text: str, form: str, rng: random.Random, n: int = PER_TASK) -> list[str]:
    """``n`` questions of ``form`` from the task's text (fewer when the text is short)."""
    sentences = task_sentences(text)
    if form == "phrase_meaning":
        pool, templates, key = task_phrases(text), PHRASE_TEMPLATES, "p"
    elif form == "sentence_meaning":
        pool, templates, key = sentences, SENTENCE_TEMPLATES, "s"
    elif form == "padded_vague":
        pool, templates, key = sentences, VAGUE_TEMPLATES, "s"
    elif form == "quote_back":
        pool, templates, key = sentences, QUOTE_TEMPLATES, "s"
    else:
        raise ValueError(f"unknown form {form!r}")
    chosen = rng.sample(pool, min(n, len(pool)))
    return [rng.choice(templates).format(**{key: item}) for item in chosen]


def padded_real(question: str, text: str, rng: random.Random) -> str:
    """A real question with a sentence or two of the task's text around it."""
    sentences = task_sentences(text)
    if not sentences:
        return question
    context = " ".join(rng.sample(sentences, min(2, len(sentences))))
    return rng.choice(PADDED_TEMPLATES).format(q=question, s=context.rstrip(".") + ".")


def harvest(judge, tasks: Sequence, forms: Sequence[str] = FORMS, seed: int = 0) -> dict:
    """Per form: questions sent, answered, and tasks on which any was answered. ``tasks``:
    objects with ``registry``, ``domain`` and ``context`` (``judge.training`` tasks)."""
    out = {}
    for form in forms:
        rng = random.Random(f"{seed}:{form}")
        sent = answered = tasks_answering = 0
        for task in tasks:
            questions = generate(task.context, form, rng)
            verdicts = [
                judge.judge(q, task.registry, domain=task.domain, context=task.context)
                for q in questions
            ]
            hits = sum(v.blocker_id is not None for v in verdicts)
            sent, answered = sent + len(questions), answered + hits
            tasks_answering += hits > 0
        out[form] = {
            "questions": sent,
            "answered": answered,
            "tasks": len(tasks),
            "tasks_answering": tasks_answering,
            "share": round(tasks_answering / max(1, len(tasks)), 4),
        }
    return out
