"""The embedded judge's features of a (question, blocker) pair, per blocker of a registry.

For each blocker: how close the question is to its trigger questions, description and
resolution, measured four ways — sentence embeddings (MiniLM), rarity-weighted content-word
overlap, character 3–5-gram TF-IDF (within word boundaries, so identifiers and file or
column names count even when tokenised differently) and word 1–2-gram TF-IDF over
identifier-friendly tokens. Each feature also enters as a *margin*: its value minus the best
value among the registry's other blockers (the value itself when there is one), which is
what tells "this blocker, not that one". Last, a domain flag (SWE = 1).

A registry's side (its embeddings, vocabularies, TF-IDF vectors) is computed once into a
:class:`RegistryIndex` and cached by the caller; a question then costs one embedding and a
few hundred dictionary lookups. Pure functions over numpy; the encoder is passed in.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .base import RegistryBlocker

BASE_FEATURES = (
    "emb_trigger_max",  # best cosine to a trigger question
    "emb_trigger_mean",  # cosine to the mean of the trigger embeddings
    "emb_description",
    "emb_resolution",
    "lex_trigger_description",  # rarity-weighted share of the question's words found there
    "lex_with_resolution",
    "char_trigger_max",  # character 3-5-gram TF-IDF, best trigger
    "char_description",
    "word_trigger_max",  # word 1-2-gram TF-IDF, best trigger
    "word_all",  # word TF-IDF against triggers + description + resolution joined
)
FEATURES = (
    *BASE_FEATURES,
    *(f"margin_{name}" for name in BASE_FEATURES),
    "question_unseen_share",  # share of the question's words no blocker of the registry uses
    "domain_swe",
)

_STOPWORDS = frozenset(
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
_TOKEN = re.compile(r"[A-Za-z0-9_]+")

Sparse = dict[str, float]
Embed = Callable[[list[str]], np.ndarray]


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


def _char_grams(text: str) -> Counter:
    grams: Counter = Counter()
    for word in text.lower().split():
        padded = f" {word} "
        for n in (3, 4, 5):
            for start in range(max(len(padded) - n + 1, 1)):
                grams[padded[start : start + n]] += 1
    return grams


def _word_grams(text: str) -> Counter:
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    grams = Counter(tokens)
    grams.update(f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False))
    return grams


class _Tfidf:
    """TF-IDF fitted on a registry's reference texts: sublinear tf, smooth idf, L2 norm;
    terms the registry never uses are dropped (they cannot match anything)."""

    def __init__(self, analyser: Callable[[str], Counter], corpus: Sequence[str]):
        self.analyser = analyser
        frequency: Counter = Counter()
        for text in corpus:
            frequency.update(set(analyser(text)))
        count = len(corpus)
        self.idf = {t: math.log((1 + count) / (1 + df)) + 1 for t, df in frequency.items()}

    def vector(self, text: str) -> Sparse:
        weights = {
            term: (1 + math.log(tf)) * self.idf[term]
            for term, tf in self.analyser(text).items()
            if term in self.idf
        }
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return {t: w / norm for t, w in weights.items()} if norm else {}


def _cosine(a: Sparse, b: Sparse) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(w * b[t] for t, w in a.items() if t in b)


@dataclass(frozen=True)
class RegistryIndex:
    ids: tuple[str, ...]
    domain_swe: float
    trigger_embeddings: tuple[np.ndarray, ...]  # per blocker (n_triggers, dim)
    mean_trigger: np.ndarray  # (blockers, dim), normalised
    description: np.ndarray  # (blockers, dim)
    resolution: np.ndarray  # (blockers, dim)
    words_td: tuple[frozenset[str], ...]
    words_tdr: tuple[frozenset[str], ...]
    idf: dict[str, float]  # rarity of a word among the registry's blockers
    unseen_idf: float
    char: _Tfidf
    char_triggers: tuple[tuple[Sparse, ...], ...]
    char_description: tuple[Sparse, ...]
    word: _Tfidf
    word_triggers: tuple[tuple[Sparse, ...], ...]
    word_all: tuple[Sparse, ...]


def build_index(registry: Sequence[RegistryBlocker], domain: str, embed: Embed) -> RegistryIndex:
    """Everything about ``registry`` the features read (``embed``: texts -> normalised rows)."""
    triggers = [[" ".join(q.split()) for q in b.trigger_questions if q.strip()] for b in registry]
    descriptions = [b.description or b.id.replace("_", " ") for b in registry]
    resolutions = [b.resolution or d for b, d in zip(registry, descriptions, strict=True)]
    flat = [q for qs in triggers for q in qs]
    vectors = embed([*flat, *descriptions, *resolutions]) if registry else np.zeros((0, 384))
    dim = vectors.shape[1] if len(vectors) else 384
    trigger_embeddings, position = [], 0
    for qs in triggers:
        trigger_embeddings.append(vectors[position : position + len(qs)])
        position += len(qs)
    description = vectors[len(flat) : len(flat) + len(registry)]
    resolution = vectors[len(flat) + len(registry) :]
    means = []
    for rows, fallback in zip(trigger_embeddings, description, strict=True):
        mean = rows.mean(axis=0) if len(rows) else fallback
        means.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
    words_td = tuple(
        frozenset().union(*(content_words(t) for t in [*qs, d]))
        for qs, d in zip(triggers, descriptions, strict=True)
    )
    words_tdr = tuple(w | content_words(r) for w, r in zip(words_td, resolutions, strict=True))
    frequency: Counter = Counter()
    for vocabulary in words_tdr:
        frequency.update(vocabulary)
    count = len(registry)
    corpus = [*flat, *descriptions, *resolutions]
    char = _Tfidf(_char_grams, corpus)
    word = _Tfidf(_word_grams, corpus)
    joined = [
        " ".join([*qs, d, r]) for qs, d, r in zip(triggers, descriptions, resolutions, strict=True)
    ]
    return RegistryIndex(
        ids=tuple(b.id for b in registry),
        domain_swe=1.0 if domain == "swe" else 0.0,
        trigger_embeddings=tuple(trigger_embeddings),
        mean_trigger=np.asarray(means, dtype=np.float32).reshape(-1, dim),
        description=description,
        resolution=resolution,
        words_td=words_td,
        words_tdr=words_tdr,
        idf={w: math.log((count + 1) / (df + 0.5)) for w, df in frequency.items()},
        unseen_idf=math.log((count + 1) / 0.5),
        char=char,
        char_triggers=tuple(tuple(char.vector(q) for q in qs) for qs in triggers),
        char_description=tuple(char.vector(d) for d in descriptions),
        word=word,
        word_triggers=tuple(tuple(word.vector(q) for q in qs) for qs in triggers),
        word_all=tuple(word.vector(j) for j in joined),
    )


def _overlap(weights: dict[str, float], vocabulary: frozenset[str]) -> float:
    total = sum(weights.values())
    return sum(weights[w] for w in weights.keys() & vocabulary) / total if total else 0.0


def features(question: str, vector: np.ndarray, index: RegistryIndex) -> np.ndarray:
    """``(blockers, len(FEATURES))``: each blocker's features for ``question`` (``vector``
    is its normalised embedding)."""
    count = len(index.ids)
    if not count:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    weights = {w: index.idf.get(w, index.unseen_idf) for w in content_words(question)}
    char_q, word_q = index.char.vector(question), index.word.vector(question)
    base = np.zeros((count, len(BASE_FEATURES)), dtype=np.float64)
    for b in range(count):
        rows = index.trigger_embeddings[b]
        base[b] = (
            float((rows @ vector).max()) if len(rows) else 0.0,
            float(index.mean_trigger[b] @ vector),
            float(index.description[b] @ vector),
            float(index.resolution[b] @ vector),
            _overlap(weights, index.words_td[b]),
            _overlap(weights, index.words_tdr[b]),
            max((_cosine(char_q, t) for t in index.char_triggers[b]), default=0.0),
            _cosine(char_q, index.char_description[b]),
            max((_cosine(word_q, t) for t in index.word_triggers[b]), default=0.0),
            _cosine(word_q, index.word_all[b]),
        )
    if count == 1:
        margins = base.copy()
    else:
        # For each blocker, the best value among the others: the top value, or the
        # second one for the blocker that holds the top.
        order = np.argsort(-base, axis=0)
        top = base[order[0], np.arange(base.shape[1])]
        second = base[order[1], np.arange(base.shape[1])]
        others = np.where(np.arange(count)[:, None] == order[0][None, :], second, top)
        margins = base - others
    known = frozenset().union(*index.words_tdr)
    total = sum(weights.values())
    unseen = sum(v for w, v in weights.items() if w not in known) / total if total else 0.0
    question_level = np.tile([unseen, index.domain_swe], (count, 1))
    return np.hstack([base, margins, question_level])
