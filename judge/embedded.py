"""The embedded judge: which blocker, if any, a question targets — on the CPU, offline.

A learned scorer over cheap features (``judge.features``: sentence embeddings of all-MiniLM-
L6-v2 as int8 ONNX, word overlap, character and word TF-IDF, each against the blocker's
trigger questions and description and the task's text, and as margins over the other
blockers). Its weights (``judge/weights/embedded.json``) are fitted on 98 HiL-Bench release
tasks by ``make judge-weights`` (``scripts/train_judge.py``, ``judge.training``): a logistic
regression per (question, blocker); the blocker of highest logit is the answer when it clears
the domain's threshold, chosen on tasks the model was not fitted on. A registry of one or two
blockers (smaller than any the model was fitted on) is scored by a second regression without
the information-gap features (``judge.model.Model.small``).

The judge never reads a resolution — as the release's judge, it sees a blocker's id,
description, type and trigger questions, and the task's own text. Before scoring, the
release's rejection rules, each with the reason kept in the verdict (the call log shows it,
the agent reads only "irrelevant question"):

* form (``question_rules.reject_reason``): statements, confirmations, broad questions;
* vague: the question names nothing of the task — no term or quoted phrase of its blockers
  or its text beyond the frame every question has ("What threshold should I use?");
* task text: the message is built from the task's own text rather than asking what is
  missing — a definition request that only quotes a term of the task, the task's text asked
  back, a question wrapped in the task's text (``task_text.task_text_reason``);
* multi-topic: the message asks several questions that target different blockers, or one
  about something else ("… and what error message should be shown?"); a follow-up on the
  same detail ("What is X, and how is it calculated?") is one topic.

The caller answers with the named blocker's resolution verbatim (``judge.base.respond``).

The version (``embedded-4-<weights id>``; with thresholds other than the fitted ones, the
name of the project's calibration or else ``/t<hash of the thresholds>``) is stored with every
verdict, so cached verdicts of one judge are never served under another. Registry indexes
are cached (LRU) by their content, domain and task text; one judge per configuration per
process (``judge.services.get_judge``), and ``prepare`` builds a task's index ahead of its
first question (when its registry is saved).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hilbench_annotate.question_rules import (
    clean,
    follows_up,
    names_task,
    question_parts,
    reject_reason,
)
from hilbench_annotate.task_text import task_text_reason

from .base import JudgeError, RegistryBlocker, Verdict, load_registry, registry_from_json
from .encoder import get_encoder
from .features import RegistryIndex, build_index, features, index_texts
from .model import Model

if TYPE_CHECKING:
    import numpy as np

WEIGHTS = Path(__file__).with_name("weights") / "embedded.json"
REGISTRY_CACHE_SIZE = 512
SWE_TYPES = frozenset(
    {"missing parameters", "ambiguous requirements", "contradictory requirements"}
)


def registry_domain(registry: Sequence[RegistryBlocker]) -> str:
    """``swe`` when the blockers carry SWE types, else ``sql`` (the release's registries say)."""
    return "swe" if any(b.type in SWE_TYPES for b in registry) else "sql"


def registry_key(registry: Sequence[RegistryBlocker], domain: str = "", context: str = "") -> str:
    """A hash of what the judge reads of a registry, the domain it is judged in and the
    task's text (never the resolutions: the judge does not read them)."""
    digest = hashlib.sha256(domain.encode() + b"\x02" + context.encode() + b"\x03")
    for blocker in registry:
        for part in (blocker.id, blocker.description, blocker.type):
            digest.update(part.encode() + b"\x00")
        for question in blocker.trigger_questions:
            digest.update(question.encode() + b"\x00")
        digest.update(b"\x01")
    return digest.hexdigest()


def load_weights(path: Path = WEIGHTS) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JudgeError(f"the embedded judge's weights cannot be read from {path}: {exc}") from exc


def weights_version(weights: dict) -> str:
    """The version of the judge these weights make, before any calibration."""
    return f"embedded-4-{weights.get('version', 'unversioned')}"


class EmbeddedJudge:
    def __init__(
        self,
        weights: dict | None = None,
        *,
        thresholds: dict | None = None,
        version: str = "",
        embed=None,
        index_embed=None,
    ):
        """``weights``: the fitted model (default: the shipped file); ``thresholds``: per
        domain, instead of the fitted ones (a project's calibration); ``version``: the name
        of that calibration (default: derived from the thresholds when they differ from the
        fitted ones, so verdicts under other thresholds never share a version);
        ``embed``: texts -> normalised rows (default: the encoder); ``index_embed``: the same
        for the registry texts an index is built from (default: ``embed``; the app's is the
        shared store, ``judge.embedstore``)."""
        self._embed = embed
        self._index_embed = index_embed
        weights = weights or load_weights()
        self.model = Model.from_json(weights)
        self.weights_id = str(weights.get("version", "unversioned"))
        fitted = dict(self.model.thresholds)
        if thresholds:
            self.model = replace(
                self.model,
                thresholds={
                    **self.model.thresholds,
                    **{k: float(v) for k, v in thresholds.items()},
                },
            )
        self.version = version or weights_version(weights)
        if not version and self.model.thresholds != fitted:
            digest = hashlib.sha256(
                json.dumps(sorted(self.model.thresholds.items())).encode()
            ).hexdigest()[:10]
            self.version += f"/t{digest}"
        self.long_version = self.version  # it always fits the columns
        self._cache: OrderedDict[str, RegistryIndex] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def thresholds(self) -> dict[str, float]:
        return dict(self.model.thresholds)

    def _index(
        self, registry: Sequence[RegistryBlocker], domain: str, context: str = ""
    ) -> RegistryIndex:
        key = registry_key(registry, domain, context)
        with self._lock:
            index = self._cache.get(key)
            if index is not None:
                self._cache.move_to_end(key)
                return index
        index = build_index(list(registry), domain, self._index_embed or self._encode, context)
        self._remember(key, index)
        return index

    def _remember(self, key: str, index: RegistryIndex) -> None:
        with self._lock:
            self._cache[key] = index
            while len(self._cache) > REGISTRY_CACHE_SIZE:
                self._cache.popitem(last=False)

    def forget_indexes(self) -> None:
        """Drop the cached registry indexes (the next question of each builds its own)."""
        with self._lock:
            self._cache.clear()

    def prepare(
        self, registry: Sequence[RegistryBlocker], domain: str | None = None, context: str = ""
    ) -> None:
        """Build (and cache) the registry's index now, so its first question is not slower."""
        if registry:
            self._index(registry, domain or registry_domain(registry), context)

    def prepare_many(self, items: Sequence[tuple]) -> None:
        """``prepare`` of many (registry, domain or None, context): the texts of every index
        not cached yet embedded in one call (with the app's shared store, one query for all
        of them instead of one per registry)."""
        import numpy as np

        todo: dict[str, tuple] = {}
        for registry, domain, context in items:
            if not registry:
                continue
            domain = domain or registry_domain(registry)
            key = registry_key(registry, domain, context)
            with self._lock:
                if key in self._cache:
                    continue
            todo.setdefault(key, (list(registry), domain, context))
        texts = list(dict.fromkeys(t for r, _, c in todo.values() for t in index_texts(r, c)))
        if not texts:
            return
        rows = dict(zip(texts, (self._index_embed or self._encode)(texts), strict=True))

        def embed(wanted: list[str]) -> np.ndarray:
            return np.stack([rows[text] for text in wanted])

        for key, (registry, domain, context) in todo.items():
            self._remember(key, build_index(registry, domain, embed, context))

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts) if self._embed else get_encoder().encode(texts)

    def encode_questions(self, questions: Sequence[str], *, stored: bool = False) -> np.ndarray:
        """The questions' embeddings as ``scores_many`` reads them: for a caller that scores
        the same questions against many registries and encodes them once. ``stored``: read
        and kept through the index's store (``index_embed``, the app's ``judge.embedstore``)
        — for texts every caller asks again, such as a calibration's fixed negatives."""
        texts = [clean(q) for q in questions]
        return (self._index_embed if stored and self._index_embed else self._encode)(texts)

    def _logits(
        self, texts: list[str], index: RegistryIndex, vectors: np.ndarray | None = None
    ) -> list[np.ndarray]:
        vectors = self._encode(texts) if vectors is None else vectors
        return [
            self.model.logits(features(t, v, index)) for t, v in zip(texts, vectors, strict=True)
        ]

    def scores(
        self,
        question: str,
        registry: Sequence[RegistryBlocker],
        domain: str | None = None,
        context: str = "",
    ) -> dict[str, float]:
        """Each blocker's logit for ``question`` (no rules, no threshold)."""
        domain = domain or registry_domain(registry)
        index = self._index(registry, domain, context)
        [logits] = self._logits([clean(question)], index)
        return {bid: round(float(v), 4) for bid, v in zip(index.ids, logits, strict=True)}

    def scores_many(
        self,
        questions: Sequence[str],
        registry: Sequence[RegistryBlocker],
        domain: str | None = None,
        context: str = "",
        vectors: np.ndarray | None = None,
    ) -> list[dict[str, float]]:
        """``scores`` of many questions against one registry, encoded in one batch (or
        ``vectors``: their ``encode_questions``, made once for many registries)."""
        domain = domain or registry_domain(registry)
        index = self._index(registry, domain, context)
        rows = self._logits([clean(q) for q in questions], index, vectors)
        return [
            {bid: round(float(v), 4) for bid, v in zip(index.ids, logits, strict=True)}
            for logits in rows
        ]

    def judge(
        self,
        question: str,
        registry: Sequence[RegistryBlocker],
        domain: str | None = None,
        context: str = "",
    ) -> Verdict:
        """The verdict for ``question`` (``domain``: the task's, inferred from the blockers'
        types when not given; ``context``: the task's own text)."""
        reason = reject_reason(question)
        if reason is not None:
            return Verdict(None, f"rule: {reason}", {})
        if not registry:
            return Verdict(None, "the registry has no blockers", {})
        return self._judge(question, registry, domain or registry_domain(registry), context)

    def judge_many(
        self,
        items: list[tuple[str, Sequence[RegistryBlocker]]],
        domain: str | None = None,
        context: str = "",
    ) -> list[Verdict]:
        """Verdicts for (question, registry) pairs, all of one domain and task text when
        given."""
        return [self.judge(q, registry, domain=domain, context=context) for q, registry in items]

    def _judge(
        self, question: str, registry: Sequence[RegistryBlocker], domain: str, context: str
    ) -> Verdict:
        import numpy as np

        index = self._index(registry, domain, context)
        threshold = self.model.thresholds.get(domain, max(self.model.thresholds.values()))
        if not names_task(question, index.terms):
            return Verdict(
                None, "vague: names nothing of the task (no term of its blockers or its text)", {}
            )
        copied = task_text_reason(question, index.text)
        if copied is not None:
            return Verdict(None, f"task text: {copied}", {})
        parts = question_parts(question)
        topical = [p for p in parts if names_task(p, index.terms)] if len(parts) > 1 else []
        stray = [p for p in parts if len(parts) > 1 and p not in topical and not follows_up(p)]
        if stray:
            return Verdict(None, f"multi-topic: also asks “{stray[0][:120]}”", {})
        logits = self._logits([clean(question), *(topical if len(topical) > 1 else [])], index)
        scores = {bid: round(float(v), 4) for bid, v in zip(index.ids, logits[0], strict=True)}
        targeted = {index.ids[int(np.argmax(row))] for row in logits[1:]}
        if len(targeted) > 1:
            return Verdict(
                None, f"multi-topic: asks about {', '.join(sorted(targeted))} at once", scores
            )
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        best_id, best = ranked[0]
        if best < threshold:
            return Verdict(None, f"best {best_id} {best:.2f} < threshold {threshold:.2f}", scores)
        return Verdict(best_id, f"{best_id} {best:.2f} ≥ threshold {threshold:.2f}", scores)


__all__ = [
    "EmbeddedJudge",
    "load_registry",
    "registry_domain",
    "registry_from_json",
    "registry_key",
]
