"""Embeddings of registry texts kept in the database, shared by every process.

A task's judge index needs the embedding of each trigger question, description and task-text
sentence. Encoding them is most of the cost of an index (a few hundred milliseconds for a
task); kept here, any web or worker process builds the index from one query. The texts are
filled when a registry is saved (``judge.services.judge_index_prepare``); a text not found is
encoded and stored. Questions are not stored: each is encoded once per verdict, and the
verdict itself is cached (``JudgeCacheEntry``).
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import TYPE_CHECKING

from django.db import DatabaseError, transaction

from .encoder import DIMENSION, MODEL_ID, get_encoder
from .models import JudgeEmbedding

if TYPE_CHECKING:
    import numpy as np


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def stored_encode(texts: list[str]) -> np.ndarray:
    """Normalised embeddings of ``texts`` (one row each, in order): from the store, the rest
    encoded and stored. A database that cannot be read or written only costs the encoding."""
    import numpy as np

    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    digests = [_digest(t) for t in texts]
    found: dict[str, np.ndarray] = {}
    try:
        for digest, vector in JudgeEmbedding.objects.filter(
            model=MODEL_ID, digest__in=set(digests)
        ).values_list("digest", "vector"):
            found[digest] = np.frombuffer(bytes(vector), dtype=np.float32)
    except DatabaseError:
        found = {}
    missing = sorted({d: t for d, t in zip(digests, texts, strict=True) if d not in found}.items())
    if missing:
        vectors = get_encoder().encode([t for _, t in missing])
        rows = []
        for (digest, _), vector in zip(missing, vectors, strict=True):
            found[digest] = vector
            rows.append(JudgeEmbedding(model=MODEL_ID, digest=digest, vector=vector.tobytes()))
        # In a savepoint: a failed write must not break the caller's transaction. The next
        # index then pays the encoding again; nothing is lost.
        with contextlib.suppress(DatabaseError), transaction.atomic():
            JudgeEmbedding.objects.bulk_create(rows, ignore_conflicts=True)
    return np.stack([found[d] for d in digests]).astype(np.float32)
